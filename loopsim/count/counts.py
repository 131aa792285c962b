"""Trace + policy + SBUF capacity -> per-tensor HBM traffic, W and residency.

``as-written``: every executed load and store crosses the link, and a partial sum re-accumulated
after its tile was stored is read back; reuse is only what the nest states. ``lru`` and ``opt``
replay every tile request (loads, operand uses, stores) through a fully associative SBUF of the
given capacity: they answer what this loop order could reach with this much SBUF.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from loopsim.base.errors import CapacityError, SpecError
from loopsim.base.vocab import POLICIES  # as-written, lru, opt
from loopsim.ir.kernel import ACC, DTYPES, LOAD, STORE, USE, Accumulate, Kernel, Load, Loop, Matmul, Node, Store, walk
from loopsim.ir.tiles import accumulator_holds, batch_size, full_tile, matmul_roles, matmul_tile, span



@dataclass(frozen=True, slots=True)
class TensorCounts:
    """HBM traffic of one tensor, bytes."""

    name: str
    bytes: int
    read_bytes: int
    write_bytes: int
    output: bool

    @property
    def r(self) -> float:
        """Times each byte is read across the link (read bytes / tensor bytes)."""
        return self.read_bytes / self.bytes


@dataclass(frozen=True, slots=True)
class Residency:
    """Fast-memory occupancy against capacity. Costs are in the target's units: bytes per lane
    (per SBUF partition on NeuronCore, ``lanes`` of them) or bytes where ``lanes`` is None;
    ``*_bytes`` properties give whole-memory bytes."""

    peak_cost: int
    capacity_cost: int
    needed_cost: int
    lanes: int | None
    what: str  # "live buffers as written" or "simulated occupancy"

    @property
    def fits(self) -> bool:
        return self.peak_cost <= self.capacity_cost

    def _bytes(self, cost: int) -> int:
        return cost * (self.lanes or 1)

    @property
    def peak_bytes(self) -> int:
        return self._bytes(self.peak_cost)

    @property
    def capacity_bytes(self) -> int:
        return self._bytes(self.capacity_cost)

    @property
    def mode(self) -> str:
        return "per-partition" if self.lanes else "flat"

    def verdict(self) -> str:
        unit = " per partition" if self.lanes else ""
        if self.fits:
            return f"fits ({self.peak_cost:,} of {self.capacity_cost:,} bytes{unit})"
        return f"does not fit: needs {self.peak_cost:,} bytes{unit}, has {self.capacity_cost:,}"


@dataclass(frozen=True, slots=True)
class Counts:
    """What one kernel does and moves: W (FLOPs), per-tensor bytes across HBM, residency."""

    kernel: str
    policy: str
    flops: int
    instructions: int
    tensors: tuple[TensorCounts, ...]
    compulsory_bytes: int
    residency: Residency

    @property
    def Q(self) -> int:
        """Q: every crossing of the link, reads and writes, bytes."""
        return sum(t.read_bytes + t.write_bytes for t in self.tensors)

    @property
    def tensor_map(self) -> dict[str, TensorCounts]:
        return {t.name: t for t in self.tensors}


def shape_flops(kernel: Kernel) -> int:
    """W from the shapes: 2*M*N*K for every matmul statement, times the values of each index of
    one element (an expert's weights, ``w[e, k, m]``) that a loop not already walking K, M or N
    moves. An index moved only by loops that also walk K, M or N (``w[blk, k, m]`` beside tokens
    ``x[1024*blk + t, k]``, each block's tokens by its own expert's weights) is fixed by that
    (m, n, k): it adds no (m, n, k) of its own."""
    tm = kernel.tensor_map
    w = 0
    for stmt, loops in kernel.statements():
        if isinstance(stmt, Matmul):
            r = matmul_roles(stmt, kernel)
            a, b = tm[stmt.stationary.tensor], tm[stmt.moving.tensor]
            ops = (stmt.stationary, stmt.moving, stmt.out)
            walked = {v for acc, axis in ((stmt.stationary, r.k_stationary), (stmt.stationary, r.m_stationary),
                                          (stmt.moving, r.k_moving), (stmt.moving, r.n_moving))
                      for v, _ in acc.terms_of(axis)}
            w += 2 * span(stmt.stationary, r.k_stationary, loops, a) * \
                span(stmt.stationary, r.m_stationary, loops, a) * \
                span(stmt.moving, r.n_moving, loops, b) * batch_size(stmt, kernel) * \
                math.prod(span(ops[j], i, loops, tm[ops[j].tensor]) for j, i in r.unit
                          if not ({v for v, _ in ops[j].terms_of(i)} <= walked and ops[j].terms_of(i)))
    return w


def tile_reasons(kernel: Kernel, limits: dict[str, int], sheet: str) -> list[str]:
    """Why matmul tiles exceed a target's ``limits`` (:meth:`Target.tile_limits`: K_t, M_t, N_t by
    role), one line per tile and limit; empty when all are within them."""
    out = []
    for stmt, loops in kernel.statements():
        if not isinstance(stmt, Matmul):
            continue
        kt, mt, nt = matmul_tile(stmt, loops, kernel)
        for val, role, what in ((kt, "K", "stationary/moving partition size K_t"),
                                (mt, "M", "stationary free size M_t"),
                                (nt, "N", "moving free size N_t")):
            lim = limits.get(role)
            if lim and val > lim:
                out.append(f"{stmt.where()}: {what}={val} exceeds {sheet}'s limit of {lim} "
                           f"in '{stmt}'")
    return out


def check_tiles(kernel: Kernel, target) -> None:
    """Raise for the first reason ``target`` cannot run ``kernel`` (:meth:`Target.cannot_run`)."""
    bad = target.cannot_run(kernel)
    if bad:
        raise SpecError(f"{kernel.source or kernel.name}: {bad[0]}")


def capacity_units(hw, sbuf_bytes: int | None) -> int:
    """The fast-memory budget in the simulator's units: bytes per lane (``hw.lanes``), or bytes."""
    total = hw.sbuf_bytes if sbuf_bytes is None else sbuf_bytes
    if isinstance(total, bool) or not isinstance(total, int) or total <= 0:
        raise CapacityError(f"--sbuf-bytes={total!r} must be a positive integer")
    return total // hw.lanes if hw.lanes else total


