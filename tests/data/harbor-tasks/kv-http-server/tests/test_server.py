"""Checks the key-value service the agent left running on port 8787 (standard library only)."""

import sys
import time
import urllib.error
import urllib.request

BASE = "http://127.0.0.1:8787"


def request(method, path, body=None):
    req = urllib.request.Request(BASE + path, data=body, method=method)
    try:
        with urllib.request.urlopen(req, timeout=3) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def wait_for_server():
    # A few retries only: the agent has finished, so the server is either up or not there at all.
    for _ in range(10):
        try:
            return request("GET", "/health")
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            time.sleep(0.3)
    return None


def main():
    health = wait_for_server()
    if health is None:
        print("FAIL: nothing answers on port 8787")
        return 1
    checks = [
        ("health", health == (200, "ok")),
        ("seeded key", request("GET", "/kv/planet") == (200, "neptune")),
        ("unknown key is 404", request("GET", "/kv/no-such-key")[0] == 404),
        ("put", request("PUT", "/kv/fruit", b"mango")[0] == 200),
        ("get after put", request("GET", "/kv/fruit") == (200, "mango")),
    ]
    for name, ok in checks:
        print(("PASS" if ok else "FAIL") + ": " + name)
    return 0 if all(ok for _, ok in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
