"""Numba's on-disk cache, made robust before the replay kernels load (``cache=True``).

Two environment faults used to break a replay with a numba traceback:

- **no writable cache location** (a read-only or missing HOME, an unwritable NUMBA_CACHE_DIR, an
  installed package in a read-only site-packages): numba raises ``RuntimeError: cannot cache
  function``. :func:`prepare` finds where numba would cache (its own order: NUMBA_CACHE_DIR, the
  package's ``__pycache__``, the user cache folder); when none is writable it points
  NUMBA_CACHE_DIR at a temporary folder removed at exit (the kernels compile for this run only)
  and prints one warning line. Where not even a temporary folder can be made, caching is turned
  off in numba itself.
- **corrupt or truncated cache files** (``.nbi`` index, ``.nbc`` data): numba unpickles them and
  raises ``UnpicklingError``. :func:`prepare` checks every cache file of loopsim's kernels with
  :mod:`pickletools` (a parse that executes nothing) and deletes a module's files when one is
  damaged, so numba recompiles them and writes them again: results are those of a clean run.

It imports nothing from numba and runs once per process, when the first compiled module loads
(:func:`loopsim.sim._jit.njit`): a process that runs only the plain-Python twins, or no trace,
never reads the cache files.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import os
import pickletools
import shutil
import sys
import tempfile
from pathlib import Path

#: the folder of the jitted modules (loopsim/sim) and their module names
SIM_DIR = Path(__file__).resolve().parents[1] / "sim"
MODULES = ("_gen", "_kernels", "_stack", "_filters")

_prepared = False


def prepare() -> None:
    """Make numba's cache usable for loopsim's kernels (once per process; see the module doc)."""
    global _prepared
    if _prepared or os.environ.get("NUMBA_DISABLE_JIT") == "1":
        return
    _prepared = True
    places = cache_dirs()
    for d in places:
        repair(d)
    if not any(writable(d) for d in places):
        _run_uncached()


def cache_dirs() -> list[Path]:
    """Where numba may cache the kernels, in numba's order of preference."""
    sub = f"{SIM_DIR.name}_{hashlib.sha1(str(SIM_DIR).encode()).hexdigest()}"
    out = []
    if os.environ.get("NUMBA_CACHE_DIR"):
        out.append(Path(os.environ["NUMBA_CACHE_DIR"]) / sub)
    out.append(SIM_DIR / "__pycache__")
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    out.append(Path(base) / "numba" / sub)
    return out


def writable(d: Path) -> bool:
    """Whether numba could cache in ``d`` (its own test: make the folder, write a temporary file)."""
    try:
        os.makedirs(d, exist_ok=True)
        tempfile.TemporaryFile(dir=d).close()
        return True
    except (OSError, ValueError):
        return False


def repair(d: Path) -> list[str]:
    """Delete the cache files of a loopsim kernel module in ``d`` when any of them is damaged
    (numba then rebuilds them); returns the names deleted."""
    try:
        names = os.listdir(d)
    except OSError:
        return []
    doomed = []
    for module in MODULES:
        mine = [n for n in names if n.startswith(module + ".") and n.endswith((".nbi", ".nbc"))]
        if not all(intact(d / n) for n in mine):
            doomed += mine
    for n in doomed:
        with contextlib.suppress(OSError):
            os.unlink(d / n)
    return doomed


def intact(path: Path) -> bool:
    """Whether a cache file parses as numba writes it: an ``.nbi`` is two pickles (numba's version,
    then the index), an ``.nbc`` one. Parsed with pickletools, which executes nothing."""
    try:
        data = path.read_bytes()
    except OSError:
        return False
    pos = 0
    for _ in range(2 if path.suffix == ".nbi" else 1):
        try:
            end = None
            for op, _arg, at in pickletools.genops(data[pos:]):
                if op.name == "STOP":
                    end = at + 1
                    break
        except Exception:  # noqa: BLE001  any parse failure means damaged
            return False
        if end is None:
            return False
        pos += end
    return pos == len(data)


def _run_uncached() -> None:
    try:
        tmp = tempfile.mkdtemp(prefix="loopsim-numba-")
    except OSError:
        tmp = None
    if tmp is not None:
        os.environ["NUMBA_CACHE_DIR"] = tmp
        atexit.register(shutil.rmtree, tmp, True)
        if "numba.core.config" in sys.modules:  # numba read its settings already
            sys.modules["numba.core.config"].CACHE_DIR = tmp
        how = "compiling the replay kernels for this run only"
    else:
        from numba.core import caching, dispatcher

        dispatcher.Dispatcher.enable_caching = lambda self: setattr(self, "_cache", caching.NullCache())
        how = "running the replay kernels uncached"
    print("loopsim: warning: no writable numba cache folder (NUMBA_CACHE_DIR, the package, or "
          f"~/.cache); {how} (set NUMBA_CACHE_DIR to a writable folder to keep them)", file=sys.stderr)
