"""The live backend: the real Claude Code CLI bundled in ``claude-agent-sdk``, against a fake Messages API.

:mod:`.api` is the fake Anthropic Messages API on 127.0.0.1; :mod:`.claude` the options and the lifecycle that run
the bundled CLI against it through the real ``ClaudeSDKClient``; :mod:`.conformance` the scripted sessions played
live and in-process and compared field by field; :mod:`.record` the captures written into the tests.
"""

from __future__ import annotations

from .api import ApiRequest, FakeMessagesAPI, Reply, ScriptedModel, Served, prompt_too_long

__all__ = ["ApiRequest", "FakeMessagesAPI", "Reply", "ScriptedModel", "Served", "prompt_too_long"]
