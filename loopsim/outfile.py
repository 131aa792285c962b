"""Output files written whole or not at all: a temporary file in the same directory, then rename."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Callable

from .errors import InputError

#: figure formats loopsim writes (matplotlib's names)
FIGURE_FORMATS = ("png", "svg", "pdf")


def figure_format(path: str, flag: str = "-o") -> str:
    """The format named by ``path``'s extension; an unsupported one is an :class:`InputError`."""
    ext = Path(path).suffix.lower().lstrip(".")
    if ext not in FIGURE_FORMATS:
        shown = f"'.{ext}'" if ext else "no extension"
        raise InputError(f"{flag} {path}: unsupported output format ({shown}); use "
                         f"{', '.join('.' + f for f in FIGURE_FORMATS)}")
    return ext


def write_atomic(path: str, write: Callable[[str], None], flag: str = "-o") -> None:
    """Call ``write(tmp_path)`` on a temporary file beside ``path`` and rename it to ``path``.

    On any failure the temporary file is removed and ``path`` is left as it was; an OS error
    (missing directory, no permission) becomes an :class:`InputError` naming ``flag`` and ``path``.
    """
    target = Path(path)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part", dir=target.parent or ".")
    except OSError as e:
        raise InputError(f"{flag} {path}: cannot write ({e.strerror})") from None
    os.close(fd)
    try:
        write(tmp)
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    except OSError as e:
        _remove(tmp)
        raise InputError(f"{flag} {path}: cannot write ({e.strerror})") from None
    except BaseException:
        _remove(tmp)
        raise


def _remove(p: str) -> None:
    try:
        os.unlink(p)
    except OSError:
        pass
