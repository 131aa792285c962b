"""Every execution of a statement, as numpy arrays over the loops its accesses index.

A statement at loop level L runs once per iteration of every loop around it. Only the loops its
indices use change what it touches; the others multiply (``weight``). Iterations of a blocked loop
that start past a tensor's edge do not run (``exists`` is False there), and a ragged last tile has
its real, smaller extent.
"""

from __future__ import annotations

import math

import numpy as np

from loopsim.ir.kernel import Kernel, Loop, Statement
from loopsim.ir.tiles import full_extent


def executions(stmt: Statement, loops: tuple[Loop, ...], accs, kernel: Kernel, split: Loop | None,
               edges: dict | None = None, grouped: bool = False):
    """Per execution of ``stmt`` (numpy-broadcast over the loops its accesses index, and those an
    edge condition that some iteration breaks names): the real extent of every axis of every access in ``accs``, whether it
    runs (its tile starts inside the tensor, and no enclosing blocked loop runs past an edge:
    :func:`loopsim.ir.tiles.loop_edges`, computed when ``edges`` is None), the weight (runs of the
    other loops) and the physical core that runs it (None: every core runs it). ``split``: any loop
    when the kernel is split across cores (the original split loop, or the core loop of
    :func:`loopsim.count.lnc.cores_nest`), None when it is not.

    ``grouped``: the interior iterations of each loop (those whose tiles are full and run whatever
    the other loops' values, :func:`_interior`) are one cell standing for all of them, so the
    arrays grow with the ragged edges, not the trip counts; ``weight`` is then an int64 array
    broadcastable to the shape (cells' multiplicities times the other loops' runs), and a sum over
    executions is ``(x * weight).sum()``. Sums are the same either way (tests/test_executions.py)."""
    tmap = kernel.tensor_map
    edges = edges_of(kernel) if edges is None else edges
    if split is not None:  # the split loop around this statement (sibling loops may share the split),
        # or the loop over the cores of lnc.cores_nest (spmd: its counter is the core)
        split = next((l for l in loops if l.split > 1 or l.spmd), None)
    used = {v for a in accs for ix in a.index for v in ix}
    loop_of = {l.var: l for l in loops}
    for l in loops:  # an edge rule that no iteration can break leaves every iteration running
        if id(l) in edges:
            terms, extent = edges[id(l)]
            if _reach(terms, loop_of) >= extent:
                used |= {v for v, _ in terms}
    rel = [l for l in loops if l.var in used or l is split]
    weight = math.prod(l.trips for l in loops if l not in rel)
    nl = len(rel)
    ivals, trips, mult = {}, [], []
    for k, l in enumerate(rel):
        shp = [1] * nl
        n_int = _interior(l, accs, tmap, loops, loop_of, edges) if grouped and l is not split else 0
        if n_int >= 2:  # iterations 0 .. n_int-1 are alike: iteration 0 stands for them
            it = np.concatenate(([0], np.arange(n_int, l.trips, dtype=np.int64)))
            m = np.ones(len(it), dtype=np.int64)
            m[0] = n_int
        else:
            it = np.arange(l.trips, dtype=np.int64)
            m = None
        shp[k] = len(it)
        trips.append(len(it))
        mult.append(None if m is None else m.reshape(shp))
        ivals[l.var] = (it * l.step).reshape(shp)
    exists = np.ones((1,) * nl, dtype=bool)
    ext = {}
    zero = np.zeros((1,) * nl, dtype=np.int64)
    def reaches(terms, extent) -> bool:  # whether some iteration starts at or past ``extent``
        return _reach(terms, loop_of) >= extent

    # (conditions no iteration breaks are left out: an all-True mask the size of every execution)
    for l in rel:  # iterations of a blocked loop past a tensor's edge do not run
        if id(l) in edges and reaches(*edges[id(l)]):
            terms, extent = edges[id(l)]
            exists = exists & (sum((ivals[v] * c for v, c in terms if v in ivals), zero) < extent)
    for a in accs:
        t = tmap[a.tensor]
        per_axis = []
        for axis in range(len(a.index)):
            terms = a.terms_of(axis)
            start = sum((ivals[v] * c for v, c in terms), zero) + a.offset_of(axis)
            if reaches(terms, t.shape[axis] - a.offset_of(axis)):
                exists = exists & (start < t.shape[axis])
            per_axis.append(np.minimum(full_extent(a, axis, loops, t), t.shape[axis] - start))
        ext[id(a)] = per_axis
    core = None
    if split is not None and split in rel:
        k = rel.index(split)
        shp = [1] * nl
        shp[k] = split.trips
        per = 1 if split.spmd else -(-split.trips // split.split)
        core = np.arange(split.trips, dtype=np.int64).reshape(shp) // per
    shape = tuple(trips)
    if grouped:
        w = np.full((1,) * nl, weight, dtype=np.int64)
        for m in mult:
            if m is not None:
                w = w * m
        weight = w
    return ext, np.broadcast_to(exists, shape), weight, core, shape


def _interior(l: Loop, accs, tmap, loops, loop_of, edges) -> int:
    """How many of ``l``'s first iterations are interior: at each, every access axis and edge rule
    that indexes ``l`` has its tile whole and inside the tensor even with every other loop of the
    index at its last iteration, so nothing computed for the statement depends on which of them
    runs. The condition is monotone in the iteration, so they are the first ones."""
    conds = []  # (other loops' largest contribution, bound, elements the tile needs)
    for a in accs:
        t = tmap[a.tensor]
        for axis, terms in enumerate(a.index):
            if l.var in terms:
                pairs = a.terms_of(axis)
                rest = _reach([(v, c) for v, c in pairs if v != l.var], loop_of) + a.offset_of(axis)
                conds.append((rest, t.shape[axis], full_extent(a, axis, loops, t), dict(pairs)[l.var]))
    for m in loops:
        if id(m) in edges and l.var in {v for v, _ in edges[id(m)][0]}:
            terms, extent = edges[id(m)]
            rest = _reach([(v, c) for v, c in terms if v != l.var], loop_of)
            conds.append((rest, extent, 1, dict(terms)[l.var]))
    n = l.trips
    for rest, bound, need, c in conds:  # i * step * c + rest + need <= bound
        n = min(n, max(0, (bound - rest - need) // (l.step * c) + 1))
    return n


def _reach(terms, loop_of) -> int:
    """The largest ``sum(coef * var)`` over ``terms`` ((var, coef) pairs) of any iteration."""
    return sum((loop_of[v].trips - 1) * loop_of[v].step * c for v, c in terms)


#: (kernel, its loop_edges) of the last kernel asked about: the ceilings and engine passes call
#: :func:`executions` once per statement of the same kernel (replaced whole: safe across threads)
_EDGES: tuple = (None, None)


def edges_of(kernel: Kernel) -> dict:
    """:func:`loopsim.ir.tiles.loop_edges` of ``kernel``, computed once for consecutive calls."""
    global _EDGES
    last = _EDGES
    if last[0] is kernel:
        return last[1]
    from loopsim.ir.tiles import loop_edges

    edges = loop_edges(kernel)
    _EDGES = (kernel, edges)
    return edges


def tile_elements(stmt: Statement, loops: tuple[Loop, ...], acc, kernel: Kernel,
                  split: Loop | None = None) -> int:
    """Elements of ``acc``'s tile summed over every execution of ``stmt`` (ragged tiles as they
    are, loops the statement does not index counted as the repeats they are)."""
    ext, exists, weight, _, shape = executions(stmt, loops, (acc,), kernel, split, grouped=True)
    total = 0
    for sub, (ex, w, *axes) in row_blocks(shape, (exists, weight, *ext[id(acc)])):
        size = np.broadcast_to(w, sub)
        for e in axes:
            size = size * e
        total += int(np.where(ex, size, 0).sum(dtype=np.int64))
    return total


def row_blocks(shape: tuple[int, ...], arrays, cells: int = 1 << 20):
    """Blocks of rows (first axis) of ``shape`` of about ``cells`` cells each, with each array
    (broadcastable to ``shape``, or None) cut to the block: sums taken block by block need memory
    for one block, not for every instruction of a large kernel."""
    if not shape:
        yield shape, arrays
        return
    rows = max(1, cells // max(1, math.prod(shape[1:])))
    for lo in range(0, shape[0], rows):
        hi = min(lo + rows, shape[0])
        yield (hi - lo,) + shape[1:], tuple(
            None if a is None else (a[lo:hi] if a.ndim and a.shape[0] > 1 else a) for a in arrays)
