"""Map a function over items on N local processes or a Dask cluster, results in item order.

``Pool(jobs=N)`` runs on N local processes (1: in this process, no pool), ``Pool(scheduler=ADDR)``
on the workers of a running Dask distributed cluster (the ``dask`` extra). Results come back in the
order of the items whatever ran where, so a sweep gives the same answer on one core, many, or a
cluster. The function and the items must pickle (module-level functions, frozen dataclasses).

A sweep that is short does not need workers: with ``here_s`` :meth:`Pool.map` runs items here, in
order, while the rest at the pace so far would take under that many CPU seconds (:func:`here_s`:
``SERIAL_S`` when ``--jobs`` is not given), and hands only the rest to the workers, which, forked
after, inherit what those items imported and compiled. ``until`` ends a map at the first result,
in item order, that satisfies it (a speculative sweep stops where its guess fails).

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

from loopsim.base.errors import InputError
from loopsim.base.limits import short_text as limits_short

#: seconds to wait for a Dask scheduler before giving up
CONNECT_TIMEOUT_S = 5


def default_jobs() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def check_jobs(jobs: int | None) -> int:
    """``--jobs`` value: None means every core; must be >= 1; more than the cores this process
    may run on is capped at them (more processes than cores only fork and wait: docs/errors.md)."""
    if jobs is None:
        return default_jobs()
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise InputError(f"--jobs {jobs!r} must be an integer >= 1")
    return min(jobs, default_jobs())


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
            weight: Callable[[object], int] | None = None, here_s: float | None = None,
            until: Callable[[object], bool] | None = None) -> list:
        """``[fn(x) for x in items]``, run on the pool's workers.

        ``note(result)`` may return a short text for the progress bar (e.g. the best so far);
        ``weight(item)``: how many steps of the bar an item is (default 1). ``here_s``: before
        local workers first start, run items here, in order, at least one, while the rest at the
        pace so far would take under ``here_s`` CPU seconds (:func:`here_s`): the workers then
        inherit what those imported and compiled, and a short sweep never starts them. ``until``:
        stop at the first result, in item order, for which ``until(result)`` is true: the results
        up to it are returned, later items are cancelled.
        """
        items = list(items)
        if not items:
            return []
        res = _Results(items, progress, note, weight, until)
        try:
            if self._client is None and (self.jobs == 1 or len(items) == 1):
                _run_here(fn, res, float("inf"))
            else:
                if here_s is not None and self._client is None and self._exec is None:
                    _run_here(fn, res, here_s)
                if not res.finished():
                    (self._map_dask if self._client is not None else self._map_local)(fn, res)
        except KeyboardInterrupt:
            raise Interrupted(dict(res.done)) from None
        return res.results()

    def _map_local(self, fn, res: _Results) -> None:
        from concurrent.futures import FIRST_COMPLETED, wait

        if self._exec is None:
            import multiprocessing as mp
            from concurrent.futures import ProcessPoolExecutor

            method = "fork" if sys.platform == "linux" else "spawn"  # fork: no re-import per worker
            self._exec = ProcessPoolExecutor(self.jobs, mp_context=mp.get_context(method),
                                             initializer=_ignore_sigint)
        futs = {self._exec.submit(fn, x): i for i, x in res.todo()}
        try:
            pending = set(futs)
            while not res.finished():
                finished, pending = wait(pending, return_when=FIRST_COMPLETED)
                for f in finished:
                    if futs[f] < res.limit:
                        res.add(futs[f], f.result())
        finally:
            for f in futs:
                f.cancel()  # those past the limit, or all on Ctrl-C; a finished one ignores it

    def _map_dask(self, fn, res: _Results) -> None:
        from distributed import as_completed

        todo = res.todo()
        futs = self._client.map(fn, [x for _, x in todo], pure=False)
        index = {f.key: i for (i, _), f in zip(todo, futs)}
        try:
            for f in as_completed(futs, loop=self._client.loop):
                if index[f.key] < res.limit:
                    res.add(index[f.key], f.result())
                if res.finished():
                    break
        finally:
            self._client.cancel([f for f in futs if not f.done()])

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


class _Results:
    """What a :meth:`Pool.map` has so far: results by item index, the progress bar, and
    ``limit``, the items wanted (all, or up to the first that satisfies ``until``)."""

    def __init__(self, items, progress, note, weight, until):
        self.items, self.progress, self.note, self.weight, self.until = \
            items, progress, note, weight, until
        self.done: dict[int, object] = {}
        self.limit = len(items)

    def add(self, i: int, result) -> None:
        self.done[i] = result
        if self.progress is not None:
            self.progress.update(self.weight(self.items[i]) if self.weight else 1,
                                 self.note(result) if self.note else None)
        if self.until is not None and i < self.limit and self.until(result):
            self.limit = i + 1

    def todo(self) -> list[tuple[int, object]]:
        return [(i, x) for i, x in enumerate(self.items[:self.limit]) if i not in self.done]

    def finished(self) -> bool:
        return all(i in self.done for i in range(self.limit))

    def results(self) -> list:
        return [self.done[i] for i in range(self.limit)]


def _run_here(fn, res: _Results, budget_s: float) -> None:
    """Items in order in this process, at least one, while the rest at the pace so far would take
    under ``budget_s`` CPU seconds."""
    import time

    from bisect import bisect_left

    todo = res.todo()
    at = [i for i, _ in todo]
    t0 = time.process_time()
    for n, (i, x) in enumerate(todo, 1):
        if i >= res.limit:
            break
        res.add(i, fn(x))
        left = bisect_left(at, res.limit) - n  # items still to do, in order
        if left and (time.process_time() - t0) / n * left >= budget_s:
            break


#: CPU seconds of work a sweep does in this process before starting workers when ``--jobs`` is
#: not given: starting and feeding worker processes costs about 0.1 s of CPU
SERIAL_S = 0.5


def here_s(jobs: int | None, scheduler: str | None = None) -> float:
    """``here_s`` for :meth:`Pool.map` from ``--jobs``: not given (None), :data:`SERIAL_S`; given,
    0 (only the first item runs here, so that the workers inherit what it imports). With a Dask
    ``scheduler`` given, 0."""
    return SERIAL_S if jobs is None and scheduler is None else 0.0


def _connect(address: str, timeout_s: float):
    try:
        from distributed import Client
    except ImportError:
        raise InputError(f"--scheduler {address}: Dask is not installed; install the extra: "
                         "pip install 'loopsim[dask]'") from None
    from distributed.comm.addressing import parse_address, parse_host_port

    try:  # a malformed address is refused before a Client exists (a half-made one fails at exit)
        scheme, loc = parse_address(address)
        if scheme in ("tcp", "tls", "ws", "wss", "ucx"):
            _, port = parse_host_port(loc)
            if not 0 < int(port) < 65536:
                raise ValueError(f"port {port} is not between 1 and 65535")
    except (ValueError, TypeError) as e:
        raise InputError(f"--scheduler {limits_short(address)}: not a Dask scheduler address "
                         f"({limits_short(str(e).splitlines()[0] if str(e) else type(e).__name__, 100)}); "
                         "expected e.g. tcp://10.0.0.5:8786") from None
    try:
        return Client(address, timeout=timeout_s, set_as_default=False)
    except (OSError, TimeoutError, ValueError) as e:
        why = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise InputError(f"--scheduler {address}: cannot reach the Dask scheduler within "
                         f"{timeout_s:g} s ({why})") from None


def add_options(p) -> None:
    """``--jobs``, ``--scheduler`` and ``--quiet`` on an argparse parser."""
    from loopsim.base.limits import MAX_JOBS, bounded

    p.add_argument("--jobs", "-j", type=bounded("--jobs", 1, MAX_JOBS), default=None,
                   metavar="N", help="local processes (default and at most: every core available)")
    p.add_argument("--scheduler", default=None, metavar="ADDRESS",
                   help="run on a Dask distributed cluster, e.g. tcp://127.0.0.1:8786 "
                        "(pip install 'loopsim[dask]')")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress bar")


def pmap(fn: Callable, items: Iterable, *, jobs: int | None = None, scheduler: str | None = None,
         desc: str = "", quiet: bool = False, unit: str = "it", here_s: float | None = None) -> list:
    """``[fn(x) for x in items]`` on ``jobs`` processes (default every core) or a Dask cluster,
    with a progress bar; results in item order (``here_s``: as :meth:`Pool.map`). Ctrl-C raises
    :class:`Interrupted`."""
    items = list(items)
    if scheduler is None and len(items) < 2:
        jobs = 1  # no pool for a single item
    with Pool(jobs, scheduler) as pool, Progress(len(items), desc, quiet=quiet, unit=unit) as bar:
        return pool.map(fn, items, progress=bar, here_s=here_s)
