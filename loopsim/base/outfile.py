"""Output files written whole or not at all: a temporary file in the same directory, then rename."""

from __future__ import annotations

import os
import re
import stat
import tempfile
from pathlib import Path
from typing import Callable

from loopsim.base.errors import InputError

#: figure formats loopsim writes (matplotlib's names)
FIGURE_FORMATS = ("png", "svg", "pdf")


def figure_format(path: str, flag: str = "-o") -> str:
    """The format named by ``path``'s extension; an unsupported one, or a target that is not a
    regular file (:func:`regular_target`), is an :class:`InputError`."""
    ext = Path(path).suffix.lower().lstrip(".")
    if ext not in FIGURE_FORMATS:
        shown = f"'.{ext}'" if ext else "no extension"
        raise InputError(f"{flag} {path}: unsupported output format ({shown}); use "
                         f"{', '.join('.' + f for f in FIGURE_FORMATS)}")
    regular_target(path, flag)
    return ext


#: a temporary file of write_atomic: ``.NAME.PID.RANDOM.part`` beside its target
_PART = re.compile(r"^\..+\.(\d+)\.[^.]+\.part$")


def write_atomic(path: str, write: Callable[[str], None], flag: str = "-o") -> None:
    """Call ``write(tmp_path)`` on a temporary file beside ``path`` and rename it to ``path``.

    On any failure the temporary file is removed and ``path`` is left as it was; an OS error
    (missing directory, no permission) becomes an :class:`InputError` naming ``flag`` and ``path``.
    The file keeps the mode of the file it replaces; a new one gets 0666 less the umask. Temporary
    files that a killed run left in the directory (their process is gone) are removed first.
    """
    target = regular_target(path, flag)
    folder = target.parent if str(target.parent) else Path(".")
    remove_leftovers(folder)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.{os.getpid()}.", suffix=".part", dir=folder)
    except OSError as e:
        raise InputError(f"{flag} {path}: cannot write ({e.strerror})") from None
    os.close(fd)
    try:
        write(tmp)
        os.chmod(tmp, _mode_for(target))
        os.replace(tmp, target)
    except OSError as e:
        _remove(tmp)
        raise InputError(f"{flag} {path}: cannot write ({e.strerror})") from None
    except BaseException:
        _remove(tmp)
        raise


def regular_target(path: str, flag: str = "-o") -> Path:
    """The file ``path`` names for writing: itself when it does not exist or is a regular file, the
    regular file a symlink leads to (so the link stays a link and the file keeps its mode), else an
    :class:`InputError`: a device, a FIFO, a socket or a folder is never renamed over."""
    target = Path(path)
    if target.is_symlink():
        try:
            target = Path(os.path.realpath(target, strict=False))
        except (OSError, RuntimeError):  # a loop of links
            raise InputError(f"{flag} {path}: a symbolic link that leads nowhere (a loop of links)") from None
    try:
        st = os.stat(target)
    except FileNotFoundError:
        return target
    except OSError as e:
        raise InputError(f"{flag} {path}: cannot write ({e.strerror})") from None
    if not stat.S_ISREG(st.st_mode):
        kind = ("a folder" if stat.S_ISDIR(st.st_mode) else "a FIFO" if stat.S_ISFIFO(st.st_mode)
                else "a device" if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode)
                else "a socket" if stat.S_ISSOCK(st.st_mode) else "not a regular file")
        shown = path if str(target) == path else f"{path} (-> {target})"
        raise InputError(f"{flag} {shown} is {kind}: loopsim writes its output to a regular file "
                         "only (it is written whole, then renamed into place)")
    return target


def require_suffix(path: str, suffixes: tuple[str, ...], flag: str = "-o") -> None:
    """An :class:`InputError` unless ``path`` ends in one of ``suffixes`` (e.g. ``(".toml",)``)."""
    if Path(path).suffix.lower() not in suffixes:
        ext = Path(path).suffix
        raise InputError(f"{flag} {path}: {'extension ' + repr(ext) if ext else 'no extension'}; "
                         f"the file written is {' or '.join(suffixes)}: name it so")


def _mode_for(target: Path) -> int:
    """The permission bits the written file gets: the replaced file's, else 0666 less the umask."""
    try:
        return stat.S_IMODE(os.stat(target).st_mode)
    except OSError:
        mask = os.umask(0)
        os.umask(mask)
        return 0o666 & ~mask


def remove_leftovers(folder: Path) -> list[str]:
    """Remove the temporary files of runs that were killed mid-write (their process no longer
    exists) from ``folder``; returns their names. A live writer's file is left alone."""
    removed = []
    try:
        names = os.listdir(folder)
    except OSError:
        return removed
    for name in names:
        m = _PART.match(name)
        if m and not _alive(int(m.group(1))):
            try:
                os.unlink(folder / name)
                removed.append(name)
            except OSError:
                pass
    return removed


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, ValueError):
        return True  # another user's process, or a number we cannot check: leave its file
    return True


def _remove(p: str) -> None:
    try:
        os.unlink(p)
    except OSError:
        pass
