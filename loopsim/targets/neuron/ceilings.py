"""Lower ceilings: why a kernel entitled to the flat roof still runs below it (curriculum Days 3, 6, 7).

Computed from the matmul instructions the nest issues, every ragged tile counted as what it is.
An instruction with a K x M stationary tile and a K x N moving tile does 2KMN FLOPs and holds the
Tensor Engine for max(N, N_min) cycles (N_min = the sheet's ``mm_init_cycles``, MM_INIT_LATENCY),
four times that for fp32 inputs. Summing over all instructions (S_x = sum of x):

- ``dtype``          f = P(dtype) / P(bf16): fp32 at a quarter, fp8 double where the sheet says so
- ``partition_fill`` S_KMN / (rows' x S_MN)   rows' = PE rows x max(1, f) (double-row FP8 contracts
                                              over twice the rows: K_t = 128 fills half of them)
- ``column_fill``    S_MN / (cols x S_N)
- ``issue_rate``     S_N / S_max(N, N_min)
- ``core_balance``   (LNC only) the mean core's instruction time / the busiest core's
- ``combined``       the product: exactly W / (the busiest core's instruction time)

Each ceiling is the FLOP rate the kernel could reach with only that limit (P = factor x the bf16
peak of the scope) and the time it implies (T = W / P). The factors telescope, so with one tile
shape each is the textbook ratio (K_t/128, M_t/128, N_t/max(N_t, 64)) and with several shapes each
is weighted by the instructions' work. One cycle is 2 x rows x cols / (bf16 peak per core) seconds,
which is 1 / clock on every real sheet.

Other engines and links in play:

- ``vector`` (or ``scalar``): PSUM evacuation. Every store of a matmul output tile first copies it
  PSUM -> SBUF on the Vector (else Scalar) engine: elements / engine roof, zero HBM bytes. An
  ``acc C += PS`` (SBUF accumulation) reads its PSUM tile on the Vector Engine every execution,
  adding it into C: its tile's elements each execution, counted the same way.
- ``link``: a matmul split across chips (``[parallel] chips = C, over = "K" | "N"``) moves its
  output across the interconnect: over K an all-reduce of the partial outputs,
  2 (C-1)/C x output bytes per chip (ring); over N an all-gather of the output shards,
  (C-1) x the chip's output bytes. T = bytes / link bandwidth. This is a third roof beside P and BW.

PSUM (:class:`Psum`): banks x bank bytes per partition; an M_t x N_t accumulator takes
ceil(4 N_t / bank bytes) banks (fp32 accumulation); the live accumulators are the output tiles a
matmul accumulates into before the statement that drains them (a store, or an ``acc`` into SBUF)
runs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from loopsim.base.errors import HardwareError
from loopsim.count.executions import executions, row_blocks, tile_elements
from loopsim.ir.kernel import ACC, Accumulate, Kernel, Loop, Matmul, Store
from loopsim.ir.tiles import full_extent, matmul_roles
from loopsim.targets.neuron.engines import engine_seconds, work_seconds
from loopsim.targets.ceilings import Ceiling, Ceilings, Link, Parallel, Psum, link, link_bytes, link_ceiling  # noqa: F401 (re-exported)

#: bytes of one PSUM accumulator element (accumulation is always fp32)
ACC_BYTES = 4
EVACUATION_ENGINES = ("vector", "scalar")


# ---------------------------------------------------------------------------------------------
# Tensor Engine


def _tensor_engine(kernel, hw, spec_hw, dtype, split, cores, lines: list | None = None):
    """Sums over all matmul instructions and the per-core instruction cycles; ``lines``, when
    given, gets (source line, statement, instruction cycles) per matmul statement."""
    rows, cols = hw.pe_rows, hw.pe_cols
    n_min = hw.mm_init_cycles
    s_kmn = s_mn = s_n = s_c = count = 0
    core_c = np.zeros(cores, dtype=np.float64)
    for stmt, loops in kernel.statements():
        if not isinstance(stmt, Matmul):
            continue
        r = matmul_roles(stmt, kernel)
        ext, exists, weight, core, shape = executions(
            stmt, loops, (stmt.stationary, stmt.moving), kernel, split, grouped=True)
        kmn = (ext[id(stmt.stationary)][r.k_stationary], ext[id(stmt.stationary)][r.m_stationary],
               ext[id(stmt.moving)][r.n_moving])
        bt = np.ones((1,) * len(shape), dtype=np.int64)  # batch values in the tile: an instruction each
        for bs, _, _ in r.batch:
            bt = bt * ext[id(stmt.stationary)][bs]
        c_before = s_c
        for sub, (k, m, n, b, ex, cb, w) in row_blocks(shape, kmn + (bt, exists, core, weight)):
            # b: instructions per execution cell, times the executions the cell stands for (w)
            k, m, n, b = (np.where(ex, np.broadcast_to(x, sub), 0) for x in (k, m, n, b * w))
            cyc = np.where(ex, np.maximum(n, n_min), 0) * b
            s_kmn += int((k * m * n * b).sum(dtype=np.int64))
            s_mn += int((m * n * b).sum(dtype=np.int64))
            s_n += int((n * b).sum(dtype=np.int64))
            s_c += int(cyc.sum(dtype=np.int64))
            count += int(b.sum())
            if cb is None:  # outside the split loop: every core issues it
                core_c += float(cyc.sum())
            else:
                cb = np.broadcast_to(cb, sub)
                core_c += np.bincount(cb.ravel(), weights=cyc.ravel().astype(np.float64),
                                      minlength=cores)[:cores]
        if lines is not None:
            lines.append((stmt.line, str(stmt), s_c - c_before))
    return s_kmn, s_mn, s_n, s_c, count, core_c


def matmul_lines(kernel: Kernel, hw, dtype: str) -> tuple[tuple[int, str, float], ...]:
    """(source line, statement, seconds) of each matmul statement with a source line: its
    instruction cycles (each max(N_t, MM_INIT) as the issue-rate ceiling counts them, x4 for fp32)
    at the Tensor Engine clock, shared evenly by the kernel's cores: its part of the
    ``combined`` Tensor Engine ceiling."""
    from loopsim.count.lnc import kernel_cores, split_loop

    spec_hw = hw.with_roofs("spec")
    p_ref = spec_hw.P("bf16")
    f = spec_hw.P(dtype) / p_ref
    cycle_s = 2 * hw.pe_rows * hw.pe_cols * hw.physical_cores / p_ref
    slow = max(1.0, f) / f
    cores = kernel_cores(kernel)
    lines: list = []
    _tensor_engine(kernel, hw, spec_hw, dtype, split_loop(kernel), cores, lines)
    return tuple((ln, text, c * cycle_s * slow / cores) for ln, text, c in lines if ln)


def _te_ceilings(kernel, hw, dtype, split, cores):
    """(ceilings, bf16 peak, W, instruction count, mean seconds per instruction, notes)."""
    spec_hw = hw.with_roofs("spec")
    p_ref = spec_hw.P("bf16")
    f = spec_hw.P(dtype) / p_ref
    cycle_s = 2 * hw.pe_rows * hw.pe_cols * hw.physical_cores / p_ref
    s_kmn, s_mn, s_n, s_c, count, core_c = _tensor_engine(kernel, hw, spec_hw, dtype, split, cores)
    W = 2 * s_kmn
    notes = []
    if count == 0:
        return [], p_ref, W, 0, None, ["no matmul instructions: no Tensor Engine ceilings"]
    rows_eff = hw.pe_rows * max(1.0, f)
    slow = max(1.0, f) / f  # cycles per instruction relative to bf16 (4 for fp32, 1 for fp8 double-row)
    # a tile over the array's limits cannot run (an infeasible reason elsewhere); its factor is
    # capped at 1 so no ceiling claims more than the peak
    pf = min(1.0, s_kmn / (rows_eff * s_mn))
    cf = min(1.0, s_mn / (hw.pe_cols * s_n))
    ir = s_n / s_c
    busiest = float(core_c.max())
    cb = (s_c / cores) / busiest if busiest else 1.0
    kt, mt, nt = s_kmn / s_mn, s_mn / s_n, s_n / count  # work-weighted mean tile sizes
    mean_c = s_c / count
    n_min = hw.mm_init_cycles
    assumed = f" (ASSUMED on {hw.name}; see `loopsim hardware {hw.name}`)" if hw.mm_init_assumed else ""

    def c(name, factor, text, **kw):
        P = p_ref * factor
        return Ceiling(name, P, W / P, text, factor, **kw)

    out = [
        c("dtype", f, f"{dtype} inputs run at {f:g}x the bf16 rate of the Tensor Engine"
          + (" (fp32 costs 4x the cycles per instruction)" if f < 1 else "")),
        c("partition_fill", pf, f"K_t = {kt:.4g} (work-weighted) of {rows_eff:g} PE rows in use"
          + (f" ({dtype} double-row mode contracts over {rows_eff:g})" if f > 1 else "")),
        c("column_fill", cf, f"M_t = {mt:.4g} (work-weighted) of {hw.pe_cols} PE columns in use"),
        c("issue_rate", ir, f"an instruction with moving free size N_t = {nt:.4g} (mean) holds the "
          f"array for max(N_t, {n_min}) = {mean_c:.4g} cycles (mean), N_min = MM_INIT_LATENCY{assumed}",
          assumed=hw.mm_init_assumed),
    ]
    if cores > 1:
        out.append(c("core_balance", cb, f"the busiest of {cores} physical cores issues "
                     f"{busiest:.6g} of {s_c:,} instruction cycles (an even share is {s_c / cores:.6g})"))
    comb = f * pf * cf * ir * (cb if cores > 1 else 1.0)
    t_comb = busiest * cycle_s * slow
    out.append(Ceiling("combined", W / t_comb, t_comb,
                       f"product of the above: {count:,} instructions, the busiest core busy "
                       f"{busiest:.6g} cycles x {slow:g} ({dtype}) x {cycle_s:.4g} s", comb,
                       hw.mm_init_assumed))
    return out, p_ref, W, count, mean_c * cycle_s * slow, notes


# ---------------------------------------------------------------------------------------------
# PSUM and its evacuation


def _drain(stmts, i: int, tensor: str) -> int | None:
    """Index of the first statement after ``i`` that reads ``tensor`` out of PSUM (not an ACC)."""
    for j in range(i + 1, len(stmts)):
        if any(a.tensor == tensor and k != ACC for a, k in stmts[j][0].accesses()):
            return j
    return None


def _psum(kernel: Kernel, hw, split: Loop | None, cores: int, strict: bool):
    stmts = list(kernel.statements())
    bank = hw.psum_bank_bytes
    spans = []  # (start, end, banks)
    tile_banks = 0
    too_big: list[str] = []
    mm_out = set()
    for i, (stmt, loops) in enumerate(stmts):
        if not isinstance(stmt, Matmul):
            continue
        mm_out.add(stmt.out.tensor)
        r = matmul_roles(stmt, kernel)
        t = kernel.tensor_map[stmt.out.tensor]
        nt = full_extent(stmt.out, r.n_out, loops, t)
        banks = -(-nt * ACC_BYTES // bank)
        # a tile over several batch values holds one accumulator per value
        batch_tiles = math.prod(full_extent(stmt.out, o, loops, t) for _, _, o in r.batch)
        if banks > hw.psum_banks:
            too_big.append(f"{stmt.where()}: the accumulator tile of '{stmt}' has N_t = {nt} fp32 "
                           f"values per partition = {nt * ACC_BYTES:,} bytes, more than all "
                           f"{hw.psum_banks} PSUM banks of {bank:,} bytes")
        tile_banks = max(tile_banks, banks)
        j = _drain(stmts, i, stmt.out.tensor)
        end_loops = stmts[j][1] if j is not None else ()
        common = 0
        while common < min(len(loops), len(end_loops)) and loops[common] is end_loops[common]:
            common += 1
        outv = stmt.out.variables
        live = 1
        for l in loops[common:]:
            if l.var in outv:
                live *= -(-l.trips // l.split) if l is split else l.trips
        # a loop around the matmul that the drain is outside repeats with the tile still open:
        # from its second iteration on, every statement of its body runs beside the accumulator
        start = i if common == len(loops) else \
            next(p for p, (_, ls) in enumerate(stmts) if any(l is loops[common] for l in ls))
        live *= batch_tiles
        spans.append((start, j if j is not None else len(stmts), live, live * banks))
    # peak over program positions of the accumulators open at once (spans: matmul .. its drain)
    need, live_at_peak = max(((sum(b for s, e, _, b in spans if s <= p <= e),
                               sum(n for s, e, n, _ in spans if s <= p <= e))
                              for p in range(len(stmts))), default=(0, 0))
    # evacuation: every store of a matmul output, PSUM -> SBUF on an engine, and every execution
    # of an acc (its PSUM tile added into SBUF)
    elems = added = 0
    for stmt, loops in stmts:
        is_acc = isinstance(stmt, Accumulate)
        tile = stmt.src if is_acc else stmt.tile if isinstance(stmt, Store) else None
        if tile is None or tile.tensor not in mm_out:
            continue
        _, _, _, core, _ = executions(stmt, loops, (tile,), kernel, split)
        n = tile_elements(stmt, loops, tile, kernel, split)
        n *= cores if (split is not None and core is None) else 1
        elems += n
        added += n if is_acc else 0
    engine, t_evac, err = None, None, None
    for e in EVACUATION_ENGINES:
        try:
            t_evac = engine_seconds(hw, e, elems, "fp32")
        except HardwareError as ex:
            err = err or ex
            continue
        engine = e
        break
    if engine is None and elems and strict:
        raise HardwareError(f"--hardware {hw.name}: PSUM evacuation needs engines.vector or "
                            f"engines.scalar (clock_hz and width) on the sheet: {err}")
    return Psum(hw.psum_banks, bank, tile_banks, live_at_peak, need, elems, engine,
                t_evac, added, tuple(too_big))


# ---------------------------------------------------------------------------------------------


def compute(kernel: Kernel, hw, *, dtype: str, parallel: Parallel | None = None,
            link_bw: int | None = None, strict: bool = False) -> Ceilings:
    """The lower ceilings of ``kernel`` on ``hw`` for ``dtype``.

    ``strict``: a sheet lacking what a ceiling needs (an evacuation engine) is an error; otherwise
    that ceiling is left out with a note.
    """
    from loopsim.count.lnc import kernel_cores, split_loop

    split = split_loop(kernel)
    cores = kernel_cores(kernel)
    te, p_ref, W, count, inst_s, notes = _te_ceilings(kernel, hw, dtype, split, cores)
    ps = _psum(kernel, hw, split, cores, strict)
    out = list(te)
    if ps.engine is not None and ps.evacuated_elements:
        out.append(Ceiling(ps.engine, W / ps.T_evacuate if ps.T_evacuate else math.inf, ps.T_evacuate,
                           f"PSUM evacuation: {ps.evacuated_elements:,} output elements PSUM -> SBUF "
                           + (f"({ps.added_elements:,} of them added into SBUF accumulators) "
                              if ps.added_elements else "")
                           + f"at {hw.engine_roof(ps.engine, 'fp32'):.4g} elements/s; 0 HBM bytes"))
    elif ps.evacuated_elements:
        notes.append("no Vector or Scalar engine roof on the sheet: PSUM evacuation not costed")
    ln = None
    if parallel is not None:
        ln, c = link_ceiling(kernel, hw, parallel, link_bw, W)
        out.append(c)
    if hw.roofs == "measured":
        notes.append("ceilings are fractions of the spec Tensor Engine peak; the roofs are measured")
    notes.extend(n for n in getattr(kernel, "notes", ()) if n not in notes)
    work = _engine_work(kernel, hw, link_bw, notes)
    return Ceilings(dtype, p_ref, W, count, inst_s, cores,
                    split.var if split else None, tuple(out), ps, ln, tuple(notes), work)


def _engine_work(kernel: Kernel, hw, link_bw: int | None, notes: list) -> tuple:
    """Seconds of each :class:`loopsim.ir.ops.EngineWork` of ``kernel``: element-ops at the
    engine's roof (elements/s, fp32), link bytes at the link bandwidth; None (with a note) where
    the sheet has no such roof."""
    out = []
    for w in getattr(kernel, "work", ()):
        t = None
        if w.engine == "link":
            bw = link_bw if link_bw is not None else hw.link_bw
            if bw:
                t = w.link_bytes * w.executions / bw
            else:
                notes.append(f"{w.call} at {w.where}: {w.link_bytes * w.executions:,} link bytes not "
                             f"costed ({hw.name} has no link.bw; give --link-bw)")
        else:
            try:
                t = work_seconds(hw, w)
            except (HardwareError, KeyError) as e:
                notes.append(f"{w.call} at {w.where}: not costed ({e})")
        if w.assumed:
            notes.append(f"assumed: {w}")
        out.append((w, t))
    return tuple(out)
