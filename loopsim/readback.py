"""Partial-sum read-backs of a nest as written, counted from its statements (no trace).

A matmul accumulating into an output block whose last event was a store reads the partial sum back
from HBM (the rule :mod:`loopsim.trace` applies request by request). Per block of a matmul's
output, only its accumulations (ACC) and stores (STORE) matter, so a read-back is a STORE followed,
among that block's events, by an ACC.

Counted without walking every iteration: a loop whose variable changes neither which blocks those
statements touch nor whether they run (it indexes no such tile, no axis of theirs that can start
past a tensor's edge, no active edge rule of :func:`loopsim.tiles.loop_edges`) repeats the same
per-block sequence each iteration, so it is enumerated for at most two iterations: the first, and
one standing for the n - 1 others. A pair of consecutive events then stands for a number of real
pairs: the product, over those loops enclosing both events, of 1 (first iteration) or n - 1 (a
later one), times n - 1 when the pair crosses from the first iteration of such a loop to the next.
The other loops are enumerated in full, with numpy.
"""

from __future__ import annotations

import math

import numpy as np

from .ir import ACC, STORE, Kernel, Loop, Matmul, Store
from .tiles import full_extent, grids, loop_edges

#: events beyond which :func:`read_backs` declines (the caller counts from the trace instead)
MAX_EVENTS = 1 << 24


def _max_start(terms, loop_of: dict) -> int:
    """Largest value ``sum(terms)`` takes over all iterations (elements)."""
    return sum((loop_of[v].trips - 1) * loop_of[v].step for v in terms)


def _statements(body, loops=(), path=()):
    """(statement, enclosing loops, its path of child positions) for every statement, in order."""
    for i, node in enumerate(body):
        if isinstance(node, Loop):
            yield from _statements(node.body, loops + (node,), path + (i,))
        else:
            yield node, loops, path + (i,)


def read_backs(kernel: Kernel) -> tuple[np.ndarray, np.ndarray] | None:
    """(object ids, counts) of the blocks read back and how many times each is read back (ids as
    :func:`loopsim.tiles.grids` numbers them; an id may appear more than once; both empty when
    nothing is read back), or None when the enumeration would pass :data:`MAX_EVENTS` events."""
    outs = {s.out.tensor for s, _ in kernel.statements() if isinstance(s, Matmul)}
    sts = []
    for stmt, loops, path in _statements(kernel.body):
        if isinstance(stmt, Matmul) and stmt.out.tensor in outs:
            sts.append((stmt, loops, path, stmt.out, ACC))
        elif isinstance(stmt, Store) and stmt.tile.tensor in outs:
            sts.append((stmt, loops, path, stmt.tile, STORE))
    tm = kernel.tensor_map
    edges = loop_edges(kernel)
    relevant: set[int] = set()
    for stmt, loops, _, acc, _ in sts:
        loop_of = {l.var: l for l in loops}
        relevant |= {id(loop_of[v]) for ix in acc.index for v in ix}
        for a, _ in stmt.accesses():
            for axis, terms in enumerate(a.index):
                if _max_start(terms, loop_of) >= tm[a.tensor].shape[axis]:
                    relevant |= {id(loop_of[v]) for v in terms}
        for l in loops:
            if id(l) in edges and _max_start(edges[id(l)][0], loop_of) >= edges[id(l)][1]:
                relevant |= {id(loop_of[v]) for v in edges[id(l)][0]}
    gs = grids(kernel)
    sizes = [math.prod(l.trips if id(l) in relevant else min(l.trips, 2) for l in loops)
             * math.prod(-(-full_extent(acc, ax, loops, tm[acc.tensor]) // gs[acc.tensor].block[ax])
                         for ax in range(len(acc.index)))
             for _, loops, _, acc, _ in sts]
    if sum(sizes) > MAX_EVENTS:
        return None
    width = 2 * max((len(p) for _, _, p, _, _ in sts), default=1) - 1
    depth = width // 2 + 1
    # per statement and level: n - 1 for a loop taken for two iterations, else 1 (also past its depth)
    stand = np.ones((len(sts), depth), np.int64)
    for j, (_, loops, _, _, _) in enumerate(sts):
        for d, l in enumerate(loops):
            if id(l) not in relevant:
                stand[j, d] = l.trips - 1 if l.trips > 1 else 1
    cols = [_events(s, loops, path, acc, kind, j, relevant, edges, tm, gs[acc.tensor], width)
            for j, (s, loops, path, acc, kind) in enumerate(sts)]
    cols = [c for c in cols if c[0].size]
    if not cols:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    obj, kind, who, key = (np.concatenate(x) for x in zip(*cols))
    order = np.lexsort(tuple(key[:, j] for j in reversed(range(width))) + (obj,))
    obj, kind, who, key = obj[order], kind[order], who[order], key[order]
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


def _events(stmt, loops, path, acc, kind, j, relevant, edges, tm, g, width):
    """Events of one statement (number ``j``) over its (capped) iterations and its tile's blocks:
    object ids, kinds, ``j`` and order keys (position, counter, position, ... per level)."""
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
            ok = ok & (sum((ival[v] for v in terms), zero) < extent)
    for a, _ in stmt.accesses():
        for ax, terms in enumerate(a.index):
            if _max_start(terms, loop_of) >= tm[a.tensor].shape[ax]:
                ok = ok & (sum((ival[v] for v in terms), zero) < tm[a.tensor].shape[ax])
    obj = zero + g.offset
    stride = 1
    for ax in reversed(range(len(acc.index))):
        b = sum((ival[v] for v in acc.index[ax]), zero) // g.block[ax] + axis(nl + ax)
        ok = ok & (b < g.counts[ax])
        obj = obj + b * stride
        stride *= g.counts[ax]
    shape = tuple(dims)
    ok = np.broadcast_to(ok, shape)
    n = int(ok.sum())
    key = np.zeros((n, width), np.int32)  # counters stay below MAX_EVENTS
    for k, l in enumerate(loops):
        key[:, 2 * k] = path[k]
        key[:, 2 * k + 1] = np.broadcast_to(cnt[l.var], shape)[ok]
    key[:, 2 * nl] = path[nl]
    return np.broadcast_to(obj, shape)[ok], np.full(n, kind, np.int8), np.full(n, j, np.int32), key
