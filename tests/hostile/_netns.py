"""A loopback-only network namespace with a trap: what the block tests run in (Linux, ``unshare -rnm``)."""

from __future__ import annotations

import shutil
import subprocess
import sys

TRAP_SCRIPT = '''
import selectors, socket, sys
out = open(sys.argv[1], "a", buffering=1)
sel = selectors.DefaultSelector()
for port in (53, 80, 443, 8080, 8443):
    tcp = socket.socket(); tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    tcp.bind(("0.0.0.0", port)); tcp.listen(); sel.register(tcp, selectors.EVENT_READ, "tcp")
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); udp.bind(("0.0.0.0", port))
    sel.register(udp, selectors.EVENT_READ, "udp")
print("ready", flush=True)
while True:
    for key, _ in sel.select():
        if key.data == "tcp":
            conn, peer = key.fileobj.accept(); out.write(f"tcp {key.fileobj.getsockname()[1]} from {peer}\\n")
            conn.close()
        else:
            data, peer = key.fileobj.recvfrom(4096); out.write(f"udp {key.fileobj.getsockname()[1]} from {peer}\\n")
'''


def namespaces() -> str | None:
    """Why a loopback-only network namespace cannot be made here (None: it can)."""
    if not sys.platform.startswith("linux") or shutil.which("unshare") is None or shutil.which("ip") is None:
        return "needs Linux with unshare(1) and ip(8)"
    probe = subprocess.run(["unshare", "-rnm", "sh", "-c", "ip link set lo up && ip addr add 192.0.2.1/32 dev lo"],
                           capture_output=True, text=True, timeout=30)
    if probe.returncode != 0:
        return f"unshare -rnm cannot make a network namespace here ({probe.stderr.strip()[:200]})"
    return None


