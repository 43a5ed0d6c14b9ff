"""The one exception type the CLI turns into a one-line message and exit code 2, and the file reader that
raises it."""

from __future__ import annotations

from pathlib import Path


class UserError(Exception):
    """A problem the user can fix: bad flag value, unreadable or malformed input, missing token.

    ``str(err)`` must be a single line that names the file/flag/item at fault
    and never contains a secret.
    """


def read_user_text(path: Path, what: str, hint: str = "") -> str:
    """The UTF-8 text of a file the user pointed at; a missing, unreadable or non-UTF-8 file is a one-line
    :class:`UserError` naming ``what`` it is and the path (``hint``: what to do, appended to the line)."""
    tail = f" {hint}" if hint else ""
    try:
        return Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UserError(f"{what} not found: {path}{tail}") from None
    except OSError as exc:
        raise UserError(f"cannot read {what} {path}: {exc.strerror or exc}{tail}") from None
    except UnicodeDecodeError:
        raise UserError(f"{what} {path} is not UTF-8 text{tail}") from None
