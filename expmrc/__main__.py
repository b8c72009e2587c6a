"""`python -m expmrc`: the `expmrc` command."""

import sys

from expmrc.cli import main

sys.exit(main())
