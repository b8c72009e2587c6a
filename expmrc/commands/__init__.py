"""Subcommands of the `expmrc` command line, one module each (see expmrc.cli.COMMANDS)."""
