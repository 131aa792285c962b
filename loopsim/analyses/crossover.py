"""The crossover of a spec's dimension (:func:`loopsim.model.entitle.crossover`) with its values
analysed on many cores.

The search is sequential (doubling, then bisection), so the workers evaluate, beside the value it
needs now, the values it would need next under each guess of the outcomes not yet known
(:func:`loopsim.model.entitle.crossover_next`); the answer is then read off by the sequential search
over the values known. The result, the values reported and the error met are those of one
process; the guesses only cost CPU time.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Callable

from loopsim.model import pipeline
from loopsim.frontends import spec as spec_mod
from loopsim.model.entitle import crossover, crossover_next
from loopsim.base.errors import LoopsimError


@dataclass(frozen=True, slots=True)
class Point:
    """(W, Q) of the spec ``sf`` (as read, :func:`loopsim.model.pipeline.read`) with ``dim`` set to a
    value: Q simulated, or the compulsory Q; ``kw`` as :func:`loopsim.model.pipeline.analyze`."""

    sf: object
    sets: tuple[tuple[str, int], ...]
    dim: str
    hw: object
    kw: tuple[tuple[str, object], ...]
    lnc_cores: int | None = None
    split: str | None = None
    buffers: tuple[tuple[str, int], ...] | None = None
    compulsory: bool = False
    multiple: int = 1  # the dimension is v * multiple (a kernel's K a multiple of its 128-row tile)

    def analysis(self, v: int) -> pipeline.Analysis:
        value = v * self.multiple
        prog = pipeline.build(self.sf, spec_mod.bind_params(self.sf, {**dict(self.sets), self.dim: value}),
                              lnc_cores=self.lnc_cores, split=self.split, buffers=self.buffers)
        return pipeline.analyze(prog, self.hw, **dict(self.kw))

    def __call__(self, v: int) -> tuple[int, int]:
        a = self.analysis(v)
        return a.W, (a.counts.compulsory_bytes if self.compulsory else a.Q)


def _tried(wq: Callable[[int], tuple[int, int]], v: int) -> tuple[int, tuple[int, int] | None]:
    """(v, wq(v)), or (v, None) where it fails (the search meets the error again, in order)."""
    try:
        return v, wq(v)
    except LoopsimError:
        return v, None


def search(wq: Callable[[int], tuple[int, int]], P, BW, *, jobs: int | None = 1,
           scheduler: str | None = None, progress=None, note: Callable[[int], str] | None = None,
           tried: list | None = None) -> tuple[int, list[tuple[int, int, int]]]:
    """:func:`loopsim.model.entitle.crossover` (from 1) with ``wq`` (picklable) evaluated on ``jobs``
    local processes (None: every core once the search has taken :data:`loopsim.analyses.parallel.SERIAL_S`
    CPU seconds here) or the Dask cluster at ``scheduler``: the same value and the same
    evaluations reported. ``progress`` (a :class:`loopsim.analyses.parallel.Progress`) ticks per
    value evaluated, ``note(v)`` its text; ``tried`` receives (v, W, Q) in the order one process
    evaluates them (what was reached before an error)."""
    import time

    from loopsim.analyses.parallel import Pool, here_s

    known: dict[int, tuple[int, int]] = {}
    t0 = time.process_time()
    with Pool(jobs, scheduler) as pool:
        while True:
            # --jobs not given: one value at a time here while the search is short
            alone = time.process_time() - t0 < here_s(jobs, scheduler)
            need = crossover_next(known, P, BW, 1 if alone else pool.workers)
            if not need:
                break
            done = pool.map(partial(_tried, wq), need, progress=progress, here_s=0.0,
                            note=(lambda r: note(r[0])) if note else None)
            known.update((v, r) for v, r in done if r is not None)
            if need[0] not in known:
                break  # it fails: the search below meets the error in order

    def cached(v: int) -> tuple[int, int]:
        w, q = known[v] if v in known else wq(v)
        if tried is not None:
            tried.append((v, w, q))
        return w, q

    return crossover(cached, P, BW)