def kernel_dtype(kernel: Kernel) -> str:
    """The dtype whose Tensor Engine roof applies: the widest matmul operand dtype (bf16 if none)."""
    tm = kernel.tensor_map
    dts = {tm[a.tensor].dtype for s, _ in kernel.statements() if isinstance(s, Matmul)
           for a in (s.stationary, s.moving)}
    if not dts:
        return "bf16"
    if "fp32" in dts:
        return "fp32"
    return max(dts, key=lambda d: (DTYPES[d], d == "bf16"))


def buffers_of(kernel: Kernel, tensor: str) -> int:
    """How many buffers a load of ``tensor`` inside a loop rotates through (1: one slot, the
    conventional tiled loop; 2: double buffering): the kernel's per-tensor count, else its ``*``
    default, else 1."""
    b = dict(kernel.buffers)
    return b.get(tensor, b.get("*", 1))


def live_peak(kernel: Kernel, target, op_outputs: bool = True) -> int:
    """Peak SBUF cost of the buffers the nest holds as written (see :func:`live_buffers`)."""
    return live_buffers(kernel, target, op_outputs)[0]


def live_buffers(kernel: Kernel, target,
                 op_outputs: bool = True) -> tuple[int, tuple[tuple[str, int], ...]]:
    """Peak SBUF cost of the buffers the nest holds as written, and the buffers live at that peak
    as (tensor, cost) pairs, largest first. A loaded (or staged) tile lives until the end of the
    body of the loop at whose level its statement sits; a load inside a loop takes as many slots
    as it rotates through (:func:`buffers_of`). A store stages its tile (PSUM -> SBUF) unless an
    op already made that tensor in SBUF, where the DMA reads it. ``op_outputs=False`` leaves out
    the tiles ops make on chip (counted by their live ranges elsewhere,
    :func:`loopsim.count.stages.produced_peak`). Costs: ``target.tile_cost`` (bytes per partition on NeuronCore)."""
    tm = kernel.tensor_map
    on_chip = {a.tensor for s, _ in kernel.statements()
               for a in getattr(s, "sbuf_outputs", lambda: ())()}
    on_chip |= {s.out.tensor for s, _ in kernel.statements() if isinstance(s, Accumulate)}

    def cost(stmt, loops) -> list[tuple[str, int]]:
        if isinstance(stmt, Store) and stmt.tile.tensor in on_chip:
            return []
        if isinstance(stmt, (Load, Store)):
            t = tm[stmt.tile.tensor]
            c = target.tile_cost(full_tile(stmt.tile, loops, t), t)
            if isinstance(stmt, Load) and loops:
                c *= buffers_of(kernel, t.name)
            return [(t.name, c)]
        if not op_outputs:
            return []
        return [(a.tensor, target.tile_cost(full_tile(a, loops, tm[a.tensor]), tm[a.tensor]))
                for a in getattr(stmt, "sbuf_outputs", lambda: ())()]

    held = accumulator_holds(kernel, target) if op_outputs else {}  # SBUF sums of ``acc``

    def acc_tensor(node) -> str:
        """The SBUF accumulator a held node stands for (the first ``acc`` in it)."""
        if isinstance(node, Accumulate):
            return node.out.tensor
        return next(n.out.tensor for n, _ in walk(node.body) if isinstance(n, Accumulate))

    best: list = [0, ()]

    def peak(body: tuple[Node, ...], loops, live: list[tuple[str, int]], cur: int) -> None:
        live = list(live)
        for node in body:
            if id(node) in held:
                live.append((acc_tensor(node), held[id(node)]))
                cur += held[id(node)]
            if isinstance(node, Loop):
                peak(node.body, loops + (node,), live, cur)
            else:
                for item in cost(node, loops):
                    live.append(item)
                    cur += item[1]
                if cur > best[0]:
                    best[0], best[1] = cur, tuple(live)

    peak(kernel.body, (), [], 0)
    merged: dict[str, int] = {}
    for name, c in best[1]:
        merged[name] = merged.get(name, 0) + c
    return best[0], tuple(sorted(merged.items(), key=lambda kv: (-kv[1], kv[0])))


