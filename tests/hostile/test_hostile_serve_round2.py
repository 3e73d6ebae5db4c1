"""The fake Messages API (what ``ctxsim serve`` runs) against a hostile client: the key checked first on every
route (a 200 MB body without it answered 401 before 10 MB is sent), a body over the limit 413, malformed, deep and
non-UTF-8 JSON a 400 with one ``ctxsim:`` line (never a 5xx), the port reusable at once, and bounded options."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from _tally import Tally

from ctxsim.live import FakeMessagesAPI

BIG = 200 * 1024 * 1024


def _raw(api: FakeMessagesAPI, head: bytes, body: bytes = b"", *, send_more: int = 0) -> tuple[bytes, int]:
    """Send ``head`` and ``body`` (then up to ``send_more`` bytes more, stopping once answered); returns the
    answer and the bytes of body sent."""
    sent = 0
    with socket.create_connection(("127.0.0.1", api.port), timeout=5) as sock:
        sock.sendall(head + body)
        sent += len(body)
        sock.settimeout(0.05)
        answer = b""
        chunk = b"x" * 65536
        while sent < send_more:
            with contextlib.suppress(TimeoutError):
                answer += sock.recv(65536)
            if answer:
                break
            try:
                sock.sendall(chunk)
            except OSError:
                break
            sent += len(chunk)
        sock.settimeout(5)
        while b"\r\n\r\n" not in answer:
            more = sock.recv(65536)
            if not more:
                break
            answer += more
        head_end = answer.find(b"\r\n\r\n")
        length = next((int(line.split(b":")[1]) for line in answer[:head_end].split(b"\r\n")
                       if line.lower().startswith(b"content-length:")), 0)
        while len(answer) < head_end + 4 + length:
            more = sock.recv(65536)
            if not more:
                break
            answer += more
    return answer, sent


def _post(api: FakeMessagesAPI, body: bytes, *, key: str | None = None, path: str = "/v1/messages",
          length: int | None = None) -> bytes:
    head = (f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body) if length is None else length}\r\nConnection: close\r\n"
            + (f"x-api-key: {key}\r\n" if key is not None else "") + "\r\n").encode()
    return _raw(api, head, body)[0]


def test_a_200_mb_body_without_the_key_is_refused_before_10_mb_is_read(hostile: Tally) -> None:
    with FakeMessagesAPI() as api:
        head = (f"POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {BIG}\r\n\r\n").encode()
        answer, sent = _raw(api, head, send_more=10 * 1024 * 1024)
    hostile.case("a 200 MB body without the key")
    assert answer.startswith(b"HTTP/1.1 401"), answer[:200]
    assert sent < 10 * 1024 * 1024, sent


@pytest.mark.parametrize("case,body,status", [
    ("not JSON", b"{not json", 400),
    ("deep JSON", b"[" * 200_000 + b"]" * 200_000, 400),
    ("not UTF-8", b'{"messages": "\xff\xfe"}', 400),
    ("a JSON list", b"[1, 2]", 400),
    ("fields of the wrong type", b'{"messages": 5, "system": 7, "tools": "x"}', 400),
])
@pytest.mark.parametrize("path", ["/v1/messages", "/v1/messages/count_tokens"])
def test_a_malformed_body_is_a_4xx_with_one_line(hostile: Tally, case: str, body: bytes, status: int,
                                                 path: str) -> None:
    with FakeMessagesAPI() as api:
        answer = _post(api, body, key=api.key, path=path)
    assert answer.startswith(f"HTTP/1.1 {status}".encode()), answer[:300]
    message = json.loads(answer.partition(b"\r\n\r\n")[2])["error"]["message"]
    hostile.line(f"{case} to {path}", message, "ctxsim: *")


def test_a_body_over_the_limit_with_the_key_is_413(hostile: Tally) -> None:
    with FakeMessagesAPI() as api:
        answer = _post(api, b"{}", key=api.key, length=BIG)
    hostile.case("a 200 MB body with the key")
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]


@pytest.mark.parametrize("key", ["", "wrong", "{key}x", "x{key}", "{key}\u00e9"])
def test_every_route_wants_the_exact_key(hostile: Tally, key: str) -> None:
    with FakeMessagesAPI() as api:
        given = key.format(key=api.key)
        for path in ("/v1/messages", "/v1/messages/count_tokens", "/ctxsim/truth", "/anything"):
            head = (f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n").encode()
            head += b"x-api-key: " + given.encode() + b"\r\n\r\n"
            answer = _raw(api, head)[0]
            hostile.case(f"the key {key!r} at {path}")
            assert answer.startswith(b"HTTP/1.1 401"), (path, answer[:200])


@pytest.mark.parametrize(("case", "given", "status"), [
    ("a trailing space", "{key} ", b"404"), ("a trailing tab", "{key}\t", b"404"),
    ("a leading space", " {key}", b"404"),
    ("a trailing non-breaking space", "{key}\u00a0", b"401"), ("a space inside", "{head} {tail}", b"401"),
    ("a trailing space and one more character", "{key} x", b"401")])
def test_a_key_with_spaces_around_it_on_the_wire_is_the_key_and_with_anything_else_is_not(
        hostile: Tally, case: str, given: str, status: bytes) -> None:
    """Spaces and tabs around a header's value are not part of it (RFC 9110, section 5.5): the key sent with a
    trailing space is the key (past the check: ``/anything`` is a 404); a non-breaking space, or a space within, is
    another key (401)."""
    with FakeMessagesAPI() as api:
        sent = given.format(key=api.key, head=api.key[:8], tail=api.key[8:])
        head = b"GET /anything HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nx-api-key: " + sent.encode()
        answer = _raw(api, head + b"\r\n\r\n")[0]
    hostile.case(f"the key with {case}")
    assert answer.startswith(b"HTTP/1.1 " + status), (case, answer[:200])


def test_the_port_is_reusable_at_once_after_the_server_closed_its_connections(hostile: Tally) -> None:
    first = FakeMessagesAPI().start()
    port = first.port
    _post(first, b"{}", key=first.key, path="/v1/messages/count_tokens")
    first.stop()  # the server closed the connection: its side waits in TIME_WAIT
    second = FakeMessagesAPI(port=port).start()
    second.stop()
    hostile.case("the port reused at once")


@pytest.mark.parametrize("argv,expected", [
    (["--timeout", "inf"], "ctxsim: serve: --timeout must be seconds in (0, 604800], not inf"),
    (["--timeout", "nan"], "ctxsim: serve: --timeout must be seconds in (0, 604800], not nan"),
    (["--judge", "/dev/zero"], "ctxsim: serve: --judge /dev/zero is not a regular file*"),
    (["--judge", "{fifo}"], "ctxsim: serve: --judge */fifo is not a regular file*"),
])
def test_bounded_options(hostile: Tally, tmp_path: Path, argv: list[str], expected: str) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    argv = [a.format(fifo=fifo) for a in argv]
    done = subprocess.run([sys.executable, "-m", "ctxsim.cli", "serve", "b01-no-dedupe-without-request-id", *argv],
                          capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert done.returncode == 2, done.stderr
    hostile.line(" ".join(argv), done.stderr, expected)


FLOOD = '''
import resource, socket, sys
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
port, n = int(sys.argv[1]), int(sys.argv[2])
socks = []
for i in range(n):
    try:
        s = socket.socket()
        s.setblocking(False)
        s.connect_ex(("127.0.0.1", port))
        socks.append(s)
    except OSError:
        break
print(len(socks), flush=True)
sys.stdin.readline()
for s in socks:
    s.close()
print("closed", flush=True)
'''


def _limit(descriptors: int | None) -> Any:
    def limit() -> None:
        if descriptors is not None:
            import resource

            resource.setrlimit(resource.RLIMIT_NOFILE, (descriptors, descriptors))

    return limit


@pytest.mark.parametrize("connections,descriptors", [
    pytest.param(1_400, 1024, id="1400 idle connections under ulimit -n 1024"),
    pytest.param(20_000, None, id="20000 idle connections", marks=pytest.mark.slow),
])
def test_a_flood_of_idle_connections_released_at_once_then_a_good_client_is_served_within_1_s(
        hostile: Tally, tmp_path: Path, connections: int, descriptors: int | None) -> None:
    case = f"{connections} idle connections released at once"
    (tmp_path / "flood.py").write_text(FLOOD)
    errors = (tmp_path / "stderr").open("w")  # a file, not a pipe: a full pipe would stop a chatty server
    serve = subprocess.Popen([sys.executable, "-m", "ctxsim.cli", "serve", "b01-no-dedupe-without-request-id", "--json",
                              "--timeout", "600"], stdout=subprocess.PIPE, stderr=errors, text=True,
                             preexec_fn=_limit(descriptors))
    floods: list[subprocess.Popen[str]] = []
    try:
        assert serve.stdout is not None
        settings = json.loads(serve.stdout.readline())
        url, key = settings["truth_url"], settings["env"]["ANTHROPIC_API_KEY"]
        port = int(url.split(":")[2].split("/")[0])
        each = min(connections, 10_000)
        floods = [subprocess.Popen([sys.executable, str(tmp_path / "flood.py"), str(port), str(each)],
                                   stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
                  for _ in range(connections // each)]
        opened = sum(int(f.stdout.readline()) for f in floods if f.stdout is not None)
        assert opened >= connections * 0.95, opened
        for flood in floods:
            assert flood.stdin is not None and flood.stdout is not None
            flood.stdin.write("\n")
            flood.stdin.flush()
            assert flood.stdout.readline().strip() == "closed"
        started = time.monotonic()
        status = None
        while status is None and time.monotonic() - started < 5:  # a client retrying a reset, as the CLI does
            try:
                request = urllib.request.Request(url, headers={"x-api-key": key})
                with urllib.request.urlopen(request, timeout=5) as answer:
                    status = answer.status
            except ConnectionResetError:
                time.sleep(0.02)
        assert status == 200
        hostile.hang(case, time.monotonic() - started, 1)
    finally:
        for flood in floods:
            flood.kill()
            flood.wait()
        serve.terminate()
        serve.communicate(timeout=60)
        errors.close()
    err = (tmp_path / "stderr").read_text()
    hostile.case(case)
    assert "Traceback" not in err, err[-3000:]
