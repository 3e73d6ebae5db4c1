"""Writing a generated session (and its stream options and faults) as the text of a scenario file.

The text is what :mod:`ctxsim.scenario` reads: ``world``, ``stream``, ``faults`` and ``queries`` with one flow
mapping per step, every call with its exact ``in``/``cc``/``cr`` so the file rebuilds the same session.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["flow", "scenario_yaml", "task_yaml"]

_PLAIN = re.compile(r"[a-z_][a-z0-9_.-]*")
_RESERVED = frozenset({"null", "true", "false", "yes", "no", "on", "off", "y", "n"})
"""Words YAML 1.1 reads as something other than a string."""


def _scalar(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else json.dumps(str(value))
    if isinstance(value, str):
        return value if _PLAIN.fullmatch(value) and value.lower() not in _RESERVED else json.dumps(value)
    raise TypeError(f"ctxsim: cannot write {type(value).__name__} {value!r} into a scenario")


def flow(value: Any) -> str:
    """``value`` as a one-line YAML flow node: ``{in: 3, blocks: [text, tool_use]}``."""
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{k}: {flow(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(flow(v) for v in value) + "]"
    return _scalar(value)


def _step(step: Mapping[str, Any], indent: str) -> list[str]:
    ((kind, body),) = step.items()
    if kind != "subagent":
        return [f"{indent}- {kind}: {flow(body)}"]
    lines = [f"{indent}- subagent:"]
    for key, value in body.items():
        if key == "calls":
            lines.append(f"{indent}    calls:")
            lines.extend(f"{indent}      - {flow(call)}" for call in value)
        else:
            lines.append(f"{indent}    {key}: {flow(value)}")
    return lines


def scenario_yaml(*, name: str, source: str, world: Mapping[str, Any], queries: Sequence[Mapping[str, Any]],
                  partial: bool | None = None, faults: Sequence[Mapping[str, Any]] = (),
                  comment: str = "") -> str:
    """A scenario file's text: header keys, ``world``, ``stream`` (if ``partial`` is given), ``faults``, ``queries``.

    Each query is ``{"prompt": str, "steps": [{kind: body}, ...]}`` (and ``"model"`` where ``/model`` came
    before it); each fault ``{name: {param: value}}``.
    """
    lines = [f"# {line}" for line in comment.splitlines()]
    lines += [f"name: {_scalar(name)}", f"source: {json.dumps(source)}", f"world: {flow(world)}"]
    if partial is not None:
        lines.append(f"stream: {flow({'partial': partial})}")
    if faults:
        lines.append("faults:")
        lines.extend(f"  - {_fault(f)}" for f in faults)
    lines.append("queries:")
    for query in queries:
        lines.append(f"  - prompt: {json.dumps(query['prompt'])}")
        if query.get("model") is not None:
            lines.append(f"    model: {json.dumps(query['model'])}")
        steps = query.get("steps") or []
        if not steps:
            lines.append("    steps: []")
            continue
        lines.append("    steps:")
        for step in steps:
            lines.extend(_step(step, "      "))
    return "\n".join(lines) + "\n"


def task_yaml(*, name: str, source: str, world: Mapping[str, Any], task: Mapping[str, Any],
              expect: Mapping[str, Any], description: str = "", comment: str = "") -> str:
    """A task scenario file's text: header keys, ``world``, then ``task`` and ``expect`` with one line per key (each
    value a flow node), as :func:`ctxsim.scenario.parse_scenario` reads it."""
    lines = [f"# {line}".rstrip() for line in comment.splitlines()]
    lines += [f"name: {_scalar(name)}", f"source: {json.dumps(source)}"]
    if description:
        lines.append(f"description: {json.dumps(description)}")
    lines.append(f"world: {flow(world)}")
    for section, body in (("task", task), ("expect", expect)):
        lines.append(f"{section}:")
        lines.extend(f"  {key}: {flow(value)}" for key, value in body.items())
    return "\n".join(lines) + "\n"


def _fault(entry: Mapping[str, Any]) -> str:
    ((name, params),) = entry.items()
    return f"{name}: {flow(params)}" if params else str(name)
