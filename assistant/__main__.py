"""Run with `python -m assistant` (same as the `sizing` command)."""

import sys

from assistant.cli import main

sys.exit(main())
