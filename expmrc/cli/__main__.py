"""`python -m expmrc.cli`: the `expmrc` command."""

import sys

from expmrc.cli import main

sys.exit(main())
