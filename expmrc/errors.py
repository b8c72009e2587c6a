"""The one exception type the command line turns into a single line and exit status 2, and warnings."""

import sys


class ExpmrcError(Exception):
    """A user-facing problem with an input: the message names the file, the question id and what is wrong."""


class Terminated(BaseException):
    """SIGTERM, raised (by the command line's handler) like KeyboardInterrupt, so that writers remove their
    temporary files on the way out and a run can record that it was interrupted."""


def warn(message: str) -> None:
    """Print `warning: message` on stderr: input that is accepted but probably not what the user meant."""
    print(f"warning: {message}", file=sys.stderr)
