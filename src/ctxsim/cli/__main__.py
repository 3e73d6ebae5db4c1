"""``python -m ctxsim.cli``: the ``ctxsim`` command."""

import sys

from . import main

sys.exit(main())
