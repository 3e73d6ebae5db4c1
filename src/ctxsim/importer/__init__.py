"""Claude Code transcripts and stream-json recordings turned into scenarios that can be shared (``ctxsim import``).

:func:`write_import` reads the recordings, scrubs every text (:class:`Scrubber`), checks that the scenario it writes
gives every catalogued tracker the verdict the recording gives, and writes it; :class:`ImportFailure` says why a
recording cannot be imported.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_face

if TYPE_CHECKING:
    from ._importer import (
        Imported as Imported,
        ImportFailure as ImportFailure,
        import_recordings as import_recordings,
        write_import as write_import,
    )
    from ._scrub import Scrubber as Scrubber

__getattr__, __dir__ = lazy_face(globals())
