"""Where the bundled data lives: ``tilings/`` and ``hardware/`` ship as ``loopsim._tilings`` and
``loopsim._hardware``; in a source checkout without an install they sit beside the package."""

from __future__ import annotations

import functools
import importlib.util
from pathlib import Path


@functools.lru_cache(maxsize=None)
def data_dir(folder: str) -> Path:
    """The directory of bundled ``folder`` ("tilings" or "hardware"), looked up once a process."""
    try:
        found = importlib.util.find_spec(f"loopsim._{folder}")
    except ModuleNotFoundError:
        found = None
    for loc in (found.submodule_search_locations or []) if found else []:
        if Path(loc).is_dir():
            return Path(loc)
    return Path(__file__).resolve().parents[2] / folder
