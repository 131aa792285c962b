"""DMA: the kernel's transfers as the DMA engines see them, and the memory-side ceiling they set.

Every executed ``load`` (HBM -> SBUF) and ``store`` (SBUF -> HBM) of the nest, as written, is one
DMA transfer (one ``dma_copy``; the hardware splits it into packets over the core's 16 engines).
A matmul that accumulates again into an output tile stored before (a store inside the reduction
loop) reads the partial sum back: one more transfer per block read back, found by building the
trace (only for such nests); on a split kernel those bytes are shared evenly among the cores.
For each transfer: its bytes and its *bytes per partition* (the free bytes each SBUF partition
receives: ceil(rows / partitions) × free elements × element bytes, the sheet's tile cost
(:meth:`loopsim.targets.neuron.sheet.NeuronCore.tile_cost`;
the whole transfer on a sheet without partitions). Ragged edge tiles have their real sizes.

The ceiling ``T = bytes / dma_bw``: all DMA bytes at the aggregate bandwidth of the scope's DMA
engines (the sheet's ``dma.bw``, sourced per sheet). A kernel split across physical cores (LNC)
takes the busiest core: max over cores of its bytes / one core's DMA bandwidth. No derating: the
sources give efficiency-vs-size guidance as thresholds, not as a rate, so the ceiling is the
undisturbed peak and the report says how many bytes move in transfers the guidance calls slow.

Size guidance (hardware-sources.md §5.3), bytes per partition per transfer, from [S11] "Guideline
to Avoid Under-Utilizing DMA Bandwidth": below 256 B "Severely overhead-bound"; 256 B to 2 KiB
"Improving but still below peak"; from 2 KiB "(minimum recommended): Approaches peak bandwidth";
from 4 KiB "(target for full saturation)". :data:`BANDS` holds them.

``estimate_s`` is *not* a bound: the same bytes at the relative throughput of the sheet's
``[dma] throughput`` curve (sheet data with its source: on the bundled sheets the bar heights of
the figure "DMA Throughput varying Bytes per Partition for p_dim = 128" in [S10] "Introduction to
DMA with NKI", which has no y-axis numbers and names no generation; hardware-sources.md §5.3 reads
32 B 1.6% ... 2 KiB 81.5%, 4 KiB 96.5%, 32 KiB 100%, assuming the axis starts at 0), interpolated
linearly in log2(bytes per partition), 100% past the last point and proportional below the first;
None on a sheet without the curve. It says how far small transfers could pull a kernel below the ceiling.

Examples
--------
>>> from loopsim.frontends import spec
>>> from loopsim.targets import hardware
>>> r = report(spec.load_kernel("matmul"), hardware.load("trn2-core"))
>>> r.transfers, r.bytes     # 8*2*8 A tiles + 8*2*8 B tiles + 8*2 C tiles
(272, 23068672)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from loopsim.ir.kernel import ACC, Kernel, Load, Loop, Matmul, Store
from loopsim.count.executions import executions
from loopsim.ir.tiles import grids, loop_edges

#: (upper bound in bytes per partition, exclusive; name; the guidance's words) — [S11]
BANDS: tuple[tuple[float, str, str], ...] = (
    (256, "<256B", "Severely overhead-bound"),
    (2048, "256B-2KiB", "Improving but still below peak"),
    (4096, "2KiB-4KiB", "Approaches peak bandwidth (minimum recommended)"),
    (math.inf, ">=4KiB", "target for full saturation"),
)
#: bytes per partition below which the guidance says a transfer runs below peak [S11]
SMALL = 2048
BANDS_SOURCE = "[S11] Guideline to Avoid Under-Utilizing DMA Bandwidth (hardware-sources.md §5.3)"

def relative_throughput(bytes_per_partition: float, curve) -> float:
    """Throughput relative to peak by transfer size, from a sheet's ``dma_curve`` ((bytes per
    partition, relative) points; see the module docstring), in (0, 1]."""
    xs = [b for b, _ in curve]
    ys = [y for _, y in curve]
    if bytes_per_partition >= xs[-1]:
        return 1.0
    if bytes_per_partition <= xs[0]:
        return ys[0] * max(bytes_per_partition, 1) / xs[0]
    return float(np.interp(math.log2(bytes_per_partition), np.log2(xs), ys))


@dataclass(frozen=True, slots=True)
class Statement:
    """One load/store statement's transfers: ``transfers`` executions moving ``bytes`` bytes."""

    text: str  # the statement as written ("load A[k, m]")
    line: int
    direction: str  # "load" (HBM -> SBUF) or "store" (SBUF -> HBM)
    transfers: int
    bytes: int
    partition_bytes: tuple[tuple[int, int], ...]  # (bytes per partition, transfers), ascending

    def as_dict(self) -> dict:
        return {"statement": self.text, "line": self.line, "direction": self.direction,
                "transfers": self.transfers, "bytes": self.bytes,
                "bytes_per_partition": [{"bytes": b, "transfers": n} for b, n in self.partition_bytes]}