def working_set(kernel: Kernel, target) -> int:
    """SBUF cost one compute instruction needs at once: the SBUF tiles it reads and writes."""
    tm = kernel.tensor_map
    need = 0
    for stmt, loops in kernel.statements():
        if isinstance(stmt, (Load, Store)):
            continue  # DMA moves blocks; the largest block is checked against the trace
        # an acc reads its source from PSUM and updates one SBUF tile in place
        accs = ((stmt.out, USE),) if isinstance(stmt, Accumulate) else stmt.accesses()
        need = max(need, sum(target.tile_cost(full_tile(a, loops, tm[a.tensor]), tm[a.tensor])
                             for a, k in accs if k != ACC))
    return need


#: traces up to this many request slots are built whole (then replayed or counted); longer ones
#: are generated and replayed in chunks (:mod:`loopsim.sim.stream`), in bounded memory
STREAM_ABOVE = 1 << 24


def count(kernel: Kernel, *, policy: str = "as-written", capacity: int,
          target, trace=None, chunk: int | None = None,
          replay: bool = False) -> Counts:
    """Count the kernel's HBM traffic and W (:func:`_count`); W adds the FLOPs of the matmuls
    a traced kernel keeps as Tensor Engine work (:attr:`loopsim.ir.ops.EngineWork.flops`)."""
    c = _count(kernel, policy=policy, capacity=capacity, target=target, trace=trace, chunk=chunk,
               replay=replay)
    return with_work_flops(c, kernel)


def with_work_flops(c: Counts, kernel: Kernel) -> Counts:
    """``c`` with the FLOPs of ``kernel``'s engine work (matmuls outside the nest) in W."""
    extra = sum(w.flops for w in getattr(kernel, "work", ()))
    return replace(c, flops=c.flops + extra) if extra else c


