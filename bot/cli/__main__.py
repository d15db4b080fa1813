"""`python -m bot.cli`: the same as the `eva` command."""

import sys

from bot.cli.main import main

sys.exit(main())
