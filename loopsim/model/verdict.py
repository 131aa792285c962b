"""The verdict on one tiling: how long it can take at best, what binds it, and whether it can run.

``T`` is the attainable time: the maximum over every roof and lower ceiling the tool knows, each a
time in seconds that the kernel cannot beat — W/P (``compute``), Q/BW (``memory``), the Tensor
Engine's instruction time with its fill, issue-rate and dtype factors (``tensor_engine``), each
other engine's busy time (``vector``, ``scalar``, ``gpsimd``: op work and PSUM evacuation, counted
per execution), the interconnect (``link``), and any roof added later. All of them overlap, so the
slowest binds; it is ``limit``. A kernel of several kernels (a schedule) runs them one after
another: its T is the sum of theirs and its limit the resource that binds the most of that time.

``feasible`` is False when the kernel cannot run as written: SBUF per partition, PSUM banks, tile
limits; ``reasons`` says why, one line each. An infeasible kernel is still analysed (its T is what
it would take if it could run) and ranks below every feasible one (:func:`rank_key`).

:func:`kernel_verdict` is the one place a kernel's times are put together from what it asks of
the machine (its FLOPs, Q, ceilings, engine steps and DMA transfers): ``entitle`` (through
:mod:`loopsim.model.pipeline`) and ``search`` (whose closed forms give the same inputs without a
trace) both call it, so they rank by the same numbers. A new roof (the timeline) is added there.

``dma_estimate_s`` is a tie-break, not a roof: the time the kernel's DMA transfers take at the
throughput the size guidance reads for their bytes per partition
(:func:`loopsim.targets.neuron.dma.relative_throughput`; equal to the ``dma`` time when every
transfer is large). Among tilings of equal T it prefers the larger transfers an engineer writes.
"""

from __future__ import annotations

from dataclasses import dataclass
import math
from typing import Callable, Iterable, Mapping

#: tie order: when two limits give the same time, the one listed first is named
ORDER = ("compute", "memory", "tensor_engine", "vector", "scalar", "gpsimd", "dma", "link")
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
    dma_estimate_s: float = 0.0  # the DMA transfers at their size's throughput (a tie-break)

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


def decide(times: Mapping[str, float], details: Mapping[str, str] | Callable[[str], str],
           reasons: Iterable[str], dma_estimate_s: float = 0.0) -> Verdict:
    """One kernel: T is the largest time (every roof overlaps the others). ``details``: a line
    per time, or a function giving the line of the binding one (only it is written)."""
    times = {n: t for n, t in times.items() if t is not None}
    limit = binding(times)
    detail = details(limit) if callable(details) else details.get(limit, "")
    return Verdict(times[limit], limit, detail, _ordered(times), tuple(reasons), dma_estimate_s)


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
    return Verdict(total, limit, "; ".join(dict.fromkeys(details)), _ordered(times), reasons,
                   sum(v.dma_estimate_s for v in parts))


def _ordered(times: Mapping[str, float]) -> tuple[tuple[str, float], ...]:
    return tuple(sorted(times.items(), key=lambda kv: _rank(kv[0])))


def round_T(t: float) -> float:
    """``t`` to 12 significant digits: times equal up to float noise compare equal."""
    return float(f"{t:.12g}") if math.isfinite(t) else t


def rank_key(T: float, feasible: bool, Q: int, sbuf_peak: int, *, dma_estimate_s: float = 0.0,
             instructions: int = 0) -> tuple:
    """The one ranking order of every command (compare, search, the batch mode): feasible first,
    then T (to 12 significant digits), then what an engineer prefers among equal times: the
    smaller DMA estimate (fewer, larger transfers), fewer Tensor Engine instructions, smaller Q,
    smaller SBUF peak. Ties beyond these are broken by the caller's label, never by enumeration
    order."""
    return (not feasible, round_T(T), round_T(dma_estimate_s), instructions, Q, sbuf_peak)


# ---------------------------------------------------------------------------------------------
# the times of one kernel


@dataclass(frozen=True, slots=True)
class Dma:
    """A kernel's DMA transfers as the verdict needs them (from :func:`loopsim.targets.neuron.dma.report`
    as written, or from search's closed forms). Seconds, bytes."""

    T: float              # bytes over the DMA engines' bandwidth (busiest core of a split)
    estimate_s: float     # at the throughput of each transfer's size (>= T)
    transfers: int
    bytes: int
    cores: int = 1
    small_bytes: int = 0  # moved in transfers below the guidance's 2 KiB per partition
    small: int = 2048     # that threshold, bytes per partition


