"""The fake Messages API against other processes on this machine: a request without the server's own credential is
answered 401 and takes nothing from the script; a request the script does not have voids the live run, it never
shifts it."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from typing import Any

import anyio
import pytest
from _tally import Tally

from ctxsim.check import Report
from ctxsim.live import FakeMessagesAPI, Reply, Served
from ctxsim.reference import ContextTracker
from ctxsim.world import SessionBuilder, Text

BODY = {"model": "claude-sonnet-4-5", "max_tokens": 100, "stream": False,
        "tools": [{"name": "Bash", "input_schema": {"type": "object"}}],
        "messages": [{"role": "user", "content": [{"type": "text", "text": "rogue"}]}]}


def _post(api: FakeMessagesAPI, path: str, headers: dict[str, str]) -> int:
    request = urllib.request.Request(api.base_url + path, json.dumps(BODY).encode(), method="POST",
                                     headers={"content-type": "application/json", **headers})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return int(response.status)
    except urllib.error.HTTPError as error:
        return int(error.code)


def test_a_request_without_the_servers_credential_is_401_and_takes_nothing(hostile: Tally) -> None:
    with FakeMessagesAPI() as api:
        api.model.main.append(Reply((Text("scripted"),)))
        cases = [("no credential", {}), ("another key", {"x-api-key": "sk-ant-ctxsim-fake-0000"}),
                 ("a bearer of another key", {"authorization": "Bearer sk-ant-api03-other"}),
                 ("the key with a suffix", {"x-api-key": api.key + "x"})]
        for case, headers in cases:
            for path in ("/v1/messages", "/v1/messages/count_tokens", "/v1/models"):
                hostile.case(f"{case}: POST {path}")
                assert _post(api, path, headers) == 401, (case, path)
        assert len(api.rejected) == 12 and not api.served and api.count_tokens_calls == 0
        assert len(api.model.main) == 1  # the script is untouched
        assert _post(api, "/v1/messages", {"x-api-key": api.key}) == 200
        assert _post(api, "/v1/messages", {"authorization": f"Bearer {api.key}"}) == 200
        assert not api.model.main and api.served[0].reply.blocks == (Text("scripted"),)
    assert FakeMessagesAPI().key != FakeMessagesAPI().key  # one credential a server


@pytest.mark.live
@pytest.mark.parametrize("rogue", ["without the credential", "with the credential"])
def test_a_request_from_another_process_never_shifts_a_live_run(hostile: Tally, monkeypatch: pytest.MonkeyPatch,
                                                                rogue: str) -> None:
    """A request with tools arrives from elsewhere while the CLI waits for its first answer. Without the credential
    it is refused and the run is judged in full; with it (a process that stole the key) it would take the CLI's
    next reply: the run is void, saying why, instead of judging fewer points."""
    from ctxsim.live import _scenarios

    case = f"a rogue request {rogue}"
    hostile.case(case)
    builder = SessionBuilder(seed=5).query("list the files")
    builder.call(input=3, cache_creation=2_000, cache_read=10_000, blocks=("tool_use",), results=(300,))
    builder.call(input=3, cache_creation=400, cache_read=12_000)
    session = builder.build()
    statuses: list[int] = []
    fired: list[bool] = []
    real = _scenarios.LiveClaude

    def hooked(*args: Any, **kwargs: Any) -> Any:
        live = real(*args, **kwargs)

        async def hold(served: Served) -> None:
            if not fired:  # once, at the CLI's first request (the rogue one is held here too, and passes)
                fired.append(True)
                headers = {"x-api-key": live.api.key} if rogue == "with the credential" else {}
                done = threading.Event()

                def send() -> None:
                    statuses.append(_post(live.api, "/v1/messages", headers))
                    done.set()

                threading.Thread(target=send, daemon=True).start()
                with anyio.fail_after(10):
                    while not done.is_set():
                        await anyio.sleep(0.01)

        live.api.hold = hold
        return live

    monkeypatch.setattr(_scenarios, "LiveClaude", hooked)
    report: Report = anyio.run(lambda: _scenarios.arun_tracker_live(ContextTracker(), session, timeout=60))
    if rogue == "without the credential":
        assert statuses == [401]
        assert report.crash is None and report.ok, report.summary()
        assert len(report.points) == 3  # both calls and the result: nothing shifted
    else:
        assert statuses == [200]
        assert report.crash is not None and "the run is void" in report.crash, report.summary()