@dataclass(frozen=True, slots=True)
class DmaReport:
    """The kernel's DMA transfers and ceiling. Bytes are exact ints, times in seconds.

    ``T`` = bytes / dma_bw (busiest core for a split kernel); None when the sheet has no DMA
    bandwidth. ``estimate_s`` is the figure-derived small-transfer estimate (not a bound).
    """

    kernel: str
    hardware: str
    transfers: int
    bytes: int
    statements: tuple[Statement, ...]
    partition_bytes: tuple[tuple[int, int, int], ...]  # (bytes/partition, transfers, bytes) ascending
    dma_bw: int | None  # bytes/s of the scope
    T: float | None
    estimate_s: float | None
    estimate_source: str  # where the sheet's dma.throughput curve comes from ("" without one)
    cores: int
    busiest_core_bytes: int | float  # a float only when shared read-backs do not divide evenly
    transposed_bytes: int = 0  # bytes moved by DMA transposes (at the sheet's transpose rate in T)

    def band(self) -> tuple[tuple[str, str, int, int], ...]:
        """Per :data:`BANDS` entry: (name, guidance, transfers, bytes)."""
        out, lo = [], 0
        for hi, name, words in BANDS:
            sel = [(n, b) for s, n, b in self.partition_bytes if lo <= s < hi]
            out.append((name, words, sum(n for n, _ in sel), sum(b for _, b in sel)))
            lo = hi
        return tuple(out)

    @property
    def small_bytes(self) -> int:
        """Bytes moved in transfers below :data:`SMALL` bytes per partition."""
        return sum(b for s, _, b in self.partition_bytes if s < SMALL)

    @property
    def small_share(self) -> float:
        """small_bytes / bytes (0 when nothing moves)."""
        return self.small_bytes / self.bytes if self.bytes else 0.0

    def as_dict(self) -> dict:
        return {
            "kernel": self.kernel, "hardware": self.hardware, "transfers": self.transfers,
            "bytes": self.bytes, "dma_bw": self.dma_bw, "T_dma": self.T, "cores": self.cores,
            "busiest_core_bytes": self.busiest_core_bytes,
            "small_threshold_bytes_per_partition": SMALL, "small_bytes": self.small_bytes,
            "small_share": self.small_share,
            "bands": [{"band": n, "guidance": w, "transfers": t, "bytes": b}
                      for n, w, t, b in self.band()],
            "bands_source": BANDS_SOURCE,
            "bytes_per_partition": [{"bytes": s, "transfers": n, "total_bytes": b}
                                    for s, n, b in self.partition_bytes],
            "small_transfer_estimate_s": self.estimate_s,
            "small_transfer_estimate_source": self.estimate_source,
            "statements": [s.as_dict() for s in self.statements],
        }

    def lines(self, fmt_time=lambda s: f"{s:.4g} s") -> list[str]:
        """Readable lines (``fmt_time`` formats seconds; the renderer passes its own)."""
        out = [f"DMA: {self.transfers:,} transfers, {self.bytes:,} bytes"]
        if self.T is not None and self.cores > 1:
            per_core = self.busiest_core_bytes / self.T
            out.append(f"  T_dma = busiest core's {self.busiest_core_bytes:,} bytes / one core's DMA "
                       f"bandwidth {per_core / 1e9:.4g} GB/s = {fmt_time(self.T)} "
                       f"({self.cores} cores, {self.dma_bw / 1e9:.4g} GB/s in all)")
        elif self.T is not None:
            out.append(f"  T_dma = bytes / DMA bandwidth {self.dma_bw / 1e9:.4g} GB/s = "
                       f"{fmt_time(self.T)}")
        else:
            out.append(f"  no DMA bandwidth on {self.hardware}: no T_dma")
        out.append(f"  bytes per partition per transfer ({BANDS_SOURCE}):")
        for name, words, n, b in self.band():
            share = b / self.bytes if self.bytes else 0.0
            out.append(f"    {name:<10} {n:>12,} transfers {b:>16,} bytes {share:>7.1%}  {words}")
        if self.estimate_s is not None and self.small_bytes:
            out.append(f"  {self.small_share:.1%} of bytes move below {SMALL} B per partition; "
                       f"at the throughput the [S10] figure shows for their sizes they would take "
                       f"{fmt_time(self.estimate_s)} (an estimate, not a bound)")
        return out


