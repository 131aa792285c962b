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

:func:`kernel_verdict` is the one place a kernel's times are put together from what it asks of
the machine (its FLOPs, Q, ceilings, engine steps, the DMA time, and what the target's timeline
adds: ``dma_transfers``, ``timeline``): ``entitle`` (through :mod:`loopsim.model.pipeline`) and
``search`` (whose closed forms give the same inputs without a trace) both call it, so they rank
by the same numbers.
"""

from __future__ import annotations

import math
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


def round_T(t: float) -> float:
    """``t`` to 12 significant digits: times equal up to float noise compare equal."""
    return float(f"{t:.12g}") if math.isfinite(t) else t


def transfers_s(v: Verdict) -> float:
    """The time the kernel's transfers take at the rate their sizes reach (``dma_transfers``;
    the DMA ceiling where the target gives none; 0 without either), seconds: the tie-break."""
    t = v.time_map
    return t.get("dma_transfers", t.get("dma", 0.0))


def rank_key(T: float, feasible: bool, Q: int, sbuf_peak: int, *, transfers: float = 0.0,
             instructions: int = 0) -> tuple:
    """The one ranking order of every command (compare, search, the batch mode): feasible first,
    then T (to 12 significant digits), then what an engineer prefers among equal times: the
    transfers' time at their sizes (:func:`transfers_s`: fewer, larger transfers), fewer Tensor
    Engine instructions, smaller Q, smaller SBUF peak. Ties beyond these are broken by the
    caller's label, never by enumeration order."""
    return (not feasible, round_T(T), round_T(transfers), instructions, Q, sbuf_peak)


# ---------------------------------------------------------------------------------------------
# the times of one kernel


def kernel_verdict(flops: int, q_bytes: int, ceil, steps, hw, dtype: str, reasons: Iterable[str],
                   *, dma: tuple[float, str] | None = None,
                   added: tuple[Mapping[str, float], Mapping[str, str]] | None = None) -> Verdict:
    """The verdict of one kernel on target ``hw``: W/P, Q/BW, the Tensor Engine ceiling (with the
    transposes of op layouts), every other engine's busy time (op steps, PSUM evacuation, the
    ceilings' modelled calls), the interconnect, the DMA engines (``dma``: seconds and a line, as
    :meth:`Target.dma_time` gives them; None: none), and the times the target's timeline adds
    (``added``: ``dma_transfers``, ``timeline``, with their lines). ``ceil``: the target's
    ceilings; ``steps``: its engine steps."""
    P = hw.P(dtype)
    times = {"compute": flops / P, "memory": q_bytes / hw.bw}
    details = {"compute": f"W/P = {flops:,} FLOPs at P ({dtype})",
               "memory": f"Q/BW = {q_bytes:,} bytes at BW"}
    if ceil.instructions:
        comb = ceil.get("combined")
        times["tensor_engine"] = comb.T
        low = [x for x in ceil.ceilings if x.factor is not None and x.name != "combined"
               and x.factor < 1 - 1e-12]
        details["tensor_engine"] = ("Tensor Engine: " + " x ".join(f"{x.name} {x.factor:.4g}" for x in low)
                                    + f" = {comb.factor:.4g} of the peak ("
                                    + "; ".join(x.explanation for x in low) + ")") if low else \
            f"Tensor Engine instruction time ({comb.explanation})"
    busy: dict[str, list] = {}
    for s in steps:
        if s.kind == "matmul":
            continue
        for eng, t in s.engine_seconds:
            busy.setdefault(eng, []).append((t, f"{s.op} ({s.kind}, {s.elements:,} element-ops)"))
    ps = ceil.psum
    if ps.engine is not None and ps.evacuated_elements and ps.T_evacuate is not None:
        busy.setdefault(ps.engine, []).append(
            (ps.T_evacuate, f"PSUM evacuation ({ps.evacuated_elements:,} elements)"))
    sites: dict[tuple, list] = {}  # one entry per call site: its calls' time, element-ops, bytes
    for w, t in getattr(ceil, "work", ()):
        if t is not None:
            g = sites.setdefault((w.engine, w.call, w.where, w.assumed), [0.0, 0, 0, 0])
            g[0] += t
            g[1] += w.element_ops
            g[2] += w.link_bytes * w.executions
            g[3] += 1
    for (eng, call, where, assumed), (t, ops, link_bytes, n) in sites.items():
        amount = f"{ops:,} element-ops" if eng != "link" else f"{link_bytes:,} bytes"
        busy.setdefault(eng, []).append(
            (t, f"{call} at {where} ({amount}" + (f" in {n:,} calls" if n > 1 else "")
                + (", ASSUMED)" if assumed else ")")))
    for eng, parts in busy.items():
        if eng == "link":
            times["link"] = times.get("link", 0.0) + sum(t for t, _ in parts)
            details["link"] = "interconnect: " + ", ".join(w for _, w in parts)
            continue
        if eng == "tensor":  # transposes of op layouts share the PE array with the matmuls
            times["tensor_engine"] = times.get("tensor_engine", 0.0) + sum(t for t, _ in parts)
            details["tensor_engine"] = details.get("tensor_engine", "Tensor Engine") + \
                "; transposes: " + ", ".join(w for _, w in parts)
            continue
        times[eng] = sum(t for t, _ in parts)
        details[eng] = f"{eng} engine busy: " + ", ".join(w for _, w in parts)
    if ceil.link is not None:
        times["link"] = times.get("link", 0.0) + ceil.link.T
        details["link"] = (f"interconnect: {ceil.link.bytes:,} bytes over {ceil.link.chips} chips "
                           f"({ceil.link.over}) at {ceil.link.bw:.4g} B/s")
    if dma is not None:
        times["dma"], details["dma"] = dma
    if added is not None:
        times.update(added[0])
        details.update(added[1])
    return decide(times, details, reasons)
