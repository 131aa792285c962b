"""Kernel -> tile-access trace, built vectorised (no Python loop per access).

Positions by mixed radix: the number of event slots in one iteration of each loop body is known
from the tiles, so the slot of statement s at iterations (i1, ..., ij) is
``sum(i_k * slots(body_k)) + offsets``. Each statement's executions are a Cartesian product that
numpy broadcasting generates at once and scatters into one preallocated array. Object ids are dense
by construction: a tensor's first id plus the linear index of the block in its grid. Slots of
ragged edges (tiles or blocks beyond the tensor's edge) are masked out.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .errors import SpecError, TraceTooLarge
from .ir import ACC, LOAD, Accumulate, PRODUCE, STORE, USE, Kernel, Loop, Matmul, Node, Statement, WRITE_KINDS
from .tiles import Grid, full_extent, grids, loop_edges, matmul_roles

#: refuse traces beyond this many slots (memory: ~17 bytes a slot while building)
MAX_SLOTS = 400_000_000


@dataclass(frozen=True, slots=True)
class Trace:
    """Time-ordered tile accesses of one kernel, and the table of objects (blocks) they touch.

    ``obj`` int64[n] object ids; ``kind`` int8[n] event kinds (ir.LOAD ... ir.ACC; ACC events kept
    are partial-sum reads only); ``obj_bytes`` int64[n_objects] bytes of each block in HBM;
    ``obj_tensor`` int32[n_objects] index into ``tensor_names``; ``flops`` the matmul instructions'
    FLOPs, counted from the tiles they really cover; ``instructions`` their number. ``dead``
    bool[n] or None: the request is the last use of an on-chip intermediate (made by an op in
    this kernel, never stored), after which the replay frees it without a write-back.
    """

    obj: np.ndarray
    kind: np.ndarray
    obj_bytes: np.ndarray
    obj_tensor: np.ndarray
    tensor_names: tuple[str, ...]
    grids: dict
    flops: int
    instructions: int
    dead: np.ndarray | None = None

    @property
    def n(self) -> int:
        return int(self.obj.size)

    @property
    def write(self) -> np.ndarray:
        """bool[n]: the request overwrites its object (no fetch on a miss)."""
        return np.isin(self.kind, WRITE_KINDS)

    def bytes_per_tensor(self, per_object_count: np.ndarray) -> dict[str, int]:
        """Bytes per tensor of ``per_object_count[i]`` transfers of each object (exact Python ints:
        int64 arithmetic where it cannot overflow, Python integers where it could)."""
        counts = np.asarray(per_object_count, dtype=np.int64)
        out = {}
        for name in self.tensor_names:
            g: Grid = self.grids[name]
            c = counts[g.offset:g.offset + g.n_blocks]
            b = self.obj_bytes[g.offset:g.offset + g.n_blocks]
            if c.size and int(c.max()) * int(b.max()) * c.size >= 2**63:
                out[name] = sum(x * y for x, y in zip(c.tolist(), b.tolist()))
            else:
                out[name] = int(np.dot(c, b))
        return out

    def object_cost(self, partitions: int | None) -> np.ndarray:
        """int64[n_objects]: SBUF cost of each block (bytes per partition, or bytes if flat)."""
        return np.concatenate([_block_cost(self.grids[n], partitions) for n in self.tensor_names])


def _block_extents(g: Grid) -> list[np.ndarray]:
    """Per dimension, the extent of each block (the last may be ragged)."""
    out = []
    for d, b, c in zip(g.tensor.shape, g.block, g.counts):
        e = np.full(c, b, dtype=np.int64)
        e[-1] = d - b * (c - 1)
        out.append(e)
    return out


def _outer_prod(vectors: list[np.ndarray]) -> np.ndarray:
    out = np.ones(1, dtype=np.int64)
    for v in vectors:
        out = np.multiply.outer(out, v).ravel()
    return out


def _block_bytes(g: Grid) -> np.ndarray:
    return _outer_prod(_block_extents(g)) * g.tensor.elem_bytes


def _block_cost(g: Grid, partitions: int | None) -> np.ndarray:
    ext = _block_extents(g)
    if partitions:
        ax = g.tensor.partition_axis
        ext = [(-(-e // partitions)) if a == ax else e for a, e in enumerate(ext)]
    return _outer_prod(ext) * g.tensor.elem_bytes


def _slots(node: Node, nfull: dict, memo: dict) -> int:
    """Event slots of one execution of ``node`` (a loop: all its iterations)."""
    key = id(node)
    if key not in memo:
        if isinstance(node, Loop):
            n = node.trips * sum(_slots(c, nfull, memo) for c in node.body)
        else:
            n = sum(math.prod(nfull[id(a)]) for a, _ in node.accesses())
        memo[key] = n
    return memo[key]


def build(kernel: Kernel) -> Trace:
    """Expand the kernel's nest into its trace. Raises SpecError if the trace is too large."""
    gs = grids(kernel)
    tmap = kernel.tensor_map
    # blocks per full tile, per dimension, of every access (extents are multiples of blocks)
    nfull = {id(acc): tuple(-(-full_extent(acc, a, loops, tmap[acc.tensor]) // gs[acc.tensor].block[a])
                            for a in range(len(acc.index)))
             for stmt, loops in kernel.statements() for acc, _ in stmt.accesses()}
    memo: dict = {}
    total = sum(_slots(n, nfull, memo) for n in kernel.body)
    if total > MAX_SLOTS:
        raise TraceTooLarge(f"{kernel.source or kernel.name}: the nest expands to {total:,} tile "
                        f"accesses, more than loopsim replays ({MAX_SLOTS:,}); use larger tiles "
                        "or smaller dimensions")
    OBJ = np.zeros(total, dtype=np.int64)
    KIND = np.zeros(total, dtype=np.int8)
    VALID = np.zeros(total, dtype=bool)
    flops = 0
    instructions = 0

    def visit(body: tuple[Node, ...], loops: tuple[Loop, ...], strides: tuple[int, ...], base: int):
        nonlocal flops, instructions
        off = base
        for node in body:
            if isinstance(node, Loop):
                per_iter = sum(_slots(c, nfull, memo) for c in node.body)
                visit(node.body, loops + (node,), strides + (per_iter,), off)
            else:
                f, n = _emit(node, loops, strides, off, kernel, gs, nfull, edges, OBJ, KIND, VALID)
                flops += f
                instructions += n
            off += _slots(node, nfull, memo)

    edges = loop_edges(kernel)
    visit(kernel.body, (), (), 0)
    obj, kind = OBJ[VALID], KIND[VALID]
    del OBJ, KIND, VALID
    names = tuple(t.name for t in kernel.tensors)
    obj, kind = _keep_partial_sums(obj, kind, sum(gs[n].n_blocks for n in names))
    obj, kind = _memset_first_sums(kernel, obj, kind, gs)
    obj_bytes = np.concatenate([_block_bytes(gs[n]) for n in names])
    obj_tensor = np.concatenate([np.full(gs[n].n_blocks, i, dtype=np.int32)
                                 for i, n in enumerate(names)])
    obj, kind, dead = _on_chip(kernel, obj, kind, obj_tensor, names)
    return Trace(obj, kind, obj_bytes, obj_tensor, names, gs, flops, instructions, dead)


def _emit(stmt: Statement, loops, strides, base, kernel, gs, nfull, edges, OBJ, KIND, VALID
          ) -> tuple[int, int]:
    """Scatter one statement's events; return (FLOPs, instruction count) if it is a matmul."""
    nl = len(loops)
    tmap = kernel.tensor_map
    shape_l = tuple(l.trips for l in loops)
    ivals = {}
    pos = np.full((1,) * nl, base, dtype=np.int64)
    for k, (l, s) in enumerate(zip(loops, strides)):
        shp = [1] * nl
        shp[k] = l.trips
        i = np.arange(l.trips, dtype=np.int64).reshape(shp)
        ivals[l.var] = i * l.step
        pos = pos + i * s
    starts = {}
    exists = np.ones((1,) * nl, dtype=bool)
    for l in loops:  # iterations of blocked loops past a tensor's edge do not run at all
        if id(l) in edges:
            terms, extent = edges[id(l)]
            exists = exists & (sum(ivals[v] for v in terms) < extent)
    for acc, _ in stmt.accesses():
        t = tmap[acc.tensor]
        st = []
        for axis, terms in enumerate(acc.index):
            s = sum((ivals[v] for v in terms), np.zeros((1,) * nl, dtype=np.int64))
            st.append(s)
            exists = exists & (s < t.shape[axis])
        starts[id(acc)] = st
    e_off = 0
    for acc, kind in stmt.accesses():
        g = gs[acc.tensor]
        nf = list(nfull[id(acc)])
        nr = len(nf)
        obj = np.full((1,) * (nl + nr), g.offset, dtype=np.int64)
        valid = exists[(Ellipsis,) + (None,) * nr]
        lin = np.zeros((1,) * (nl + nr), dtype=np.int64)
        gstride = 1
        lstride = 1
        for a in reversed(range(nr)):
            shp = [1] * (nl + nr)
            shp[nl + a] = nf[a]
            b = np.arange(nf[a], dtype=np.int64).reshape(shp)
            bs = (starts[id(acc)][a] // g.block[a])[(Ellipsis,) + (None,) * nr]
            blk = bs + b
            valid = valid & (blk < g.counts[a])
            obj = obj + blk * gstride
            lin = lin + b * lstride
            gstride *= g.counts[a]
            lstride *= nf[a]
        full = shape_l + tuple(nf)
        p = pos[(Ellipsis,) + (None,) * nr] + e_off + lin
        p = np.broadcast_to(p, full).ravel()
        OBJ[p] = np.broadcast_to(obj, full).ravel()
        KIND[p] = kind
        VALID[p] = np.broadcast_to(valid, full).ravel()
        e_off += lstride
    if not isinstance(stmt, Matmul):
        return 0, 0
    r = matmul_roles(stmt, kernel)
    a, b = tmap[stmt.stationary.tensor], tmap[stmt.moving.tensor]
    def real(acc, axis, t):
        ext = full_extent(acc, axis, loops, t)
        return np.minimum(ext, t.shape[axis] - starts[id(acc)][axis])
    kt = real(stmt.stationary, r.k_stationary, a)
    mt = real(stmt.stationary, r.m_stationary, a)
    nt = real(stmt.moving, r.n_moving, b)
    per = np.where(exists, 2 * kt * mt * nt, 0)
    count = int(np.broadcast_to(exists, shape_l).sum())
    kt0, mt0, nt0 = (full_extent(stmt.stationary, r.k_stationary, loops, a),
                     full_extent(stmt.stationary, r.m_stationary, loops, a),
                     full_extent(stmt.moving, r.n_moving, loops, b))
    if count * 2 * kt0 * mt0 * nt0 >= 2**62:
        raise SpecError(f"{kernel.source or kernel.name}: {stmt.where()}: FLOP count overflows int64")
    return int(np.broadcast_to(per, shape_l).sum(dtype=np.int64)), count


def _on_chip(kernel: Kernel, obj: np.ndarray, kind: np.ndarray, obj_tensor: np.ndarray,
             names: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Values that live only on chip (ops, see loopsim/ops.py). A read (USE) of a tile that a
    matmul of this kernel accumulates, of a tensor the kernel never loads, reads PSUM: no SBUF
    request, dropped. The last event of each block of a tensor an op PRODUCEs here, that is never
    stored and is no output, is flagged dead. Returns (obj, kind, dead or None)."""
    events = [(a.tensor, k) for s, _ in kernel.statements() for a, k in s.accesses()]

    def of(*kinds: int) -> set[str]:
        return {t for t, k in events if k in kinds}

    psum = (of(USE) & of(ACC)) - of(LOAD)
    if psum:
        ids = [names.index(t) for t in psum]
        keep = ~((kind == USE) & np.isin(obj_tensor[obj], ids))
        obj, kind = obj[keep], kind[keep]
    outputs = {t.name for t in kernel.outputs}
    temp = of(PRODUCE) - of(STORE) - outputs
    if not temp:
        return obj, kind, None
    in_temp = np.isin(obj_tensor[obj], [names.index(t) for t in temp])
    _, first_in_reversed = np.unique(obj[::-1], return_index=True)
    dead = np.zeros(obj.size, dtype=bool)
    dead[obj.size - 1 - first_in_reversed] = True
    return obj, kind, dead & in_temp


def _memset_first_sums(kernel: Kernel, obj: np.ndarray, kind: np.ndarray, gs: dict
                       ) -> tuple[np.ndarray, np.ndarray]:
    """An SBUF accumulator (the ``out`` of an ``acc``) starts as zeros on chip: where a block's
    first event is a read (USE), that read fetches nothing and is dropped."""
    targets = {s.out.tensor for s, _ in kernel.statements() if isinstance(s, Accumulate)}
    if not targets:
        return obj, kind
    mask = np.zeros(obj.size, dtype=bool)
    for t in targets:
        g = gs[t]
        mask |= (obj >= g.offset) & (obj < g.offset + g.n_blocks)
    idx = np.flatnonzero(mask)
    _, first = np.unique(obj[idx], return_index=True)
    first = idx[first]
    keep = np.ones(obj.size, dtype=bool)
    keep[first[kind[first] == USE]] = False
    return obj[keep], kind[keep]


def _keep_partial_sums(obj: np.ndarray, kind: np.ndarray, n_objects: int) -> tuple[np.ndarray, np.ndarray]:
    """Keep an ACC event only where it re-accumulates into a tile stored before (a partial sum
    that left PSUM and must be read back); drop the rest, which stay in PSUM."""
    if not (kind == ACC).any():
        return obj, kind
    from .sim._filters import keep_partial_sums

    keep = keep_partial_sums(obj, kind, n_objects)
    return obj[keep], kind[keep]
