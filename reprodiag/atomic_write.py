"""Files written whole or not at all: a temporary file beside the target, renamed over it on success."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TextIO

from reprodiag.errors import UserError


@contextmanager
def replacing(path: Path) -> Iterator[TextIO]:
    """A UTF-8 text handle whose content replaces ``path`` when the block ends cleanly.

    Until then the old file (if any) is untouched; on any exception the temporary file is removed and the
    exception goes on, an ``OSError`` (full disk, no permission, missing folder) as a one-line
    :class:`UserError` naming ``path``. The temporary name carries the process id, so two writers never share
    one."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with tmp.open("w", encoding="utf-8") as fh:
            yield fh
        tmp.replace(path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise UserError(f"cannot write {path}: {exc.strerror or exc}") from None
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_text(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` (UTF-8) atomically; see :func:`replacing`."""
    with replacing(path) as fh:
        fh.write(text)
