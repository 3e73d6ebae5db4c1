"""``--ctx-block-real``'s Node preload, every way a Node child reaches beyond this machine: ``dns.resolve*`` (the
module's, ``dns.promises``' and a ``Resolver``'s), ``dns.reverse``, a DNS server set by ``setServers``, ``dgram``
(``send`` and ``connect``), ``tls.connect``, ``http2.connect``, ``fetch``, and a plain socket from a worker thread
and from a grandchild process. Each is refused in the child with the guard's one line, and reported to the test's
refuser; nothing is sent (the addresses are TEST-NET-1's and names under ``.invalid``)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import threading
from collections.abc import Iterator

import pytest
from _tally import Tally

from ctxsim.plugin._inherit import inherited

pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="ctxsim: node is not on PATH")

TRAP = "192.0.2.1"
NAME = "ctxsim-trap.invalid"

PRINT = "(e) => console.log('ERROR ' + (e && e.message))"
"""A callback (or ``catch``) that prints the error the guard gave."""

WAYS = {
    "dns.resolve4": (f"require('dns').resolve4('{NAME}', {PRINT})", f"look up {NAME}"),
    "dns.resolve": (f"require('dns').resolve('{NAME}', 'MX', {PRINT})", f"look up {NAME}"),
    "dns.resolveTxt": (f"require('dns').resolveTxt('{NAME}', {PRINT})", f"look up {NAME}"),
    "dns.reverse": (f"require('dns').reverse('{TRAP}', {PRINT})", f"look up {TRAP}"),
    "dns.lookupService": (f"require('dns').lookupService('{TRAP}', 443, {PRINT})", f"look up {TRAP}"),
    "dns.promises.resolve4": (f"require('dns').promises.resolve4('{NAME}').catch({PRINT})", f"look up {NAME}"),
    "dns.promises.lookup": (f"require('dns').promises.lookup('{NAME}').catch({PRINT})", f"look up {NAME}"),
    "dns/promises module": (f"require('dns/promises').resolveAny('{NAME}').catch({PRINT})", f"look up {NAME}"),
    "new dns.Resolver": (f"new (require('dns').Resolver)().resolve6('{NAME}', {PRINT})", f"look up {NAME}"),
    "new dns.promises.Resolver": (f"new (require('dns').promises.Resolver)().resolveNs('{NAME}').catch({PRINT})",
                                  f"look up {NAME}"),
    "Resolver.setServers": (f"try {{ new (require('dns').Resolver)().setServers(['{TRAP}']) }} catch (e) {{ "
                            f"({PRINT})(e) }}", f"use the DNS server {TRAP}"),
    "dgram.send": (f"try {{ require('dgram').createSocket('udp4').send('x', 53, '{TRAP}') }} catch (e) {{ "
                   f"({PRINT})(e) }}", f"send a datagram to {TRAP}"),
    "dgram.connect": (f"try {{ require('dgram').createSocket('udp4').connect(53, '{TRAP}') }} catch (e) {{ "
                      f"({PRINT})(e) }}", f"connect a datagram socket to {TRAP}:53"),
    "tls.connect": (f"require('tls').connect(443, '{TRAP}').on('error', {PRINT})",
                    f"open a connection to {TRAP}:443"),
    "http2.connect": (f"require('http2').connect('https://{TRAP}:8443').on('error', {PRINT})",
                      f"open a connection to {TRAP}:8443"),
    "https.get": (f"require('https').get('https://{TRAP}/').on('error', {PRINT})", f"open a connection to {TRAP}:443"),
    "a worker thread": ("new (require('worker_threads').Worker)(`require('net').connect(443, '" + TRAP + "')"
                        f".on('error', {PRINT})`, {{eval: true}})", f"open a connection to {TRAP}:443"),
    "a grandchild process": ("require('child_process').spawnSync('node', ['-e', `require('net').connect(443, '"
                             + TRAP + f"').on('error', {PRINT})`], {{stdio: 'inherit'}})",
                             f"open a connection to {TRAP}:443"),
}
"""Each way out, as a ``node -e`` script, and what the guard's line says it did."""


@pytest.fixture
def refuser() -> Iterator[tuple[tuple[str, int], list[bytes]]]:
    """A listener standing in for the guard's refuser: its address, and what each connection to it sent."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    listener.settimeout(0.2)
    reports: list[bytes] = []
    done = threading.Event()

    def serve() -> None:
        while not done.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            with conn:
                conn.settimeout(5)
                chunks = []
                while True:
                    try:
                        chunk = conn.recv(65536)
                    except OSError:
                        break
                    if not chunk:
                        break
                    chunks.append(chunk)
                reports.append(b"".join(chunks))

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield ("127.0.0.1", listener.getsockname()[1]), reports
    finally:
        done.set()
        thread.join(5)
        listener.close()


@pytest.mark.parametrize("way", list(WAYS))
def test_a_node_child_is_refused_every_way_out(hostile: Tally, way: str,
                                               refuser: tuple[tuple[str, int], list[bytes]]) -> None:
    script, did = WAYS[way]
    address, reports = refuser
    env = {**os.environ, **inherited(os.environ, "test_x.py::test_node", address)}
    done = subprocess.run(["node", "-e", script], env=env, capture_output=True, text=True, timeout=30)
    errors = "\n".join(line for line in done.stdout.splitlines() if line.startswith("ERROR "))
    hostile.line(f"a Node child's {way}", errors, f"ERROR ctxsim: --ctx-block-real: test_x.py::test_node had a "
                                                  f"child process (node, pid *) {did}: only 127.0.0.1 is allowed")
    for _ in range(50):  # the report is sent as the error is made; the listener may take it a moment later
        if reports:
            break
        threading.Event().wait(0.05)
    assert any(f"{did}: only 127.0.0.1 is allowed".encode() in r for r in reports), reports


def test_a_node_child_still_reaches_this_machine(refuser: tuple[tuple[str, int], list[bytes]]) -> None:
    """The guard refuses only what leaves the machine: a connection to 127.0.0.1 and a lookup of localhost pass."""
    address, reports = refuser
    env = {**os.environ, **inherited(os.environ, "test_x.py::test_node", address)}
    script = (f"const s = require('net').connect({address[1]}, '127.0.0.1', () => {{ s.end('hello'); "
              f"require('dns').lookup('localhost', (e, a) => console.log('LOOKUP ' + (e ? e.message : a))) }})")
    done = subprocess.run(["node", "-e", script], env=env, capture_output=True, text=True, timeout=30)
    assert "LOOKUP 127.0.0.1" in done.stdout or "LOOKUP ::1" in done.stdout, done.stdout + done.stderr
    for _ in range(50):
        if reports:
            break
        threading.Event().wait(0.05)
    assert reports == [b"hello"]
