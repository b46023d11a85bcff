"""A small REST API that keeps its items in memory (standard library only)."""

import json
import os
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ITEMS = [
    {"id": 1, "name": "alpha"},
    {"id": 2, "name": os.environ.get("ITEM_NAME", "bravo")},
    {"id": 3, "name": "charlie"},
]


class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path != "/items":
            self.send_error(404)
            return
        body = json.dumps(ITEMS).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


ThreadingHTTPServer(("0.0.0.0", 5000), Handler).serve_forever()
