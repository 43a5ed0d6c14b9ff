"""The one exception type the CLI turns into a one-line message and exit code 2."""

from __future__ import annotations


class UserError(Exception):
    """A problem the user can fix: bad flag value, unreadable or malformed input, missing token.

    ``str(err)`` must be a single line that names the file/flag/item at fault
    and never contains a secret.
    """
