"""`python -m hal`: the hal command (hal.cli.main) where its script is not on PATH."""

import sys

from .cli import main

sys.exit(main())
