#!/bin/bash
# Oracle: write the server, start it in the background and return while it keeps running (the verifier
# runs in the same container afterwards and talks to it on port 8787).
set -euo pipefail

cat > /app/kv_server.py <<'PY'
import json
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

STORE = {key: str(value) for key, value in json.load(open("/app/seed.json")).items()}


class Handler(BaseHTTPRequestHandler):
    def _send(self, status, body):
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path == "/health":
            self._send(200, "ok")
        elif self.path.startswith("/kv/") and self.path[4:] in STORE:
            self._send(200, STORE[self.path[4:]])
        else:
            self._send(404, "not found")

    def do_PUT(self):
        if not self.path.startswith("/kv/"):
            self._send(404, "not found")
            return
        length = int(self.headers.get("Content-Length", 0))
        STORE[self.path[4:]] = self.rfile.read(length).decode()
        self._send(200, "stored")


ThreadingHTTPServer(("0.0.0.0", 8787), Handler).serve_forever()
PY

# setsid + nohup: the server must outlive this script and the shell that ran it.
setsid nohup python3 /app/kv_server.py > /app/kv_server.log 2>&1 < /dev/null &

for _ in $(seq 50); do
    if python3 -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8787/health', timeout=1)" 2>/dev/null; then
        echo "kv server is up on :8787"
        exit 0
    fi
    sleep 0.1
done
echo "kv server did not come up" >&2
cat /app/kv_server.log >&2
exit 1
