"""The one exception type the command line turns into a single line and exit status 2."""


class ExpmrcError(Exception):
    """A user-facing problem with an input: the message names the file, the question id and what is wrong."""
