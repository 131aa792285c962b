"""The list scheduler of :class:`loopsim.targets.schedule.Scheduler` compiled (numba,
``cache=True``): the deferred scheduler's recorded instructions scheduled in one walk, by the
same rules, in the same floating-point operations, so the times are the immediate scheduler's.
Imported only by :meth:`Scheduler.finish` (a deferred run), never by ``import loopsim``.

Units: seconds."""

from __future__ import annotations

import numpy as np

from loopsim.sim._jit import njit

DEP, QUEUE, PIPE = 0, 1, 2  # as in loopsim.targets.schedule


@njit(cache=True)
def _grow(a, n):
    out = np.empty((a.shape[0], max(16, 2 * n)), a.dtype)
    out[:, :a.shape[1]] = a
    return out


@njit(cache=True)
def schedule(q, dur, pipe, wptr, wby, wlag, gptr, gby, need, pool, rel, nq, npipe, npool, nbank):
    """Start, end, pred, why, lag per instruction, each pipe's busy stretches (starts, ends,
    owners, counts) and whether banks were shared. Arguments: :meth:`Scheduler.finish`'s record
    (``wby`` < -1: the readers group ``-2 - wby`` of ``gptr``/``gby``)."""
    n = len(q)
    start = np.empty(n)
    end = np.empty(n)
    pred = np.full(n, -1, np.int64)
    why = np.full(n, 3, np.int64)
    lag = np.zeros(n)
    qfree = np.zeros(nq)
    qlast = np.full(nq, -1, np.int64)
    bft = np.zeros((npool, nbank))
    bfb = np.full((npool, nbank), -1, np.int64)
    held = np.zeros((npool, nbank), np.bool_)
    gofs = np.zeros(n + 1, np.int64)  # banks taken by instruction i: gflat[gofs[i]:gofs[i] + need[i]]
    total = 0
    for i in range(n):
        gofs[i] = total
        total += need[i]
    gofs[n] = total
    gflat = np.empty(max(1, total), np.int64)
    cap = 64
    ps = np.empty((npipe, cap))
    pe = np.empty((npipe, cap))
    po = np.empty((npipe, cap), np.int64)
    pn = np.zeros(npipe, np.int64)
    pa = np.empty(64)  # pieces of one transfer
    pb = np.empty(64)
    shared = False
    cand = np.empty(nbank, np.int64)
    key = np.empty(nbank)
    for i in range(n):
        ready, by, wy, lg = 0.0, -1, 3, 0.0
        for w in range(wptr[i], wptr[i + 1]):
            b = wby[w]
            if b < -1:  # the last of a group of readers (Scheduler.slot_wait)
                g = -2 - b
                t, h = 0.0, -1
                for r in gby[gptr[g]:gptr[g + 1]]:
                    if end[r] > t:
                        t, h = end[r], r
                b = h
            t = (end[b] if b >= 0 else 0.0) + wlag[w]
            if t > ready:
                ready, by, wy, lg = t, b, DEP, wlag[w]
        k = need[i]
        if k:
            p = pool[i]
            m = 0
            for b in range(nbank):
                if not held[p, b]:
                    cand[m] = b
                    m += 1
            if m < k:
                shared = True
                m = nbank
                for b in range(nbank):
                    cand[b] = b
            for j in range(m):
                key[j] = bft[p, cand[j]]
            order = np.argsort(key[:m], kind="mergesort")  # stable, as Python's sort
            for j in range(k):
                b = cand[order[j]]
                gflat[gofs[i] + j] = b
                if bft[p, b] > ready:
                    ready, by, wy, lg = bft[p, b], bfb[p, b], DEP, 0.0
                held[p, b] = True
        qq = q[i]
        if qfree[qq] > ready:
            ready, by, wy, lg = qfree[qq], qlast[qq], QUEUE, 0.0
        d = dur[i]
        p = pipe[i]
        if p >= 0:
            # Scheduler._fit: the pipe's free stretches from ready on lasting d in all
            cnt = pn[p]
            t = ready
            j = np.searchsorted(ps[p, :cnt], t, side="right") - 1
            owner = -1
            if j >= 0 and pe[p, j] > t:
                t, owner = pe[p, j], po[p, j]
            j += 1
            npc = 0
            if j == cnt:
                pa[0], pb[0] = t, t + d
                npc = 1
            else:
                nd, eps = d, d * 1e-12
                while nd > eps:
                    nxt = ps[p, j] if j < cnt else np.inf
                    if nxt > t:
                        take = min(nxt - t, nd)
                        if npc == len(pa):
                            pa2 = np.empty(2 * npc)
                            pb2 = np.empty(2 * npc)
                            pa2[:npc] = pa
                            pb2[:npc] = pb
                            pa, pb = pa2, pb2
                        pa[npc], pb[npc] = t, t + take
                        npc += 1
                        nd -= take
                        t += take
                    if nd > eps:
                        if npc == 0:
                            owner = po[p, j]
                        t = max(t, pe[p, j])
                        j += 1
            s0, e0 = pa[0], pb[npc - 1]
            if s0 > ready:
                by, wy, lg = owner, PIPE, 0.0
            # Scheduler._occupy, each piece
            for c in range(npc):
                s, e = pa[c], pb[c]
                cnt = pn[p]
                j = np.searchsorted(ps[p, :cnt], s, side="right")
                if j > 0 and abs(pe[p, j - 1] - s) <= 1e-15 * max(1.0, s):
                    pe[p, j - 1] = e
                    po[p, j - 1] = i
                    if j < cnt and abs(ps[p, j] - e) <= 1e-15 * max(1.0, e):
                        pe[p, j - 1], po[p, j - 1] = pe[p, j], po[p, j]
                        ps[p, j:cnt - 1] = ps[p, j + 1:cnt].copy()
                        pe[p, j:cnt - 1] = pe[p, j + 1:cnt].copy()
                        po[p, j:cnt - 1] = po[p, j + 1:cnt].copy()
                        pn[p] = cnt - 1
                    continue
                if j < cnt and abs(ps[p, j] - e) <= 1e-15 * max(1.0, e):
                    ps[p, j] = s
                    continue
                if cnt == ps.shape[1]:
                    ps, pe, po = _grow(ps, cnt), _grow(pe, cnt), _grow(po, cnt)
                ps[p, j + 1:cnt + 1] = ps[p, j:cnt].copy()
                pe[p, j + 1:cnt + 1] = pe[p, j:cnt].copy()
                po[p, j + 1:cnt + 1] = po[p, j:cnt].copy()
                ps[p, j], pe[p, j], po[p, j] = s, e, i
                pn[p] = cnt + 1
        else:
            s0, e0 = ready, ready + d
        start[i], end[i], pred[i], why[i], lag[i] = s0, e0, by, wy, lg
        qfree[qq] = e0
        qlast[qq] = i
        r = rel[i]
        if r >= 0:
            p = pool[i]
            for j in range(gofs[r], gofs[r] + need[r]):
                b = gflat[j]
                bft[p, b] = e0
                bfb[p, b] = i
                held[p, b] = False
    return start, end, pred, why, lag, ps, pe, po, pn, shared
