"""Another host on this machine, for tests: a network namespace joined to this one by a veth pair.

Packets from this machine to the far address go over the veth pair; from a container on Docker's
internal network they would have to be forwarded, which that network never does. Needs root and
iproute2; callers check that and decide whether to skip or fail.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass

# Run in an agent's container: `python3 probe.py ALLOWED_URL OTHER_URL` prints what each GET through the
# proxy gave (status or error) and whether a direct connection to OTHER's host:port got through.
PROBE = """\
import socket, sys, urllib.request, urllib.error
allowed, other = sys.argv[1], sys.argv[2]
def get(url):
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            return str(r.status)
    except urllib.error.HTTPError as e:
        return str(e.code)
    except Exception as e:
        return type(e).__name__
print("allowed", get(allowed))
print("other", get(other))
host, port = other.split("//")[1].split("/")[0].split(":")
s = socket.socket()
s.settimeout(3)
try:
    s.connect((host, int(port)))
    print("direct", "connected")
except OSError as e:
    print("direct", type(e).__name__)
"""


@dataclass(frozen=True, slots=True)
class FarHost:
    netns: str
    host_end: str
    far_end: str
    host_ip: str
    far_ip: str

    def create(self) -> None:
        """Make the namespace and the /30 link between it and this machine (removing leftovers first)."""
        self.remove()
        for argv in (
            ["ip", "netns", "add", self.netns],
            ["ip", "link", "add", self.host_end, "type", "veth", "peer", "name", self.far_end],
            ["ip", "link", "set", self.far_end, "netns", self.netns],
            ["ip", "addr", "add", f"{self.host_ip}/30", "dev", self.host_end],
            ["ip", "link", "set", self.host_end, "up"],
            ["ip", "netns", "exec", self.netns, "ip", "addr", "add", f"{self.far_ip}/30", "dev", self.far_end],
            ["ip", "netns", "exec", self.netns, "ip", "link", "set", self.far_end, "up"],
            ["ip", "netns", "exec", self.netns, "ip", "link", "set", "lo", "up"],
        ):
            subprocess.run(argv, capture_output=True, text=True, check=True, timeout=60)

    def remove(self) -> None:
        """Delete the namespace and the link; quiet when they do not exist."""
        subprocess.run(["ip", "netns", "del", self.netns], capture_output=True, check=False, timeout=60)
        subprocess.run(["ip", "link", "del", self.host_end], capture_output=True, check=False, timeout=60)