def _executions(stmt, loops: tuple[Loop, ...], kernel: Kernel, edges: dict, hw, cores: Loop | None):
    """(bytes per partition, bytes, transfers, core) arrays over one statement's executions
    (:func:`loopsim.count.executions.executions`, grouped: each cell stands for ``transfers``
    executions); ``cores``: the core loop of a split kernel's :func:`loopsim.count.lnc.cores_nest`,
    else None (core 0)."""
    acc = stmt.tile
    t = kernel.tensor_map[acc.tensor]
    ext, exists, weight, core, shape = executions(stmt, loops, (acc,), kernel, cores, edges, grouped=True)
    ext = ext[id(acc)]
    core = np.zeros(shape, dtype=np.int64) if core is None else np.broadcast_to(core, shape)
    weight = np.broadcast_to(weight, shape)
    pp_o, nb_o, w_o, c_o = [], [], [], []
    for axes, n in transfer_parts(ext, getattr(stmt, "chunks", lambda _: ())(t.partition_axis), shape):
        keep = exists & (n > 0)
        nb = np.ones(shape, dtype=np.int64) * t.elem_bytes
        for e in axes:
            nb = nb * e
        per_part = np.broadcast_to(np.asarray(hw.tile_cost(list(axes), t), dtype=np.int64), shape)
        pp_o.append(per_part[keep])
        nb_o.append(nb[keep])
        w_o.append((weight * n)[keep])
        c_o.append(core[keep])
    return tuple(np.concatenate(x) for x in (pp_o, nb_o, w_o, c_o))


