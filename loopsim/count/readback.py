"""What the trace would show of a few tensors, counted from the nest's statements (no trace).

Partial-sum read-backs (:func:`read_backs`): a matmul accumulating into an output block whose
last event was a store reads the partial sum back from HBM (the rule :mod:`loopsim.sim.trace` applies
request by request). Per block of a matmul's output, only its accumulations (ACC) and stores
(STORE) matter, so a read-back is a STORE followed, among that block's events, by an ACC.
Live ranges of op outputs (:func:`produced_peak`): each produced block from its first request to
its last, in the trace's order (statement, request, block of the tile).

Counted without walking every iteration: a loop whose variable changes neither which blocks those
statements touch nor whether they run (it indexes no such tile, no axis of theirs that can start
past a tensor's edge, no active edge rule of :func:`loopsim.ir.tiles.loop_edges`) repeats the same
per-block sequence each iteration, so it is enumerated for at most two iterations: the first, and
one standing for the n - 1 others. For read-backs a pair of consecutive events then stands for a
number of real pairs: the product, over those loops enclosing both events, of 1 (first iteration)
or n - 1 (a later one), times n - 1 when the pair crosses from the first iteration of such a loop
to the next; for live ranges the two iterations hold every block's first and last request. The
other loops are enumerated in full, with numpy.
"""

from __future__ import annotations

import math

import numpy as np

from loopsim.ir.kernel import ACC, STORE, Kernel, Loop, Matmul, Store
from loopsim.ir.tiles import full_extent, grids, loop_edges

#: events beyond which :func:`read_backs` declines (the caller counts from the trace instead)
MAX_EVENTS = 1 << 24


def _max_start(terms, loop_of: dict) -> int:
    """Largest value ``sum(coef * var)`` over ``terms`` ((var, coef) pairs) takes over all
    iterations (elements)."""
    return sum((loop_of[v].trips - 1) * loop_of[v].step * c for v, c in terms)


def _statements(body, loops=(), path=()):
    """(statement, enclosing loops, its path of child positions) for every statement, in order."""
    for i, node in enumerate(body):
        if isinstance(node, Loop):
            yield from _statements(node.body, loops + (node,), path + (i,))
        else:
            yield node, loops, path + (i,)


def _relevant(sts, tm, edges) -> set[int]:
    """id() of the loops whose iterations differ for the accesses ``sts`` (statement, loops,
    access): indexed by the access, by an axis of the statement that can start past its tensor's
    edge, or named by an edge rule some iteration breaks. The other loops repeat the same events."""
    relevant: set[int] = set()
    for stmt, loops, acc in sts:
        loop_of = {l.var: l for l in loops}
        relevant |= {id(loop_of[v]) for ix in acc.index for v in ix}
        for a, _ in stmt.accesses():
            for axis, terms in enumerate(a.index):
                if a.offset_of(axis) + _max_start(a.terms_of(axis), loop_of) >= tm[a.tensor].shape[axis]:
                    relevant |= {id(loop_of[v]) for v in terms}
        for l in loops:
            if id(l) in edges and _max_start(edges[id(l)][0], loop_of) >= edges[id(l)][1]:
                relevant |= {id(loop_of[v]) for v, _ in edges[id(l)][0]}
    return relevant


