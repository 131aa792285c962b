"""Map a function over items on N local processes or a Dask cluster, results in item order.

``Pool(jobs=N)`` runs on N local processes (1: in this process, no pool), ``Pool(scheduler=ADDR)``
on the workers of a running Dask distributed cluster (the ``dask`` extra). Results come back in the
order of the items whatever ran where, so a sweep gives the same answer on one core, many, or a
cluster. The function and the items must pickle (module-level functions, frozen dataclasses).

Ctrl-C: :meth:`Pool.map` raises :class:`Interrupted` carrying the results that finished; pending work
is cancelled and local workers ignore SIGINT (no tracebacks from them).

:class:`Progress` is a tqdm bar on stderr that appears only after a second, only on a terminal, and
never with ``quiet``.
"""

from __future__ import annotations

import os
import signal
import sys
from typing import Callable, Iterable, Sequence

from .errors import InputError

#: seconds to wait for a Dask scheduler before giving up
CONNECT_TIMEOUT_S = 5


def default_jobs() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def check_jobs(jobs: int | None) -> int:
    """``--jobs`` value: None means every core; must be >= 1."""
    if jobs is None:
        return default_jobs()
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise InputError(f"--jobs {jobs!r} must be an integer >= 1")
    return jobs


class Interrupted(KeyboardInterrupt):
    """Ctrl-C during a map; ``done`` maps item index -> result for the items that finished."""

    def __init__(self, done: dict):
        super().__init__("interrupted")
        self.done = done


