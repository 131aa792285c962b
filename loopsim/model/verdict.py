"""The verdict on one tiling: how long it can take at best, what binds it, and whether it can run.

``T`` is the attainable time: the maximum over every roof and lower ceiling the tool knows, each a
time in seconds that the kernel cannot beat — W/P (``compute``), Q/BW (``memory``), the Tensor
Engine's instruction time with its fill, issue-rate and dtype factors (``tensor_engine``), each
other engine's busy time (``vector``, ``scalar``, ``gpsimd``: op work and PSUM evacuation, counted
per execution), the interconnect (``link``), and the engine timeline's predicted makespan
(``timeline``, :mod:`loopsim.targets.neuron.timeline`: every instruction on its queue with the
sheet's costs and the kernel's dependencies, never below the others since it runs the same work)
and any roof added later. T is the largest, so it is never below T_best; it is ``limit``. A kernel of several kernels (a schedule) runs them one after
another: its T is the sum of theirs and its limit the resource that binds the most of that time.

``feasible`` is False when the kernel cannot run as written: SBUF per partition, PSUM banks, tile
limits; ``reasons`` says why, one line each. An infeasible kernel is still analysed (its T is what
it would take if it could run) and ranks below every feasible one (:func:`rank_key`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping

#: tie order: when two limits give the same time, the one listed first is named
ORDER = ("compute", "memory", "tensor_engine", "vector", "scalar", "gpsimd", "dma", "link", "dma_transfers", "timeline")
_TIE = 1e-9  # relative: times equal to this many parts are a tie (float rounding)


@dataclass(frozen=True, slots=True)
class Verdict:
    """``T`` seconds, bound by ``limit`` (a key of ``times``); ``detail`` explains the limit;
    ``times``: seconds each roof or ceiling implies; ``reasons``: why it cannot run (empty: it can)."""

    T: float
    limit: str
    detail: str
    times: tuple[tuple[str, float], ...]
    reasons: tuple[str, ...] = ()

    @property
    def feasible(self) -> bool:
        return not self.reasons

    @property
    def time_map(self) -> dict[str, float]:
        return dict(self.times)


def _rank(name: str) -> int:
    return ORDER.index(name) if name in ORDER else len(ORDER)


def binding(times: Mapping[str, float]) -> str:
    """The name of the largest time; ties (within float rounding) go to the earlier in ORDER."""
    top = max(times.values())
    tied = [n for n, t in times.items() if t >= top * (1 - _TIE)]
    return min(tied, key=_rank)


def decide(times: Mapping[str, float], details: Mapping[str, str], reasons: Iterable[str]) -> Verdict:
    """One kernel: T is the largest time (every roof overlaps the others)."""
    times = {n: t for n, t in times.items() if t is not None}
    limit = binding(times)
    return Verdict(times[limit], limit, details.get(limit, ""), _ordered(times), tuple(reasons))


def in_sequence(parts: list[Verdict]) -> Verdict:
    """Kernels run one after another: T adds up; per resource the times add up too; the limit is
    the resource that binds the most of T (each kernel's T counted for its own limit)."""
    total = sum(v.T for v in parts)
    times: dict[str, float] = {}
    share: dict[str, float] = {}
    for v in parts:
        for n, t in v.times:
            times[n] = times.get(n, 0.0) + t
        share[v.limit] = share.get(v.limit, 0.0) + v.T
    limit = binding(share)
    details = [v.detail for v in parts if v.limit == limit and v.detail]
    reasons = tuple(r for v in parts for r in v.reasons)
    return Verdict(total, limit, "; ".join(dict.fromkeys(details)), _ordered(times), reasons)


def _ordered(times: Mapping[str, float]) -> tuple[tuple[str, float], ...]:
    return tuple(sorted(times.items(), key=lambda kv: _rank(kv[0])))


def rank_key(T: float, feasible: bool, Q: int, sbuf_peak: int) -> tuple:
    """The one ranking order: feasible first, then T, then Q, then SBUF peak (ties broken by these
    keys only, never by enumeration order)."""
    return (not feasible, T, Q, sbuf_peak)