def _size(loops, acc, relevant, tm, gs) -> int:
    """Events of one access over the (capped) iterations and its tile's blocks."""
    return math.prod(l.trips if id(l) in relevant else min(l.trips, 2) for l in loops) \
        * math.prod(-(-full_extent(acc, ax, loops, tm[acc.tensor]) // gs[acc.tensor].block[ax])
                    for ax in range(len(acc.index)))


def _sorted_events(kernel: Kernel, sts):
    """The events of ``sts`` ((statement, loops, path, access, kind, request or None) per
    statement), each statement numbered by its place in ``sts``, over the capped iterations, in
    the trace's order within each object: ((object ids, kinds, statement numbers, order keys),
    the enumerated-in-full loops (:func:`_relevant`), the kernel's block grids); None past
    :data:`MAX_EVENTS`."""
    tm = kernel.tensor_map
    edges = loop_edges(kernel)
    relevant = _relevant([(s, loops, acc) for s, loops, _, acc, _, _ in sts], tm, edges)
    gs = grids(kernel)
    if sum(_size(loops, acc, relevant, tm, gs) for _, loops, _, acc, _, _ in sts) > MAX_EVENTS:
        return None
    width = 2 * max((len(p) for _, _, p, _, _, _ in sts), default=1) - 1
    cols = [_events(s, loops, path, acc, kind, j, relevant, edges, tm, gs[acc.tensor], width, r)
            for j, (s, loops, path, acc, kind, r) in enumerate(sts)]
    cols = [c for c in cols if c[0].size]
    if not cols:
        return (np.zeros(0, np.int64), np.zeros(0, np.int8), np.zeros(0, np.int32),
                np.zeros((0, width), np.int32)), relevant, gs
    obj, kind, who, key = (np.concatenate(x) for x in zip(*cols))
    order = np.lexsort(tuple(key[:, c] for c in reversed(range(key.shape[1]))) + (obj,))
    return (obj[order], kind[order], who[order], key[order]), relevant, gs


def read_backs(kernel: Kernel) -> tuple[np.ndarray, np.ndarray] | None:
    """(object ids, counts) of the blocks read back and how many times each is read back (ids as
    :func:`loopsim.ir.tiles.grids` numbers them; an id may appear more than once; both empty when
    nothing is read back), or None when the enumeration would pass :data:`MAX_EVENTS` events."""
    outs = {s.out.tensor for s, _ in kernel.statements() if isinstance(s, Matmul)}
    sts = []
    for stmt, loops, path in _statements(kernel.body):
        if isinstance(stmt, Matmul) and stmt.out.tensor in outs:
            sts.append((stmt, loops, path, stmt.out, ACC, None))
        elif isinstance(stmt, Store) and stmt.tile.tensor in outs:
            sts.append((stmt, loops, path, stmt.tile, STORE, None))
    found = _sorted_events(kernel, sts)
    if found is None:
        return None
    (obj, kind, who, key), relevant, _ = found
    if not obj.size:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    depth = key.shape[1] // 2 + 1
    # per statement and level: n - 1 for a loop taken for two iterations, else 1 (also past its depth)
    stand = np.ones((len(sts), depth), np.int64)
    for j, (_, loops, _, _, _, _) in enumerate(sts):
        for d, l in enumerate(loops):
            if id(l) not in relevant:
                stand[j, d] = l.trips - 1 if l.trips > 1 else 1
    i = np.flatnonzero((obj[:-1] == obj[1:]) & (kind[:-1] == STORE) & (kind[1:] == ACC))
    k1, f = key[i], stand[who[i]]
    p = np.argmax(k1 != key[i + 1], axis=1)  # the first key column where the two events differ
    shared = p // 2  # loops enclosing both events (each takes a position column and a counter column)
    # a pair stands for: per shared level, 1 (first iteration) or n - 1 (the later ones), and
    # n - 1 more when it crosses from a capped loop's first iteration to the next
    fac = np.where(k1[:, 1::2] == 1, f[:, : depth - 1], 1)
    prefix = np.cumprod(np.concatenate([np.ones((i.size, 1), np.int64), fac], axis=1), axis=1)
    rows = np.arange(i.size)
    w = prefix[rows, shared] * np.where(p % 2 == 1, f[rows, np.minimum(shared, depth - 1)], 1)
    return obj[i + 1], w


def _events(stmt, loops, path, acc, kind, j, relevant, edges, tm, g, width, req=None):
    """Events of one statement (number ``j``) over its (capped) iterations and its tile's blocks:
    object ids, kinds, ``j`` and order keys (position, counter, position, ... per level; with
    ``req``, the request's place in the statement and the block's in the tile, last axis fastest)."""
    nl = len(loops)
    t = tm[acc.tensor]
    nfull = [-(-full_extent(acc, ax, loops, t) // g.block[ax]) for ax in range(len(acc.index))]
    dims = [l.trips if id(l) in relevant else min(l.trips, 2) for l in loops] + nfull
    nd = len(dims)

    def axis(k):
        shp = [1] * nd
        shp[k] = dims[k]
        return np.arange(dims[k], dtype=np.int64).reshape(shp)

    cnt = {l.var: axis(k) for k, l in enumerate(loops)}
    ival = {l.var: cnt[l.var] * l.step for l in loops}
    zero = np.zeros((1,) * nd, np.int64)
    ok = np.ones((1,) * nd, bool)
    loop_of = {l.var: l for l in loops}
    for l in loops:
        if id(l) in edges and _max_start(edges[id(l)][0], loop_of) >= edges[id(l)][1]:
            terms, extent = edges[id(l)]
            ok = ok & (sum((ival[v] * c for v, c in terms), zero) < extent)

    def start(a, ax):
        return sum((ival[v] * c for v, c in a.terms_of(ax)), zero) + a.offset_of(ax)

    for a, _ in stmt.accesses():
        for ax in range(len(a.index)):
            if a.offset_of(ax) + _max_start(a.terms_of(ax), loop_of) >= tm[a.tensor].shape[ax]:
                ok = ok & (start(a, ax) < tm[a.tensor].shape[ax])
    obj = zero + g.offset
    stride = 1
    for ax in reversed(range(len(acc.index))):
        b = start(acc, ax) // g.block[ax] + axis(nl + ax)
        ok = ok & (b < g.counts[ax])
        obj = obj + b * stride
        stride *= g.counts[ax]
    shape = tuple(dims)
    ok = np.broadcast_to(ok, shape)
    n = int(ok.sum())
    key = np.zeros((n, width + (0 if req is None else 2)), np.int32)  # counters < MAX_EVENTS
    for k, l in enumerate(loops):
        key[:, 2 * k] = path[k]
        key[:, 2 * k + 1] = np.broadcast_to(cnt[l.var], shape)[ok]
    key[:, 2 * nl] = path[nl]
    if req is not None:
        key[:, width] = req
        e = zero
        for ax in range(len(acc.index)):
            e = e * nfull[ax] + axis(nl + ax)
        key[:, width + 1] = np.broadcast_to(e, shape)[ok]
    return np.broadcast_to(obj, shape)[ok], np.full(n, kind, np.int8), np.full(n, j, np.int32), key


def produced_peak(kernel: Kernel, target) -> int | None:
    """Peak SBUF cost of the blocks an op produced, each live from its first request to its last
    in the trace's order (:func:`loopsim.count.stages.produced_peak` reads the same off a trace), from
    the statements: loops that change none of those requests are taken for two iterations (the
    first and last iterations hold every block's first and last request). None past
    :data:`MAX_EVENTS` events, or when a matmul accumulates into a produced tensor (the caller
    reads the trace then)."""
    from loopsim.ir.kernel import PRODUCE, USE, Accumulate
    from loopsim.sim.trace import object_cost, requests

    made = {a.tensor for s, _ in kernel.statements() for a, k in s.accesses() if k == PRODUCE}
    if not made:
        return 0
    if any(k == ACC and a.tensor in made for s, _ in kernel.statements() for a, k in s.accesses()):
        return None
    sts = [(stmt, loops, path, acc, kind, r) for stmt, loops, path in _statements(kernel.body)
           for r, (acc, kind) in enumerate(requests(stmt)) if acc.tensor in made]
    found = _sorted_events(kernel, sts)
    if found is None:
        return None
    (obj, kind, _, key), _, gs = found
    # an SBUF accumulator's block starts as zeros: its first request, when a read, is dropped
    zeroed = {s.out.tensor for s, _ in kernel.statements() if isinstance(s, Accumulate)}
    first = np.r_[True, obj[1:] != obj[:-1]] if obj.size else np.zeros(0, bool)
    drop = first & (kind == USE)
    drop &= np.isin(obj, [o for t in zeroed if t in made
                          for o in range(gs[t].offset, gs[t].offset + gs[t].n_blocks)])
    obj, kind, key = obj[~drop], kind[~drop], key[~drop]
    if not obj.size:
        return 0
    first = np.r_[True, obj[1:] != obj[:-1]]
    last = np.r_[obj[1:] != obj[:-1], True]
    group = np.cumsum(first) - 1
    has = np.zeros(int(group[-1]) + 1, bool)
    has[group[kind == PRODUCE]] = True  # blocks an op produced
    cost = object_cost(gs, tuple(t.name for t in kernel.tensors), target)
    starts, ends = np.flatnonzero(first)[has], np.flatnonzero(last)[has]
    if not starts.size:
        return 0
    ev_key = np.concatenate([key[starts], key[ends]])
    flag = np.r_[np.zeros(starts.size, np.int8), np.ones(ends.size, np.int8)]
    delta = np.r_[cost[obj[starts]], -cost[obj[ends]]]
    o = np.lexsort((flag,) + tuple(ev_key[:, c] for c in reversed(range(ev_key.shape[1]))))
    return int(np.cumsum(delta[o]).max())
