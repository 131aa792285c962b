"""One verdict per tiling, exact or from closed forms, and the bounds that prune the search.

:func:`verdict` is the one exact evaluation (the trace count and every ceiling); the search reports
only tilings it has confirmed. :func:`model_verdict` gives the same numbers for a clean chain of
loads, matmuls and stores without building a trace or even the kernel: Q from the closed form of
:func:`chain_q`, the SBUF peak from :func:`chain_peak`, the ceilings computed once per binding.
:func:`tensor_engine_floor` bounds the Tensor Engine time of every tiling with given tile sizes.

T is the attainable time, seconds: the largest of W/P, Q/BW and every lower ceiling (Tensor Engine
fill and issue, PSUM evacuation, link). ``feasible``: the live buffers fit SBUF and the
accumulators fit PSUM. Tilings rank by :func:`loopsim.model.verdict.rank_key`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from loopsim.model import verdict as verdict_mod
from loopsim.count.counts import capacity_units, kernel_dtype, shape_flops
from loopsim.base.errors import CapacityError
from loopsim.ir.kernel import Kernel, Matmul
from loopsim.analyses.search.space import Chain, Structure


@dataclass(frozen=True, slots=True)
class Score:
    """A tiling as the search ranks it: the verdict ``entitle`` prints
    (:class:`loopsim.model.verdict.Verdict`, from :func:`loopsim.model.verdict.kernel_verdict`)
    and the counts its rank key reads. Seconds, bytes (SBUF peak over all partitions), FLOPs.
    ``report`` is the exact :class:`loopsim.model.pipeline.Analysis` when ``exact`` (None from the
    closed forms)."""

    verdict: verdict_mod.Verdict
    W: int
    Q: int
    sbuf_peak_bytes: int
    instructions: int
    compulsory_Q: int
    exact: bool
    report: object = None

    @property
    def T(self) -> float:
        return self.verdict.T

    @property
    def limit(self) -> str:
        return self.verdict.limit

    @property
    def feasible(self) -> bool:
        return self.verdict.feasible

    @property
    def reasons(self) -> tuple[str, ...]:
        return self.verdict.reasons

    def key(self) -> tuple:
        """:func:`loopsim.model.verdict.rank_key`: the order ``compare`` ranks by."""
        v = self.verdict
        return verdict_mod.rank_key(v.T, v.feasible, self.Q, self.sbuf_peak_bytes,
                                    transfers=verdict_mod.transfers_s(v),
                                    instructions=self.instructions)

    def stripped(self) -> "Score":
        """Without its report (reports stay on the worker)."""
        return Score(self.verdict, self.W, self.Q, self.sbuf_peak_bytes, self.instructions,
                     self.compulsory_Q, self.exact)


def roofline_T(v: Score) -> float:
    """The roofline part of an exact verdict: T without the timeline (what the closed forms give)."""
    if v.report is None or "timeline" not in v.report.times:
        return v.T
    return max(t for n, t in v.report.times.items() if n != "timeline")


round_T = verdict_mod.round_T


def verdict(k, hw, *, policy: str = "as-written", sbuf_bytes: int | None = None,
            dtype: str | None = None, model: str = "timeline") -> Score:
    """The exact verdict of a kernel or program on ``hw`` (:func:`loopsim.model.pipeline.analyze`: the
    trace count, or the replay for lru and opt, the entitlement and every ceiling; with ``model``
    ``timeline`` the engine timeline's predicted time too). A tiling SBUF cannot run at all is
    infeasible."""
    from loopsim.model import pipeline
    from loopsim.frontends.program import Program

    prog = k if isinstance(k, Program) else Program.single(k, None)
    try:
        a = pipeline.analyze(prog, hw, policy=policy, sbuf_bytes=sbuf_bytes, dtype=dtype, model=model)
    except CapacityError as e:
        v = verdict_mod.Verdict(math.inf, "capacity", "", (), (str(e),))
        return Score(v, 0, 0, 0, 0, 0, True, None)
    return Score(a.verdict, a.W, a.Q, a.sbuf_peak_bytes, a.counts.instructions,
                 a.counts.compulsory_bytes, True, a)


# ---------------------------------------------------------------------------------------------
# closed forms for clean chains


def fast_claims(chain: Chain, policy: str) -> bool:
    """The closed forms hold for this chain (given a clean binding, :func:`space.clean`): as-written
    policy, compute statements are matmuls, every matmul output is stored by exactly one store and
    never loaded, every store writes a matmul output, and no loop is split across cores."""
    if policy != "as-written" or not all(isinstance(s, Matmul) for s in chain.compute):
        return False
    outs = [s.out.tensor for s in chain.compute]
    stored = [s.tile.tensor for s in chain.stores]
    loaded = {ld.tile.tensor for ld in chain.loads}
    return (sorted(set(outs)) == sorted(stored) and len(stored) == len(set(stored))
            and not loaded & set(outs) and all(l.split == 1 for l in chain.loops))


@dataclass(frozen=True, slots=True)
class _Stmt:
    tensor_bytes: int
    variables: frozenset[str]
    cost: int          # SBUF cost of its tile (bytes per partition, or bytes on flat sheets)
    elements: int      # elements of the tensor (evacuated once per store of a matmul output)
    slowness: float = 1.0  # seconds per byte at the DMA peak's rate, relative: 1 / efficiency of its transfers


@dataclass(frozen=True, slots=True)
class ChainModel:
    """A clean chain at one binding of its parameters, reduced to what its structures change:
    per load and store its tensor's bytes, index variables and tile cost; the trips of every
    loop; the ceilings of the chain (the same for every structure, but the PSUM evacuation)."""

    chain: Chain
    trips: dict
    loads: tuple[tuple[_Stmt, ...], ...]   # per load, per tile variant (as written first)
    stores: tuple[_Stmt, ...]
    W: int
    P: float
    BW: float
    ceilings: object
    evac_roof: float | None
    transfer_bw: float | None  # the transfer (DMA) engines' bandwidth, bytes/s (None: no such ceiling)
    tile_reasons: tuple[str, ...]
    capacity: int
    lanes: int | None  # the target's lanes: costs are bytes per lane (None: bytes)
    compulsory_Q: int
    hw: object = None
    dtype: str = "bf16"
    instructions: int = 0      # matmul instructions (every structure executes the same)
    floor: bool = True         # add the timeline's floor (dma_transfers), as model="floor" does

    def load_stmts(self, s: Structure) -> tuple[_Stmt, ...]:
        """The loads as structure ``s`` writes them (its tile variant of each)."""
        return tuple(v[s.variant(i)] for i, v in enumerate(self.loads))


def loads_cost(chain: Chain, kernel: Kernel, target) -> int:
    """SBUF cost of every load's tile at once (each in its smallest tile variant): all are live
    in the innermost body, whatever the structure, so a binding whose loads exceed SBUF has no
    feasible structure."""
    from loopsim.ir.kernel import Loop, walk
    from loopsim.ir.tiles import full_tile

    tm = kernel.tensor_map
    loops = {n.var: n for n, _ in walk(kernel.body) if isinstance(n, Loop)}

    def cost(ld) -> int:
        t = tm[ld.tile.tensor]
        return target.tile_cost(full_tile(ld.tile, tuple(loops[v] for v in ld.tile.variables), t), t)

    return sum(min(cost(chain.load(i, j)) for j in range(len(chain.variants[i])))
               for i in range(len(chain.loads)))


def chain_model(chain: Chain, kernel: Kernel, hw, *, sbuf_bytes: int | None = None,
                dtype: str | None = None) -> ChainModel:
    """The model of ``chain`` at the loop sizes of ``kernel`` (the chain's nest, bound clean)."""
    from loopsim.ir.kernel import Loop, walk
    from loopsim.ir.tiles import full_tile
    from loopsim.analyses.search.space import arrange, structures

    tm = kernel.tensor_map
    loops = {n.var: n for n, _ in walk(kernel.body) if isinstance(n, Loop)}

    def stmt(s) -> _Stmt:
        t = tm[s.tile.tensor]
        ls = tuple(loops[v] for v in s.tile.variables)
        tile = full_tile(s.tile, ls, t)
        return _Stmt(t.bytes, s.tile.variables, hw.tile_cost(tile, t), t.elements,
                     transfer_slowness(s, tile, t, hw))

    dt = dtype or kernel_dtype(kernel)
    first = arrange(chain, next(structures(chain)), kernel)
    ceil = hw.ceilings(first, dtype=dt)
    roof = hw.engine_roof(ceil.psum.engine, "fp32") if ceil.psum.engine else None
    tiles = tuple(f"tile: {r}" for r in hw.cannot_run(kernel))
    trips = {v: l.trips for v, l in loops.items()}
    lds = tuple(tuple(stmt(chain.load(i, j)) for j in range(len(chain.variants[i])))
                for i in range(len(chain.loads)))
    return ChainModel(chain, trips, lds, tuple(stmt(s) for s in chain.stores),
                      shape_flops(kernel), hw.P(dt), hw.bw, ceil, roof, hw.transfer_bw, tiles,
                      capacity_units(hw, sbuf_bytes), hw.lanes, kernel.compulsory_bytes, hw, dt,
                      math.prod(trips.values()))


def _reps(m: ChainModel, s: Structure, st: _Stmt, depth: int) -> int:
    return math.prod(m.trips[v] for v in s.order[:depth] if v not in st.variables)


def _store_depth(s: Structure, st: _Stmt) -> int:
    return max((i + 1 for i, v in enumerate(s.order) if v in st.variables), default=0)


def transfer_slowness(stmt, tile: tuple[int, ...], t, hw) -> float:
    """1 / the DMA efficiency of one execution's transfers, byte-weighted (the [S10] figure at
    each transfer's bytes per partition; a chunked load's chunks, :mod:`loopsim.targets.neuron.dma`)."""
    import numpy as np

    from loopsim.targets.neuron.dma import transfer_parts

    chunk = stmt.chunks(t.partition_axis) if hasattr(stmt, "chunks") else ()
    total = slow = 0.0
    for axes, n in transfer_parts([np.int64(e) for e in tile], chunk, ()):
        n = int(n)
        if not n:
            continue
        shape = tuple(int(a) for a in axes)
        b = math.prod(shape) * t.elem_bytes
        total += n * b
        slow += n * b / hw.dma_efficiency(hw.tile_cost(shape, t))
    return slow / total if total else 1.0


def chain_q(m: ChainModel, s: Structure) -> int:
    """As-written Q (bytes) of the chain arranged as ``s``.

    Over its index loops a statement's tile covers its tensor once (the binding is clean), so a
    load moves the tensor's bytes once per iteration of the enclosing loops that do not index it
    (R). A store writes its tensor R_s times; a tile stored inside a loop that does not index it (a
    reduction loop outside the store) is re-accumulated after every store but the last: R_s - 1
    read-backs of the partial sums.
    """
    pos = {v: i + 1 for i, v in enumerate(s.order)}
    q = 0
    for st, lv in zip(m.load_stmts(s), s.levels):
        q += st.tensor_bytes * _reps(m, s, st, pos[lv] if lv else 0)
    for st in m.stores:
        r = _reps(m, s, st, _store_depth(s, st))
        q += st.tensor_bytes * (2 * r - 1)  # r writes, r - 1 read-backs
    return q


def chain_peak(m: ChainModel, s: Structure) -> int:
    """Peak SBUF cost of the live buffers as written (:func:`loopsim.count.counts.live_peak`): a loaded
    tile lives to the end of its loop's body, a store stages its tile; in a chain the peak is at the
    end of some level's body, where every load of that level and outside it is live."""
    n = len(s.order)
    pos = {v: i + 1 for i, v in enumerate(s.order)}
    pre = [0] * (n + 1)
    post = [0] * (n + 1)
    for st, lv in zip(m.load_stmts(s), s.levels):
        pre[pos[lv] if lv else 0] += st.cost
    for st in m.stores:
        post[_store_depth(s, st)] += st.cost
    peak = live = 0
    for d in range(n + 1):
        live += pre[d]
        peak = max(peak, live + post[d])
    return peak


def transfers_time(m: ChainModel, s: Structure) -> float:
    """The timeline's floor of the chain arranged as ``s`` (``dma_transfers``, seconds): every
    load, store and read-back at the rate its transfers' size reaches (``slowness``)."""
    pos = {v: i + 1 for i, v in enumerate(s.order)}
    slow = sum(st.tensor_bytes * _reps(m, s, st, pos[lv] if lv else 0) * st.slowness
               for st, lv in zip(m.load_stmts(s), s.levels))
    slow += sum(st.tensor_bytes * (2 * _reps(m, s, st, _store_depth(s, st)) - 1) * st.slowness
                for st in m.stores)
    return slow / m.transfer_bw


def model_verdict(m: ChainModel, s: Structure, q: int | None = None) -> Score:
    """The verdict of the chain arranged as ``s`` from the closed forms, through the same
    :func:`loopsim.model.verdict.kernel_verdict` as ``entitle`` (equal to :func:`verdict` of the
    arranged kernel with ``model="floor"``; the tests compare them structure by structure). Only
    the PSUM evacuation, Q, the transfers and the SBUF peak change with the structure."""
    from dataclasses import replace

    q = chain_q(m, s) if q is None else q
    ceil = m.ceilings
    ps = ceil.psum
    if ps.engine is not None and ps.evacuated_elements and ps.T_evacuate is not None:
        elems = sum(st.elements * _reps(m, s, st, _store_depth(s, st)) for st in m.stores)
        if elems != ps.evacuated_elements:
            ceil = replace(ceil, psum=replace(ps, evacuated_elements=elems,
                                              T_evacuate=elems / m.evac_roof))
    peak = chain_peak(m, s)
    reasons = list(m.tile_reasons)
    if peak > m.capacity:
        unit = " per partition" if m.lanes else ""
        reasons.append(f"SBUF: needs {peak:,} bytes{unit}, has {m.capacity:,}")
    if not ps.fits:
        reasons.append(f"PSUM: {ps.verdict()}")
    dma = added = None
    if m.transfer_bw:  # every load, store and read-back is one transfer: the DMA moves Q bytes
        dma = (q / m.transfer_bw,
               f"DMA: Q = {q:,} bytes at the DMA engines' {m.transfer_bw / 1e9:.4g} GB/s")
        if m.floor:
            added = ({"dma_transfers": transfers_time(m, s)},
                     {"dma_transfers": "transfers at the rate their sizes reach (closed form)"})
    v = verdict_mod.kernel_verdict(m.W, q, ceil, (), m.hw, m.dtype, reasons, dma=dma, added=added)
    return Score(v, m.W, q, peak * (m.lanes or 1), m.instructions, m.compulsory_Q, False)


# ---------------------------------------------------------------------------------------------
# bounds


def memory_floor(hw, q: int) -> float:
    """Seconds moving ``q`` bytes takes at least: over HBM and through the DMA engines."""
    bw = hw.transfer_bw
    return max(q / hw.bw, q / bw if bw else 0.0)


def tensor_engine_floor(hw, dtype: str, m: int, n: int, k: int, kt: int, mt: int, nt: int,
                        cores: int = 1) -> float:
    """Seconds the Tensor Engine needs at least for an m x k by k x n matmul whose instructions
    have K_t <= kt, M_t <= mt, N_t <= nt, on ``cores`` physical cores.

    Every instruction holds the array for max(N_i, N_min) cycles and covers K_i M_i N_i <= kt mt N_i
    of the kmn products, so the cycles are at least max(kmn / (kt mt), N_min kmn / (kt mt nt)); the
    busiest core runs at least 1/cores of them (the target's rule: :meth:`Target.matmul_floor`;
    for a clean cover with these tiles the bound is its ``combined`` ceiling).
    """
    return hw.matmul_floor(dtype, m, n, k, kt, mt, nt, cores)
