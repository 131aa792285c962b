"""Compiled or plain: the jitted modules (``_gen``, ``_kernels``) decorate their functions with
:func:`njit` from here, so the same source also loads as a plain-Python twin (:func:`plain`).

A short trace costs less to interpret than to compile for: numba's import, its first compile and
the kernels' compiles take seconds on a cold start (a few tenths of a second to load them from
the cache), while the plain functions run a request in a few microseconds. A process runs its
first :data:`PLAIN_BUDGET` request slots, in all, through the twins, and compiles past that (a
sweep that replays one short trace many times compiles once the budget is spent). Both give the
same results (tests compare them)."""

from __future__ import annotations

import importlib.util
import sys

#: request slots a process may run through the plain-Python twins, in all (each pass counts: a
#: trace's walk and its replay spend its slots twice). A pass costs ~1 to 1.5 us of Python a slot
#: (walk 1.0, LRU 0.9, OPT 1.4 us over the bundled tilings; ``benchmarks/bench_plain.py``), so
#: the budget is ~0.3 s of Python: about what importing numba and loading the compiled walker and
#: a replay kernel from a warm cache costs (0.32 s CPU there), an eighth of compiling them (2.4 s).
PLAIN_BUDGET = 1 << 18

_spent = 0  # request slots this process ran through the twins

_TWIN = "_plain"


def njit(**flags):
    """numba's ``njit(**flags)``, except in a plain twin, where the function stays Python (and
    numba is not imported). Every compiled module decorates through here, so numba's cache is
    made usable (:func:`loopsim.base.numba_env.prepare`) before numba loads, and only by a
    process that loads it."""
    def deco(f):
        if f.__module__.endswith(_TWIN):
            return f
        from loopsim.base.numba_env import prepare

        prepare()  # a usable numba cache before numba loads (once per process; numba_env.py)
        import numba

        _rebuild_bad_cache_entries()
        return numba.njit(**flags)(f)
    return deco


_patched = False


def _rebuild_bad_cache_entries() -> None:
    """A cache entry that unpickles but is not what numba wrote (an ``.nbc`` replaced by another
    valid pickle: ``TypeError`` in ``CompileResult._rebuild``) is treated as absent: numba
    compiles the kernel again and overwrites the entry. (Damaged files that do not even parse
    are deleted before numba loads, by :func:`loopsim.base.numba_env.repair`.)"""
    global _patched
    if _patched:
        return
    _patched = True
    from numba.core import caching

    load = caching.Cache.load_overload

    def load_or_rebuild(self, sig, target_context):
        try:
            return load(self, sig, target_context)
        except Exception:  # noqa: BLE001  any wrong content: compile afresh (save_overload rewrites)
            return None

    caching.Cache.load_overload = load_or_rebuild


def plain(name: str):
    """The module ``name`` (``loopsim.sim._gen``, ``loopsim.sim._kernels``) loaded again from its
    file as plain Python: its functions undecorated, numba not imported."""
    key = name + _TWIN
    mod = sys.modules.get(key)
    if mod is None:
        spec = importlib.util.spec_from_file_location(key, importlib.util.find_spec(name).origin)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[key] = mod
        spec.loader.exec_module(mod)
    return mod


def kernels(name: str, requests: int):
    """The module to run ``requests`` request slots with: the plain twin while they fit in what
    is left of :data:`PLAIN_BUDGET`, else the compiled module (imported here, with numba)."""
    global _spent
    if _spent + requests < PLAIN_BUDGET:
        _spent += requests
        return plain(name)
    return importlib.import_module(name)