def transfer_parts(ext, chunk: tuple[int, ...], shape):
    """The transfers one execution of a load makes: (extents per axis, transfers of that shape)
    pairs of arrays broadcast over the executions. ``chunk``: :meth:`Load.chunks` (() one transfer
    of the tile); a chunked axis of extent E gives E // c transfers of c and one of E % c."""
    parts = [(list(ext), np.ones(shape, dtype=np.int64))]
    for axis, c in enumerate(chunk):
        if not c:
            continue
        nxt = []
        for axes, n in parts:
            e = np.broadcast_to(axes[axis], shape)
            full, rest = axes.copy(), axes.copy()
            full[axis], rest[axis] = np.minimum(e, c), e % c
            nxt += [(full, n * (e // c)), (rest, n * (e % c > 0))]
        parts = nxt
    return parts


def _dot(a: np.ndarray, b: np.ndarray) -> int:
    """Exact sum(a * b) of non-negative int64 arrays (``b`` broadcast): in int64 when it cannot
    overflow, else in Python ints."""
    if not a.size:
        return 0
    if int(a.max()) * int(b.max()) * a.size < 2**63:
        return int((a * b).sum(dtype=np.int64))
    return sum(int(x) * int(y) for x, y in zip(a, np.broadcast_to(b, a.shape)))


def report(kernel: Kernel, hw) -> DmaReport:
    """Every load/store execution of ``kernel`` as a DMA transfer, against ``hw``'s DMA bandwidth.

    A kernel split across physical cores (``[lnc]``) is enumerated per core (each core runs its
    share of the split loop and every statement outside it); ``T`` is then the busiest core's
    bytes over one core's DMA bandwidth.
    """
    from loopsim.count import lnc

    split = lnc.split_loop(kernel)
    cores = split.split if split is not None else 1
    k = lnc.cores_nest(kernel) if split is not None else kernel
    core_loop = k.body[0] if split is not None else None  # cores_nest: ``for c in CORES*S by S``
    edges = loop_edges(k)
    per_stmt, sizes, nbytes_all, weights, core_all = [], [], [], [], []
    slowdown = hw.dma_transpose_slowdown() if hasattr(hw, "dma_transpose_slowdown") else 1.0
    extra: dict[int, float] = {}  # core (-1 all) -> bytes a DMA transpose's slower rate adds
    extra_slow = 0.0  # the same, at the rate each transfer's size reaches
    transposed = 0
    curve = getattr(hw, "dma_curve", ())
    for (stmt, loops), (orig, _) in zip(k.statements(), kernel.statements()):
        if not isinstance(stmt, (Load, Store)):
            continue
        pp, nb, w, core = _executions(stmt, loops, k, edges, hw, core_loop)
        if getattr(stmt, "transpose", False):
            transposed += _dot(nb, w)
        if getattr(stmt, "transpose", False) and slowdown != 1.0:
            for c in np.unique(core).tolist():
                extra[c] = extra.get(c, 0.0) + _dot(nb[core == c], w[core == c]) * (slowdown - 1)
            if curve:
                extra_slow += sum(int(b) * int(x) * (slowdown - 1) / relative_throughput(int(s), curve)
                                  for s, b, x in zip(pp, nb, w))
        vals, inv = np.unique(pp, return_inverse=True)
        counts = np.zeros(vals.size, dtype=np.int64)
        np.add.at(counts, inv.ravel(), w)
        dist = tuple((int(v), int(c)) for v, c in zip(vals, counts))
        total = _dot(nb, w)
        n = _dot(w, np.ones(1, dtype=np.int64))
        per_stmt.append(Statement(str(orig), orig.line, "load" if isinstance(stmt, Load) else "store",
                                  n, total, dist))
        sizes.append(pp)
        nbytes_all.append(nb)
        weights.append(np.ascontiguousarray(w, dtype=np.int64))
        core_all.append(core)
    if sizes:
        pp = np.concatenate(sizes)
        nb = np.concatenate(nbytes_all)
        wt = np.concatenate(weights)
        co = np.concatenate(core_all)
    else:
        pp = nb = wt = co = np.zeros(0, dtype=np.int64)
    ps = _partial_sums(k, hw)
    if ps is not None:
        per_stmt.append(ps[0])
        pp, nb, wt = np.concatenate([pp, ps[1]]), np.concatenate([nb, ps[2]]), np.concatenate([wt, ps[3]])
        co = np.concatenate([co, np.full(ps[1].size, -1, dtype=np.int64)])  # -1: shared evenly
    vals, inv = np.unique(pp, return_inverse=True)
    dist = []
    for i, v in enumerate(vals.tolist()):
        sel = inv == i
        dist.append((int(v), _dot(wt[sel], np.ones(1, dtype=np.int64)), _dot(nb[sel], wt[sel])))
    total = sum(s.bytes for s in per_stmt)
    shared = _dot(nb[co == -1], wt[co == -1])
    by_core = [_dot(nb[co == c], wt[co == c]) for c in range(cores)]
    busiest = max(by_core) + (shared // cores if shared % cores == 0 else shared / cores)
    bw = getattr(hw, "dma_bw", None)
    T = est = None
    if bw:
        # a DMA transpose moves its bytes at the sheet's transpose rate: counted as the copy bytes
        # that would take as long (bytes x the slowdown), in the time only
        if cores > 1 and cores == hw.physical_cores:
            T = (max(b + extra.get(c, 0.0) for c, b in enumerate(by_core)) + shared / cores
                 if extra else busiest) / (bw / hw.physical_cores)
        else:
            T = (total + sum(extra.values())) / bw
        if curve:
            slow = sum(b / relative_throughput(s, curve) for s, _, b in dist)  # full-speed equivalent
            est = T * (slow + extra_slow) / (total + sum(extra.values())) if total else 0.0
    return DmaReport(kernel.name, hw.name, sum(s.transfers for s in per_stmt), total, tuple(per_stmt),
                     tuple(dist), bw, T, est, getattr(hw, "dma_curve_source", ""), cores, busiest,
                     transposed)


def _partial_sums(k: Kernel, hw):
    """(Statement, bytes per partition, bytes, weights) of the partial-sum read-backs (each block
    read back ``weight`` times), or None when the nest stores no matmul output inside a loop the
    store does not index (then there are none)."""
    outs = {s.out.tensor for s, _ in k.statements() if isinstance(s, Matmul)}
    if not any(isinstance(s, Store) and s.tile.tensor in outs
               and any(l.var not in s.tile.variables for l in loops) for s, loops in k.statements()):
        return None
    from loopsim.count.readback import read_backs

    found = read_backs(k)
    if found is None:  # too many executions to enumerate: the trace's ACC requests
        from loopsim.sim import trace as trace_mod

        tr = trace_mod.build(k)
        objs, counts = np.unique(tr.obj[tr.kind == ACC], return_counts=True)
        objs, counts = objs.astype(np.int64), counts.astype(np.int64)
    else:
        objs, counts = found
    if not objs.size:
        return None
    gs = grids(k)
    nbytes = np.zeros(objs.size, np.int64)
    per_part = np.zeros(objs.size, np.int64)
    for g in gs.values():
        inside = (objs >= g.offset) & (objs < g.offset + g.n_blocks)
        if not inside.any():
            continue
        coords = np.unravel_index(objs[inside] - g.offset, g.counts)
        ext = [np.where(c == n - 1, d - b * c, b) for c, n, d, b in zip(coords, g.counts, g.tensor.shape, g.block)]
        nbytes[inside] = math.prod(ext) * g.tensor.elem_bytes
        per_part[inside] = hw.tile_cost(ext, g.tensor)
    vals, inv = np.unique(per_part, return_inverse=True)
    dist = [_dot(counts[inv == j], np.ones(1, dtype=np.int64)) for j in range(vals.size)]
    st = Statement("partial-sum read-backs (matmul accumulating into a stored tile)", 0, "load",
                   _dot(counts, np.ones(1, dtype=np.int64)), _dot(nbytes, counts),
                   tuple(zip(vals.tolist(), dist)))
    return st, per_part, nbytes, counts