def _count(kernel: Kernel, *, policy: str = "as-written", capacity: int,
           target, trace=None, chunk: int | None = None,
           replay: bool = False) -> Counts:
    """Count the kernel's HBM traffic: as written from the closed form where it claims the nest,
    else (or with ``replay=True``, or for ``lru``/``opt``) by replaying its trace.

    ``capacity``: fast-memory budget in ``target``'s cost units (bytes per partition on
    NeuronCore, bytes on a flat target; :func:`capacity_units`); ``target`` prices each tile. ``trace``: a prebuilt :class:`loopsim.sim.trace.Trace` (else built here). ``chunk``:
    generate and replay the trace ``chunk`` requests at a time (default: whole when it has at
    most :data:`STREAM_ABOVE` request slots, else in chunks); the counts are the same either way.
    ``replay``: count as written from the trace even where the closed form claims the nest (the
    two agree; tests compare them).
    """
    from loopsim.sim import trace as trace_mod

    if policy not in POLICIES:
        raise SpecError(f"policy={policy!r} is not known; known: {', '.join(POLICIES)}")
    lanes = target.lanes
    unit = "bytes per partition" if lanes else "bytes"

    def check_capacity(max_cost: int) -> int:
        need = max(working_set(kernel, target), max_cost)
        if capacity < need and policy != "as-written":  # as written: a verdict (cannot run), not an error
            raise CapacityError(
                f"SBUF capacity {capacity:,} {unit} cannot hold one instruction's working tiles of "
                f"{kernel.name}: needs {need:,} {unit}" +
                (f" ({need * lanes:,} bytes over {lanes} partitions)" if lanes else ""))
        return need

    if policy == "as-written" and trace is None and chunk is None and not replay:
        fast = _closed_form(kernel, target, capacity, check_capacity)
        if fast is not None:
            return fast
    tr = trace
    nest = None
    if tr is None:
        nest = trace_mod.compile_nest(kernel)
        if chunk is None and nest.slots <= STREAM_ABOVE:
            tr = trace_mod.build(kernel, nest)
    src = tr if tr is not None else nest
    cost = src.object_cost(target)
    need = check_capacity(int(cost.max()))
    w_shapes = shape_flops(kernel)
    if tr is not None:
        _check_flops(kernel, tr.flops, w_shapes)
        flops, instructions = tr.flops, tr.instructions
        n_obj = tr.obj_bytes.size
        if policy == "as-written":
            reads = np.bincount(tr.obj[(tr.kind == LOAD) | (tr.kind == ACC)], minlength=n_obj)
            writes = np.bincount(tr.obj[tr.kind == STORE], minlength=n_obj)
            peak = live_peak(kernel, target)
        else:
            from loopsim.sim import replay as replay_trace

            rep = replay_trace(tr.obj, tr.write, cost, capacity, policy, size=tr.obj_bytes,
                         dead=tr.dead)  # on-chip intermediates freed after last use
            reads, writes, peak = rep.fetches, rep.writebacks, rep.peak_cost
    else:
        from loopsim.sim.stream import stream

        s = stream(nest, policy, cost, capacity, chunk)
        _check_flops(kernel, s.flops, w_shapes)
        flops, instructions = s.flops, s.instructions
        reads, writes = s.reads, s.writes
        peak = live_peak(kernel, target) if s.peak_cost is None else s.peak_cost
    rb = src.bytes_per_tensor(reads)
    wb = src.bytes_per_tensor(writes)
    tensors = tuple(TensorCounts(t.name, t.bytes, rb[t.name], wb[t.name], t.output)
                    for t in kernel.tensors)
    res = Residency(peak, capacity, need, lanes,
                    "live buffers as written" if policy == "as-written" else "simulated occupancy")
    return Counts(kernel.name, policy, flops, instructions, tensors,
                  kernel.compulsory_bytes, res)


def _closed_form(kernel: Kernel, target, capacity: int, check_capacity) -> Counts | None:
    """As-written counts from :func:`loopsim.count.written.as_written_counts`, or None where it does not
    claim the nest or its FLOPs differ from the shapes' (the trace then says why)."""
    from loopsim.count.written import as_written_counts
    from loopsim.sim.trace import max_object_cost

    f = as_written_counts(kernel)
    if f is None or f.flops != shape_flops(kernel):
        return None
    need = check_capacity(max_object_cost(kernel, target))
    tensors = tuple(TensorCounts(t.name, t.bytes, *f.bytes[t.name], t.output) for t in kernel.tensors)
    res = Residency(live_peak(kernel, target), capacity, need, target.lanes, "live buffers as written")
    return Counts(kernel.name, "as-written", f.flops, f.instructions, tensors,
                  kernel.compulsory_bytes, res)


def _check_flops(kernel: Kernel, flops: int, w_shapes: int) -> None:
    if flops != w_shapes:
        raise SpecError(
            f"{kernel.source or kernel.name}: the nest's matmul instructions do {flops:,} FLOPs "
            f"but the shapes imply 2*M*N*K = {w_shapes:,}: the loops must cover every (m, n, k) "
            "exactly once")
