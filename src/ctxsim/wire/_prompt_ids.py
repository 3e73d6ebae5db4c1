"""The ``prompt_id`` of a query: the id the statusline payload carries and the REPL's transcript rows join on.

Claude Code gives each typed prompt, and ``/compact``, a prompt id; the statusline payload sends it as
``prompt_id`` and the transcript writes it as ``promptId`` on that prompt's user row (for ``/compact``: on the
summary row and the command's rows), which is how a tool joins a payload to its rows. ``/clear`` and the other
local commands get none; a background subagent's notification opens a turn with a prompt id of its own, which the
payloads after it carry. Recorded in the REPL of every recorded release.
"""

from __future__ import annotations

import random
import uuid

from ..world import Session

__all__ = ["gets_prompt_id", "notification_prompt_id", "prompt_id"]


def gets_prompt_id(prompt: str) -> bool:
    """Whether a query of ``prompt`` gets a prompt id of its own: a prompt, ``/compact`` or ``/model``."""
    return not prompt.startswith("/") or prompt.split()[0] in ("/compact", "/model")


def prompt_id(session: Session, query_index: int) -> str:
    """The prompt id of query ``query_index`` (0-based) of ``session``: a uuid4 drawn from the session's seed and
    id and the query's place, so every format that renders the session writes the same one."""
    rng = random.Random(f"ctxsim.wire.prompt_id:{session.seed}:{session.session_id}:{query_index}")
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def notification_prompt_id(session: Session, task_id: str) -> str:
    """The prompt id of the turn the notification of background task ``task_id`` opens in ``session``: drawn as
    :func:`prompt_id` draws, from the task's id."""
    rng = random.Random(f"ctxsim.wire.prompt_id:{session.seed}:{session.session_id}:task:{task_id}")
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))
