"""A transport wrapper that keeps every frame the other side wrote: the raw stream-json dicts a tracker fed raw
frames would see, before the SDK's parser drops or reshapes anything. Private to :mod:`ctxsim.lab`."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

from claude_agent_sdk import Transport

__all__ = ["FrameEdit", "FrameTap"]


FrameEdit = Callable[[dict[str, Any]], dict[str, Any]]
"""Changes a frame before the SDK reads it (the fidelity self-checks plant divergences with one)."""


class FrameTap(Transport):
    """Delegates everything to ``inner``; :attr:`frames` holds every dict ``inner`` read, in order, after
    ``edit`` (if given) changed it."""

    def __init__(self, inner: Transport, edit: FrameEdit | None = None) -> None:
        self.inner = inner
        self.edit = edit
        self.frames: list[dict[str, Any]] = []

    async def connect(self) -> None:
        await self.inner.connect()

    async def write(self, data: str) -> None:
        await self.inner.write(data)

    async def read_messages(self) -> AsyncIterator[dict[str, Any]]:
        async for read in self.inner.read_messages():
            frame = self.edit(read) if self.edit is not None else read
            self.frames.append(frame)
            yield frame

    async def close(self) -> None:
        await self.inner.close()

    def is_ready(self) -> bool:
        return self.inner.is_ready()

    async def end_input(self) -> None:
        await self.inner.end_input()
