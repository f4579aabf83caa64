"""``python -m kafkaseg``: the ``kafkaseg`` console script (for a venv whose bin/ is not on PATH, or a checkout)."""

import sys

from kafkaseg.cli.main import main

sys.exit(main())