class Progress:
    """A progress bar on stderr (tqdm): shown after ``delay_s`` on a terminal unless ``quiet``."""

    def __init__(self, total: int | None, desc: str = "", *, quiet: bool = False, unit: str = "it",
                 delay_s: float = 1.0):
        self.bar = None
        if quiet or not _tty():
            return
        from tqdm import tqdm

        self.bar = tqdm(total=total, desc=desc, unit=unit, file=sys.stderr, delay=delay_s,
                        leave=False, dynamic_ncols=True)

    def update(self, n: int = 1, note: str | None = None) -> None:
        if self.bar is not None:
            if note is not None:
                self.bar.set_postfix_str(note, refresh=False)
            self.bar.update(n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _tty() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


class Pool:
    """Workers that several :meth:`map` calls share: ``jobs`` local processes, or the Dask cluster
    at ``scheduler`` (an address like ``tcp://10.0.0.5:8786``). Use as a context manager."""

    def __init__(self, jobs: int | None = None, scheduler: str | None = None, *,
                 timeout_s: float = CONNECT_TIMEOUT_S):
        self.scheduler = scheduler
        self.jobs = 1 if scheduler else check_jobs(jobs)
        self._exec = None
        self._client = None
        if scheduler:
            self._client = _connect(scheduler, timeout_s)

    @property
    def workers(self) -> int:
        """How many items run at once."""
        if self._client is not None:
            return max(1, sum(self._client.nthreads().values()))
        return self.jobs

    def map(self, fn: Callable, items: Sequence, *, progress: Progress | None = None,
            note: Callable[[object], str | None] | None = None,
            weight: Callable[[object], int] | None = None, warm: bool = False) -> list:
        """``[fn(x) for x in items]``, run on the pool's workers. ``note(result)`` may return a
        short text for the progress bar (e.g. the best so far); ``weight(item)``: how many steps
        of the bar an item is (default 1). ``warm``: before the first local workers start, run
        the first item here, so that they inherit what it imported and compiled."""
        items = list(items)
        if not items:
            return []
        if progress is not None and (note or weight):
            progress = _Steps(progress, items, note, weight)
        if self._client is not None:
            return self._map_dask(fn, items, progress)
        if self.jobs == 1 or len(items) == 1:
            return self._map_here(fn, items, progress)
        return self._map_local(fn, items, progress, warm and self._exec is None)

    def _map_here(self, fn, items, progress):
        done = {}
        try:
            for i, x in enumerate(items):
                done[i] = fn(x)
                _tick(progress, i, done[i])
        except KeyboardInterrupt:
            raise Interrupted(done) from None
        return [done[i] for i in range(len(items))]

    def _map_local(self, fn, items, progress, warm):
        from concurrent.futures import FIRST_COMPLETED, wait

        done = {}
        if warm:
            try:
                done[0] = fn(items[0])
            except KeyboardInterrupt:
                raise Interrupted(done) from None
            _tick(progress, 0, done[0])
        if self._exec is None:
            import multiprocessing as mp
            from concurrent.futures import ProcessPoolExecutor

            method = "fork" if sys.platform == "linux" else "spawn"  # fork: no re-import per worker
            self._exec = ProcessPoolExecutor(self.jobs, mp_context=mp.get_context(method),
                                             initializer=_ignore_sigint)
        futs = {self._exec.submit(fn, x): i for i, x in enumerate(items) if i not in done}
        try:
            pending = set(futs)
            while pending:
                finished, pending = wait(pending, return_when=FIRST_COMPLETED)
                for f in finished:
                    done[futs[f]] = f.result()
                    _tick(progress, futs[f], done[futs[f]])
        except KeyboardInterrupt:
            for f in futs:
                f.cancel()
            raise Interrupted(done) from None
        return [done[i] for i in range(len(items))]

    def _map_dask(self, fn, items, progress):
        from distributed import as_completed

        futs = self._client.map(fn, items, pure=False)
        index = {f.key: i for i, f in enumerate(futs)}
        done = {}
        try:
            for f in as_completed(futs, loop=self._client.loop):
                done[index[f.key]] = f.result()
                _tick(progress, index[f.key], done[index[f.key]])
        except KeyboardInterrupt:
            self._client.cancel(futs)
            raise Interrupted(done) from None
        return [done[i] for i in range(len(items))]

    def close(self) -> None:
        if self._exec is not None:
            self._exec.shutdown(wait=True, cancel_futures=True)
            self._exec = None
        if self._client is not None:
            self._client.close()
            self._client = None

    def __enter__(self) -> Pool:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class _Steps:
    """A bar ticked per item by its weight, with a note from its result."""

    def __init__(self, bar, items, note, weight):
        self.bar, self.items, self.note, self.weight = bar, items, note, weight

    def done(self, i: int, result) -> None:
        self.bar.update(self.weight(self.items[i]) if self.weight else 1,
                        self.note(result) if self.note else None)


def _tick(progress, i: int, result) -> None:
    """Item ``i`` finished with ``result``: move the bar."""
    if isinstance(progress, _Steps):
        progress.done(i, result)
    elif progress is not None:
        progress.update(1)


def _connect(address: str, timeout_s: float):
    try:
        from distributed import Client
    except ImportError:
        raise InputError(f"--scheduler {address}: Dask is not installed; install the extra: "
                         "pip install 'loopsim[dask]'") from None
    try:
        return Client(address, timeout=timeout_s, set_as_default=False)
    except (OSError, TimeoutError, ValueError) as e:
        why = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise InputError(f"--scheduler {address}: cannot reach the Dask scheduler within "
                         f"{timeout_s:g} s ({why})") from None


def add_options(p) -> None:
    """``--jobs``, ``--scheduler`` and ``--quiet`` on an argparse parser."""
    p.add_argument("--jobs", "-j", type=int, default=None, metavar="N",
                   help="local processes (default: every core)")
    p.add_argument("--scheduler", default=None, metavar="ADDRESS",
                   help="run on a Dask distributed cluster, e.g. tcp://127.0.0.1:8786 "
                        "(pip install 'loopsim[dask]')")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress bar")


def pmap(fn: Callable, items: Iterable, *, jobs: int | None = None, scheduler: str | None = None,
         desc: str = "", quiet: bool = False, unit: str = "it") -> list:
    """``[fn(x) for x in items]`` on ``jobs`` processes (default every core) or a Dask cluster,
    with a progress bar; results in item order. Ctrl-C raises :class:`Interrupted`."""
    items = list(items)
    if scheduler is None and len(items) < 2:
        jobs = 1  # no pool for a single item
    with Pool(jobs, scheduler) as pool, Progress(len(items), desc, quiet=quiet, unit=unit) as bar:
        return pool.map(fn, items, progress=bar)