def kernel_verdict(flops: int, q_bytes: int, ceil, steps, hw, dtype: str, reasons: Iterable[str],
                   dma: Dma | None = None, kernel=None) -> Verdict:
    """The verdict of one kernel on sheet ``hw``: W/P, Q/BW, the Tensor Engine ceiling (with the
    transposes of op layouts), every other engine's busy time (op steps, PSUM evacuation), the
    interconnect, and the DMA engines (``dma``: the transfers as written; None: Q bytes at the
    DMA bandwidth). ``ceil``: :class:`loopsim.targets.neuron.ceilings.Ceilings`; ``steps``:
    :class:`loopsim.targets.neuron.engines.Step` s; ``kernel``: the nest (for roofs that read it).
    Details are written for the binding time only."""
    P = hw.P(dtype)
    times = {"compute": flops / P, "memory": q_bytes / hw.bw}
    busy: dict[str, list] = {}
    for s in steps:
        if s.kind == "matmul":
            continue
        for eng, t in s.engine_seconds:
            busy.setdefault(eng, []).append((t, s))
    ps = ceil.psum
    if ps.engine is not None and ps.evacuated_elements and ps.T_evacuate is not None:
        busy.setdefault(ps.engine, []).append((ps.T_evacuate, None))
    if ceil.instructions:
        times["tensor_engine"] = ceil.get("combined").T
    for eng, parts in busy.items():
        if eng == "tensor":  # transposes of op layouts share the PE array with the matmuls
            times["tensor_engine"] = times.get("tensor_engine", 0.0) + sum(t for t, _ in parts)
        else:
            times[eng] = sum(t for t, _ in parts)
    if ceil.link is not None:
        times["link"] = ceil.link.T
    est = 0.0
    dma_bw = getattr(hw, "dma_bw", None)
    if dma_bw and hw.roofs != "measured":  # measured roofs: the measured BW is the memory side
        if dma is None:
            times["dma"] = est = q_bytes / dma_bw
        else:
            times["dma"], est = dma.T, dma.estimate_s

    def detail(limit: str) -> str:
        return _detail(limit, flops, q_bytes, ceil, busy, hw, dtype, dma)

    return decide(times, detail, reasons, est)


def _what(s) -> str:
    return "PSUM evacuation ({:,} elements)".format(s) if isinstance(s, int) else \
        f"{s.op} ({s.kind}, {s.elements:,} element-ops)"


def _detail(limit, flops, q_bytes, ceil, busy, hw, dtype, dma) -> str:
    """The line explaining time ``limit`` of :func:`kernel_verdict`."""
    parts = {e: [(t, ceil.psum.evacuated_elements if s is None else s) for t, s in p]
             for e, p in busy.items()}
    if limit == "compute":
        return f"W/P = {flops:,} FLOPs at P ({dtype})"
    if limit == "memory":
        return f"Q/BW = {q_bytes:,} bytes at BW"
    if limit == "tensor_engine":
        text = "Tensor Engine"
        if ceil.instructions:
            comb = ceil.get("combined")
            low = [x for x in ceil.ceilings if x.factor is not None and x.name != "combined"
                   and x.factor < 1 - 1e-12]
            text = ("Tensor Engine: " + " x ".join(f"{x.name} {x.factor:.4g}" for x in low)
                    + f" = {comb.factor:.4g} of the peak ("
                    + "; ".join(x.explanation for x in low) + ")") if low else \
                f"Tensor Engine instruction time ({comb.explanation})"
        if "tensor" in parts:
            text += "; transposes: " + ", ".join(_what(s) for _, s in parts["tensor"])
        return text
    if limit == "link":
        ln = ceil.link
        return f"interconnect: {ln.bytes:,} bytes over {ln.chips} chips ({ln.over}) at {ln.bw:.4g} B/s"
    if limit == "dma":
        bw = f"{hw.dma_bw / 1e9:.4g} GB/s"
        if dma is None:
            return f"DMA: Q = {q_bytes:,} bytes at the DMA engines' {bw}"
        share = dma.small_bytes / dma.bytes if dma.bytes else 0.0
        share_t = "<0.1%" if share < 0.001 else f"{share:.1%}"
        small = f"; {share_t} of them in transfers below {dma.small} B per partition" \
            if dma.small_bytes else ""
        return (f"DMA: {dma.transfers:,} transfers, {dma.bytes:,} bytes at the DMA engines' {bw}"
                + (f" (busiest of {dma.cores} cores)" if dma.cores > 1 else "") + small)
    if limit in parts:
        return f"{limit} engine busy: " + ", ".join(_what(s) for _, s in parts[limit])
    return ""
