"""A scenario's ``world``: the model, the window and Claude Code's settings a session runs in, read into a
:class:`~ctxsim.world.SessionBuilder`, and which of them apply to a recorded stream."""

from __future__ import annotations

from typing import get_args

from ...world import SUBAGENT_WINDOW_MIN, ClaudeSettings, Entrypoint, Quantity, SessionBuilder
from .._yaml import Map, Reader

__all__ = ["RECORDING_WORLD", "refuse_world_keys", "world_builder"]


def world_builder(r: Reader, world: Map, name: str) -> SessionBuilder:
    """A :class:`SessionBuilder` for the scenario ``world`` mapping (its model, window, settings and knobs)."""
    model = r.get(world, "model", "world", r.string, SessionBuilder.model)
    narrow = r.get(world, "disable_1m_context", "world", r.boolean, False)
    window = r.get(world, "window", "world", r.positive, 0)  # 0: the model's, as the builder gives it
    settings = ClaudeSettings(
        auto_compact=r.get(world, "auto_compact", "world", r.boolean, True),
        pct_override=r.get(world, "autocompact_pct_override", "world",
                           lambda v, ln, p: r.integer(v, ln, p, minimum=1, maximum=100), None),
        max_context_tokens=r.get(world, "max_context_tokens", "world", r.positive, None),
        disable_1m_context=narrow,
        subagent_compact_window=r.get(world, "subagent_compact_window", "world",
                                      lambda v, ln, p: r.integer(v, ln, p, minimum=SUBAGENT_WINDOW_MIN), None),
        idle_compaction=r.get(world, "idle_compaction", "world", r.boolean, True),
        idle_compact_min_tokens=r.get(world, "idle_compact_min_tokens", "world", r.positive, None),
    )
    builder = SessionBuilder(
        seed=r.get(world, "seed", "world", lambda v, ln, p: r.integer(v, ln, p, minimum=None), 0),
        model=model,
        window=window,
        auto_compact_window=r.get(world, "auto_compact_window", "world", r.positive, None),
        entrypoint=r.get(world, "entrypoint", "world", r.choice(get_args(Entrypoint)), "sdk"),
        quantity=r.get(world, "quantity", "world", r.choice(get_args(Quantity)), "tokens"),
        baseline=r.get(world, "baseline", "world", r.count, SessionBuilder.baseline),
        max_output_tokens=r.get(world, "max_output", "world", r.positive, SessionBuilder.max_output_tokens),
        name=name,
        usage=r.get(world, "usage", "world", r.choice(("additive", "inclusive")), "additive"),
        settings=settings,
        cli=r.get(world, "cli", "world", lambda v, ln, p: _release(r, v, ln, p), None),
    )
    window = builder.window
    if builder.baseline > window:
        if "baseline" in world:
            raise r.error(world.value_lines["baseline"], "world.baseline",
                          f"a baseline of {builder.baseline:,} tokens exceeds the window ({window:,})")
        raise r.error(world.value_lines["window"], "world.window",
                      f"a window of {window:,} tokens is smaller than the default baseline "
                      f"({builder.baseline:,}); give world.baseline too")
    return builder


def _release(r: Reader, value: object, line: int, path: str) -> str:
    """``world.cli``: a Claude Code version or a range of them that a recorded release falls in."""
    from ...wire import resolve_cli

    text = r.string(value, line, path).strip()
    try:
        resolve_cli(text)
    except ValueError as exc:
        raise r.error(line, path, str(exc).removeprefix("ctxsim: ")) from None
    return text


RECORDING_WORLD = {
    "window": "applies: the window the truth is judged against",
    "usage": "applies: how the recording's usage is read (the truth, and what the reference is told)",
    "seed": "applies: the faults draw from it",
    "model": "a recording carries its own model",
    "baseline": "a recording's calls state the system prompt and tools they carried",
    "max_output": "it sets where a simulated session auto-compacts; a recording compacts where it did",
    "quantity": "applies: what the gauge under test must show",
    "disable_1m_context": "it sets a simulated session's window; give world.window for a recording",
    "auto_compact_window": "it sets where a simulated session auto-compacts; a recording compacts where it did",
    "entrypoint": "a recording's transcript has the shape it was recorded in",
    "cli": "applies: the release whose statusline payload and rules the truth is judged by",
    "auto_compact": "it sets whether a simulated session auto-compacts; a recording compacts where it did",
    "autocompact_pct_override": "it sets where a simulated session auto-compacts; a recording compacts where it did",
    "max_context_tokens": "it sets where a simulated session auto-compacts; a recording compacts where it did",
    "subagent_compact_window": "it sets where a simulated subagent compacts; a recording compacts where it did",
    "idle_compaction": "it sets whether a simulated session compacts while idle; a recording compacts where it did",
    "idle_compact_min_tokens": "it sets whether a simulated session compacts while idle; a recording compacts "
                               "where it did",
}
"""What each ``world`` key does to a recorded stream (``stream.file``): applies, or is refused saying why."""


def refuse_world_keys(r: Reader, world: Map) -> None:
    """A world key written in the file that cannot apply to a recording is an error naming it."""
    for key in world.key_lines:  # the file's own keys (defaults given to the loader have no key line)
        if not RECORDING_WORLD.get(key, "applies").startswith("applies"):
            raise r.error(world.key_lines[key], f"world.{key}", f"does not apply to a recorded stream "
                                                               f"(stream.file): {RECORDING_WORLD[key]}")
