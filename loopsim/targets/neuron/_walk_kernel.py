"""The timeline's walk compiled (numba, ``cache=True``): the nest expanded over its loop
iterations into instructions and each scheduled as it is made, in one pass, by the rules of
:class:`loopsim.targets.neuron.timeline._Run` (regions, last writers, buffer slots, PSUM
accumulation groups and banks) and :class:`loopsim.targets.schedule.Scheduler` (queues, the DMA
pipe, waits), in the same floating-point operations. Everything that needs Python (durations from
the sheet) comes in as tables prepared once per statement (:mod:`loopsim.targets.neuron.walk`);
a duration the tables lack is reported back (``MISS``) and the run repeated with it. Imported only
by that module, never by ``import loopsim``.

Units: seconds, elements, bytes."""

from __future__ import annotations

import numpy as np

from loopsim.sim._jit import njit

OK, MISS, FULL = 0, 1, 2  # walk status: done; a duration the tables lack; an array too small
DEP, QUEUE, PIPE = 0, 1, 2  # as in loopsim.targets.schedule
LOAD, STORE, MATMUL, ACC, OP = 0, 1, 2, 3, 4  # statement kinds
NRING = 32  # writes of a tensor its readers scan (the Python walk's last 32)


@njit(cache=True)
def _region(a, env, ax_ptr, ax_off, ax_ext, ax_dim, tm_ptr, t_var, t_coef, s_out, e_out):
    """Starts and ends of access ``a`` at loop values ``env`` into s_out/e_out (the axes past its
    rank 0); False when it starts past the tensor's edge."""
    r = 0
    for x in range(ax_ptr[a], ax_ptr[a + 1]):
        s = ax_off[x]
        for k in range(tm_ptr[x], tm_ptr[x + 1]):
            s += env[t_var[k]] * t_coef[k]
        if s >= ax_dim[x]:
            return False
        e = s + ax_ext[x]
        if e > ax_dim[x]:
            e = ax_dim[x]
        s_out[r] = s
        e_out[r] = e
        r += 1
    for k in range(r, s_out.shape[0]):
        s_out[k] = 0
        e_out[k] = 0
    return True


@njit(cache=True)
def _hfind(hk, hused, key):
    """The position of ``key`` in the open-addressing table (its own or the free one it would
    take) and whether it is there."""
    mask = hk.shape[0] - 1
    h = 0
    for v in key:  # a multiply-add per word, then the splitmix64 finish (in int64, wrapping)
        h = h * -7046029254386353131 + v
    h ^= h >> 33
    h *= -49064778989728563
    h ^= h >> 33
    p = h & mask
    while hused[p]:
        same = True
        for c in range(key.shape[0]):
            if hk[p, c] != key[c]:
                same = False
                break
        if same:
            return p, True
        p = (p + 1) & mask
    return p, False


@njit(cache=True)
def _overlaps(s1, e1, s2, e2, rank):
    for a in range(rank):
        if s1[a] >= e2[a] or s2[a] >= e1[a]:
            return False
    return True


@njit(cache=True)
def _writers(core, t, rank, s, e, hk, hv, hused, key, wr_s, wr_e, wr_i, wr_slot, wr_n, ent_i,
             ent_s, ne):
    """_Run._writers: append the newest writer of exactly (s, e), else the newest writer of each
    region overlapping it among the tensor's last NRING writes, to ent_i/ent_s from ``ne``;
    returns the new count."""
    R = s.shape[0]
    key[0] = core
    key[1] = t
    key[2:2 + R] = s
    key[2 + R:] = e
    p, found = _hfind(hk, hused, key)
    if found:
        ent_i[ne] = hv[p, 0]
        ent_s[ne] = hv[p, 1]
        return ne + 1
    n = wr_n[core, t]
    first = ne
    for k in range(min(n, NRING)):
        r = (n - 1 - k) % NRING
        if not _overlaps(wr_s[core, t, r], wr_e[core, t, r], s, e, rank):
            continue
        dup = False
        for m in range(first, ne):  # seen: the same region from a newer write
            rm = ent_s[m + 4096]
            same = True
            for a in range(rank):
                if wr_s[core, t, rm, a] != wr_s[core, t, r, a] or wr_e[core, t, rm, a] != wr_e[core, t, r, a]:
                    same = False
                    break
            if same:
                dup = True
                break
        if dup:
            continue
        ent_i[ne] = wr_i[core, t, r]
        ent_s[ne] = wr_slot[core, t, r]
        ent_s[ne + 4096] = r  # its ring place (for the duplicate test)
        ne += 1
    return ne


@njit(cache=True)
def _write(core, t, s, e, instr, slot, hk, hv, hused, key, wr_s, wr_e, wr_i, wr_slot, wr_n):
    """_Run._write; False when the table is half full (the caller starts again larger)."""
    R = s.shape[0]
    r = wr_n[core, t] % NRING
    wr_s[core, t, r] = s
    wr_e[core, t, r] = e
    wr_i[core, t, r] = instr
    wr_slot[core, t, r] = slot
    wr_n[core, t] += 1
    key[0] = core
    key[1] = t
    key[2:2 + R] = s
    key[2 + R:] = e
    p, found = _hfind(hk, hused, key)
    hv[p, 0] = instr
    hv[p, 1] = slot
    if not found:
        hk[p] = key
        hused[p] = True
        hv[p, 2] = 1
        hv[0, 3] += 1
        if 2 * hv[0, 3] > hk.shape[0]:
            return False
    return True


@njit(cache=True)
def _add(i, q, dur, pipe, wb, wl, nw, need, pool, release, lab, queue, label, start, end, pred,
         why, lag, qfree, qlast, bft, bfb, held, bmask, ps, pe, po, pn, pa, pb, flags):
    """Scheduler.add (its rules and floating-point operations: waits, banks, queue, the pipe's
    free stretches) for instruction ``i``; False when the pipe's stretches fill their arrays."""
    ready, by, wy, lg = 0.0, -1, 3, 0.0
    for w in range(nw):
        b = wb[w]
        t = (end[b] if b >= 0 else 0.0) + wl[w]
        if t > ready:
            ready, by, wy, lg = t, b, DEP, wl[w]
    nbank = bft.shape[1]
    if need:
        p = pool
        m = 0
        cand = np.empty(nbank, np.int64)
        for b in range(nbank):
            if not held[p, b]:
                cand[m] = b
                m += 1
        if m < need:
            flags[0] = 1  # shared
            m = nbank
            for b in range(nbank):
                cand[b] = b
        key = np.empty(m)
        for j in range(m):
            key[j] = bft[p, cand[j]]
        order = np.argsort(key, kind="mergesort")  # stable, as Python's sort
        mask = 0
        for j in range(need):
            b = cand[order[j]]
            mask |= 1 << b
            if bft[p, b] > ready:
                ready, by, wy, lg = bft[p, b], bfb[p, b], DEP, 0.0
            held[p, b] = True
        bmask[i] = mask
    if qfree[q] > ready:
        ready, by, wy, lg = qfree[q], qlast[q], QUEUE, 0.0
    d = dur
    p = pipe
    if p >= 0 and d > 0:
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
                    if npc == pa.shape[0]:
                        return False
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
        for c in range(npc):
            s, e = pa[c], pb[c]
            cnt = pn[p]
            j = np.searchsorted(ps[p, :cnt], s, side="right")
            if j > 0 and abs(pe[p, j - 1] - s) <= 1e-15 * max(1.0, s):
                pe[p, j - 1] = e
                po[p, j - 1] = i
                if j < cnt and abs(ps[p, j] - e) <= 1e-15 * max(1.0, e):
                    pe[p, j - 1], po[p, j - 1] = pe[p, j], po[p, j]
                    for m in range(j, cnt - 1):  # close the gap (in place, forwards)
                        ps[p, m], pe[p, m], po[p, m] = ps[p, m + 1], pe[p, m + 1], po[p, m + 1]
                    pn[p] = cnt - 1
                continue
            if j < cnt and abs(ps[p, j] - e) <= 1e-15 * max(1.0, e):
                ps[p, j] = s
                continue
            if cnt == ps.shape[1]:
                return False
            for m in range(cnt, j, -1):  # open a place (in place, backwards)
                ps[p, m], pe[p, m], po[p, m] = ps[p, m - 1], pe[p, m - 1], po[p, m - 1]
            ps[p, j], pe[p, j], po[p, j] = s, e, i
            pn[p] = cnt + 1
    else:
        s0, e0 = ready, ready + d
    queue[i] = q
    label[i] = lab
    start[i], end[i], pred[i], why[i], lag[i] = s0, e0, by, wy, lg
    qfree[q] = e0
    qlast[q] = i
    if release >= 0:
        m = bmask[release]
        for b in range(nbank):
            if m >> b & 1:
                bft[pool, b] = e0
                bfb[pool, b] = i
                held[pool, b] = False
    return True


@njit(cache=True)
def _dma_dur(lab, n, rows, dk_lo, dk_n, dk_rows, dk_dur, miss, nmiss):
    """The seconds of a transfer of ``n`` elements over ``rows`` partitions of statement ``lab``
    (its table); a miss is recorded (label, n, rows) and costs 0."""
    for k in range(dk_lo[lab], dk_lo[lab + 1]):
        if dk_n[k] == n and dk_rows[k] == rows:
            return dk_dur[k]
    if nmiss[0] < miss.shape[0]:
        miss[nmiss[0], 0] = 0
        miss[nmiss[0], 1] = lab
        miss[nmiss[0], 2] = n
        miss[nmiss[0], 3] = rows
    nmiss[0] += 1
    return 0.0


@njit(cache=True)
def _eng_dur(tab, n, ek_lo, ek_n, ek_dur, miss, nmiss):
    """The seconds of an engine instruction over ``n`` elements by table ``tab`` (-1: none, 0 s)."""
    if tab < 0:
        return 0.0
    lo, hi = ek_lo[tab], ek_lo[tab + 1]
    k = lo + np.searchsorted(ek_n[lo:hi], n)
    if k < hi and ek_n[k] == n:
        return ek_dur[k]
    if nmiss[0] < miss.shape[0]:
        miss[nmiss[0], 0] = 1
        miss[nmiss[0], 1] = tab
        miss[nmiss[0], 2] = n
        miss[nmiss[0], 3] = 0
    nmiss[0] += 1
    return 0.0


@njit(cache=True)
def walk(nest, its, root, st, st_acc, st_chunk, work, batch, ac_t, ax_ptr, tm_ptr, ax_off, ax_ext,
         ax_dim, t_var, t_coef, tn, dk_lo, dk_n, dk_rows, dk_dur, ek_lo, ek_n, ek_dur, names, fc, ic, caps):
    """Expand and schedule a run of the nest. Arguments (:class:`loopsim.targets.neuron.walk._Prep`):

    - ``nest`` [node, 7]: kind (0 loop, 1 statement), env slot / label, spmd, iterations lo, hi
      (rows of ``its``: index, value), body lo, hi (rows of ``nest``); ``root``: (lo, hi)
    - ``st`` [label, 16]: kind, accesses lo, hi (in ``st_acc``), queue name, buffers, first slot,
      chunks per execution, work lo, hi (rows of ``work``: queue name, table (-2: the Tensor
      Engine's formula), 0, the table of a PSUM read on that engine), per output, moving N axis,
      batch lo, hi (in ``batch``), a store of a matmul output, with loops, the inputs that read
      a matmul output (bit mask); ``st_chunk`` [label, R]
    - per access ``ac_t`` (tensor) and its axes ``ax_ptr``; per axis its terms ``tm_ptr``,
      ``ax_off``, ``ax_ext``, ``ax_dim`` (the tensor's size); per term ``t_var`` (env slot),
      ``t_coef``; ``tn`` [tensor, 3]: rank, partition axis, bytes per element
    - duration tables: per label (n, rows) -> s, per engine table sorted n -> s
    - ``names`` [name, 2]: kind code, is DMA; ``fc``: dma_fixed, te_fill, te_cycle, te_slow;
      ``ic``: ncores, nvars, R (the largest rank), mm_init, psum_banks, bank_bytes, the tensor
      kind's code, the PSUM read-out queue name and table, slots; ``caps``: instructions,
      hash table, pipe stretches, open groups.

    Returns the status, the instruction count and the arrays the Scheduler and _Run keep."""
    ncores, nvars, R = ic[0], ic[1], ic[2]
    mm_init, psum_banks, bank_bytes, tkind = ic[3], ic[4], ic[5], ic[6]
    evac_q, evac_tab, nslots = ic[7], ic[8], ic[9]
    dma_fixed, te_fill, te_cycle, te_slow = fc[0], fc[1], fc[2], fc[3]
    cap, hcap, pcap, gcap = caps[0], caps[1], caps[2], caps[3]
    nst = st.shape[0]
    nt = tn.shape[0]
    nnames = names.shape[0]
    # instructions
    queue = np.empty(cap, np.int64)
    label = np.empty(cap, np.int64)
    start = np.empty(cap)
    end = np.empty(cap)
    pred = np.empty(cap, np.int64)
    why = np.empty(cap, np.int64)
    lag = np.empty(cap)
    bmask = np.zeros(cap, np.int64)
    # queues (created on first use, in order)
    qid = np.full((ncores, nnames), -1, np.int64)
    qcore = np.empty(ncores * nnames, np.int64)
    qname = np.empty(ncores * nnames, np.int64)
    qfree = np.zeros(ncores * nnames)
    qlast = np.full(ncores * nnames, -1, np.int64)
    nq = 0
    # PSUM bank pools (one per core), pipes (one per core)
    nbank = max(1, psum_banks)
    bft = np.zeros((ncores, nbank))
    bfb = np.full((ncores, nbank), -1, np.int64)
    held = np.zeros((ncores, nbank), np.bool_)
    ps = np.empty((ncores, pcap))
    pe = np.empty((ncores, pcap))
    po = np.empty((ncores, pcap), np.int64)
    pn = np.zeros(ncores, np.int64)
    pa = np.empty(4096)
    pb = np.empty(4096)
    flags = np.zeros(2, np.int64)  # banks shared, a store with no PSUM read-out engine
    # the walk's state per core
    KL = 2 + 2 * R
    hk = np.empty((hcap, KL), np.int64)
    hv = np.zeros((hcap, 4), np.int64)
    hused = np.zeros(hcap, np.bool_)
    key = np.empty(KL, np.int64)
    wr_s = np.zeros((ncores, nt, NRING, R), np.int64)
    wr_e = np.zeros((ncores, nt, NRING, R), np.int64)
    wr_i = np.zeros((ncores, nt, NRING), np.int64)
    wr_slot = np.zeros((ncores, nt, NRING), np.int64)
    wr_n = np.zeros((ncores, nt), np.int64)
    sf_t = np.zeros((ncores, nslots))
    sf_h = np.full((ncores, nslots), -1, np.int64)
    nacc_slots = 0
    acc_base = 0
    for lb in range(nst):
        acc_base = max(acc_base, st[lb, 5] + st[lb, 6] * st[lb, 4])
    execs = np.zeros((ncores, nst), np.int64)
    ll_i = np.full(ncores, -1, np.int64)
    ll_slot = np.full(ncores, -1, np.int64)
    g_t = np.empty((ncores, gcap), np.int64)
    g_s = np.empty((ncores, gcap, R), np.int64)
    g_e = np.empty((ncores, gcap, R), np.int64)
    g_first = np.empty((ncores, gcap), np.int64)
    g_last = np.empty((ncores, gcap), np.int64)
    g_n = np.zeros(ncores, np.int64)
    gsel = np.empty(gcap, np.int64)
    # scratch
    env = np.zeros(max(1, nvars), np.int64)
    nin = 0
    for lb in range(nst):
        nin = max(nin, st[lb, 2] - st[lb, 1])
    rs = np.zeros((max(1, nin), R), np.int64)
    re = np.zeros((max(1, nin), R), np.int64)
    cs_ = np.zeros(R, np.int64)
    ce_ = np.zeros(R, np.int64)
    ent_i = np.empty(8192, np.int64)
    ent_s = np.empty(8192, np.int64)
    wb = np.empty(4096 + gcap, np.int64)
    wl = np.empty(4096 + gcap)
    db = np.empty(4097, np.int64)  # a drain's waits
    dl = np.empty(4097)
    xb = np.empty(4096, np.int64)  # extra waits of a drain
    xl = np.empty(4096)
    drained = np.empty(gcap, np.int64)
    miss = np.empty((256, 4), np.int64)
    nmiss = np.zeros(1, np.int64)
    lat = np.zeros(1)  # the serial sum's latency share
    dma_bytes = np.zeros(ncores, np.int64)
    ni = 0
    # the nest, by an explicit stack of (body node, its end, the loop node (-1 root), iteration, core)
    depth = 1
    for k in range(nest.shape[0]):
        depth += 1
    fpos = np.empty(depth, np.int64)
    fend = np.empty(depth, np.int64)
    floop = np.empty(depth, np.int64)
    fit = np.empty(depth, np.int64)
    fcore = np.empty(depth, np.int64)
    sp = 0
    fpos[0], fend[0], floop[0], fit[0], fcore[0] = root[0], root[1], -1, 0, 0
    status = OK
    while sp >= 0:
        if fpos[sp] >= fend[sp]:
            ln = floop[sp]
            if ln < 0:
                sp -= 1
                continue
            fit[sp] += 1
            if fit[sp] >= nest[ln, 4]:
                sp -= 1
                continue
            env[nest[ln, 1]] = its[fit[sp], 1]
            if nest[ln, 2]:
                fcore[sp] = its[fit[sp], 0]
            fpos[sp] = nest[ln, 5]
            continue
        nd = fpos[sp]
        fpos[sp] += 1
        core = fcore[sp]
        if nest[nd, 0] == 0:  # a loop
            if nest[nd, 3] >= nest[nd, 4]:
                continue
            sp += 1
            fpos[sp], fend[sp], floop[sp], fit[sp] = nest[nd, 5], nest[nd, 6], nd, nest[nd, 3]
            env[nest[nd, 1]] = its[nest[nd, 3], 1]
            fcore[sp] = its[nest[nd, 3], 0] if nest[nd, 2] else core
            continue
        lb = nest[nd, 1]
        kind = st[lb, 0]
        a_lo, a_hi = st[lb, 1], st[lb, 2]
        # every access's region first (an execution past a tensor's edge does not run)
        ok = True
        for k in range(a_lo, a_hi):
            a = st_acc[k]
            if not _region(a, env, ax_ptr, ax_off, ax_ext, ax_dim, tm_ptr, t_var, t_coef,
                           rs[k - a_lo], re[k - a_lo]):
                ok = False
                break
        if not ok:
            continue
        if ni + g_n[core] + st[lb, 6] + st[lb, 8] - st[lb, 7] + 64 >= cap or g_n[core] + 1 >= gcap:
            status = FULL
            break
        pipe = core
        if kind == LOAD:
            a = st_acc[a_lo]
            t = ac_t[a]
            rank, pax = tn[t, 0], tn[t, 1]
            nm = st[lb, 3]
            q = qid[core, nm]
            if q < 0:
                q = qid[core, nm] = nq
                qcore[nq], qname[nq] = core, nm
                nq += 1
            done = execs[core, lb]
            j = done % st[lb, 4]
            # the chunks: a mixed-radix count over the axes (axis 0 outermost), as _chunks
            nch = 1
            for x in range(rank):
                c = st_chunk[lb, x]
                if c:
                    nch *= (re[0, x] - rs[0, x] + c - 1) // c
            for ch in range(nch):
                rem = ch
                for x in range(rank - 1, -1, -1):
                    c = st_chunk[lb, x]
                    if c:
                        m = (re[0, x] - rs[0, x] + c - 1) // c
                        cs_[x] = rs[0, x] + (rem % m) * c
                        ce_[x] = min(re[0, x], cs_[x] + c)
                        rem //= m
                    else:
                        cs_[x] = rs[0, x]
                        ce_[x] = re[0, x]
                for x in range(rank, R):
                    cs_[x] = 0
                    ce_[x] = 0
                slot = st[lb, 5] + j * st[lb, 6] + ch
                n = 1
                for x in range(rank):
                    n *= ce_[x] - cs_[x]
                dur = _dma_dur(lb, n, ce_[pax] - cs_[pax], dk_lo, dk_n, dk_rows, dk_dur, miss, nmiss)
                dma_bytes[core] += n * tn[t, 2]
                lat[0] += dma_fixed
                wb[0], wl[0] = sf_h[core, slot], dma_fixed  # slot_wait(free.pop(slot), fixed)
                sf_t[core, slot], sf_h[core, slot] = 0.0, -1
                if not _add(ni, q, dur, pipe, wb, wl, 1, 0, core, -1, lb, queue, label, start, end,
                            pred, why, lag, qfree, qlast, bft, bfb, held, bmask, ps, pe, po, pn,
                            pa, pb, flags):
                    status = FULL
                    break
                if not _write(core, t, cs_, ce_, ni, slot, hk, hv, hused, key, wr_s, wr_e, wr_i,
                              wr_slot, wr_n):
                    status = FULL
                    break
                ll_i[core], ll_slot[core] = ni, slot
                ni += 1
            if status != OK:
                break
            execs[core, lb] = done + 1
            continue
        if kind == STORE:
            a = st_acc[a_lo]
            t = ac_t[a]
            rank, pax = tn[t, 0], tn[t, 1]
            nw = 0
            if st[lb, 13]:  # a matmul output: the PSUM -> SBUF copy first
                slot = st[lb, 5] + (execs[core, lb] % st[lb, 4] if st[lb, 14] else 0)
                if evac_tab == -1:
                    flags[1] = 1
                xb[0] = sf_h[core, slot]
                xl[0] = 0.0
                sf_t[core, slot], sf_h[core, slot] = 0.0, -1
                nd0 = ni
                ni, okd = _drain(core, t, rank, rs[0], re[0], evac_q, evac_tab, xb, xl, 1, lb, te_fill,
                                 g_t, g_s, g_e, g_first, g_last, g_n, gsel, ni, qid, qcore, qname,
                                 nq, names, db, dl, ek_lo, ek_n, ek_dur, miss, nmiss, lat, queue,
                                 label, start, end, pred, why, lag, qfree, qlast, bft, bfb, held,
                                 bmask, ps, pe, po, pn, pa, pb, flags)
                nq = _nq(qcore, qid)
                if not okd:
                    status = FULL
                    break
                for i in range(nd0, ni):
                    if not _write(core, t, rs[0], re[0], i, slot, hk, hv, hused, key, wr_s, wr_e, wr_i,
                                  wr_slot, wr_n):
                        status = FULL
                        break
                if status != OK:
                    break
            ne = _writers(core, t, rank, rs[0], re[0], hk, hv, hused, key, wr_s, wr_e, wr_i,
                          wr_slot, wr_n, ent_i, ent_s, 0)
            if ne == 0 and ll_i[core] >= 0:  # the copy idiom: the last load's buffer
                ent_i[0], ent_s[0] = ll_i[core], ll_slot[core]
                ne = 1
            for k in range(ne):
                wb[k], wl[k] = ent_i[k], dma_fixed
            nw = ne
            if nw == 0:
                wb[0], wl[0] = -1, dma_fixed
                nw = 1
            n = 1
            for x in range(rank):
                n *= re[0, x] - rs[0, x]
            dur = _dma_dur(lb, n, re[0, pax] - rs[0, pax], dk_lo, dk_n, dk_rows, dk_dur, miss, nmiss)
            dma_bytes[core] += n * tn[t, 2]
            lat[0] += dma_fixed
            nm = st[lb, 3]
            q = qid[core, nm]
            if q < 0:
                q = qid[core, nm] = nq
                qcore[nq], qname[nq] = core, nm
                nq += 1
            if not _add(ni, q, dur, pipe, wb, wl, nw, 0, core, -1, lb, queue, label, start, end,
                        pred, why, lag, qfree, qlast, bft, bfb, held, bmask, ps, pe, po, pn, pa,
                        pb, flags):
                status = FULL
                break
            _read_done(core, ent_s, ne, ni, end, sf_t, sf_h)
            ni += 1
            execs[core, lb] += 1
            continue
        if kind == MATMUL:
            to = ac_t[st_acc[a_lo + 2]]
            ne = 0
            for k in range(2):
                t = ac_t[st_acc[a_lo + k]]
                ne = _writers(core, t, tn[t, 0], rs[k], re[k], hk, hv, hused, key, wr_s, wr_e,
                              wr_i, wr_slot, wr_n, ent_i, ent_s, ne)
            for k in range(ne):
                w = ent_i[k]
                wb[k] = w
                wl[k] = te_fill if names[qname[queue[w]], 0] == tkind else 0.0  # ent_lag
            nmv = st[lb, 10]
            n_t = re[1, nmv] - rs[1, nmv]
            bt = 1
            for k in range(st[lb, 11], st[lb, 12]):
                bt *= re[0, batch[k]] - rs[0, batch[k]]
            ro_rank = tn[to, 0]
            g = -1
            for k in range(g_n[core]):
                if g_t[core, k] == to:
                    same = True
                    for x in range(ro_rank):
                        if g_s[core, k, x] != rs[2, x]:
                            same = False
                            break
                    if same:
                        g = k
                        break
            need = 0
            if g < 0:
                need = min(psum_banks, max(1, -(-n_t * 4 // bank_bytes)) * bt)
            cyc = max(n_t, mm_init) * te_slow * bt
            nm = st[lb, 3]
            q = qid[core, nm]
            if q < 0:
                q = qid[core, nm] = nq
                qcore[nq], qname[nq] = core, nm
                nq += 1
            if not _add(ni, q, cyc * te_cycle, -1, wb, wl, ne, need, core, -1, lb, queue, label,
                        start, end, pred, why, lag, qfree, qlast, bft, bfb, held, bmask, ps, pe,
                        po, pn, pa, pb, flags):
                status = FULL
                break
            if g < 0:
                g = g_n[core]
                g_n[core] += 1
                g_t[core, g] = to
                g_s[core, g] = rs[2]
                g_e[core, g] = re[2]
                g_first[core, g] = ni
            g_last[core, g] = ni
            _read_done(core, ent_s, ne, ni, end, sf_t, sf_h)
            ni += 1
            continue
        if kind == ACC:
            t_out = ac_t[st_acc[a_lo]]
            t_src = ac_t[st_acc[a_lo + 1]]
            key[0] = -1 - core
            key[1] = t_out
            key[2:2 + R] = rs[0]
            key[2 + R:] = 0
            p, found = _hfind(hk, hused, key)
            if not found:
                if nacc_slots + acc_base >= nslots:
                    status = FULL
                    break
                hk[p] = key
                hused[p] = True
                hv[p, 0] = acc_base + nacc_slots
                nacc_slots += 1
                hv[0, 3] += 1
                if 2 * hv[0, 3] > hcap:
                    status = FULL
                    break
            slot = hv[p, 0]
            ne = _writers(core, t_out, tn[t_out, 0], rs[0], re[0], hk, hv, hused, key, wr_s, wr_e,
                          wr_i, wr_slot, wr_n, ent_i, ent_s, 0)
            for k in range(ne):
                xb[k], xl[k] = ent_i[k], 0.0
            xb[ne], xl[ne] = sf_h[core, slot], 0.0
            sf_t[core, slot], sf_h[core, slot] = 0.0, -1
            nd0 = ni
            ni, okd = _drain(core, t_src, tn[t_src, 0], rs[1], re[1], evac_q, evac_tab, xb, xl, ne + 1,
                             lb, te_fill, g_t, g_s, g_e, g_first, g_last, g_n, gsel, ni, qid, qcore,
                             qname, nq, names, db, dl, ek_lo, ek_n, ek_dur, miss, nmiss, lat, queue,
                             label, start, end, pred, why, lag, qfree, qlast, bft, bfb, held, bmask,
                             ps, pe, po, pn, pa, pb, flags)
            nq = _nq(qcore, qid)
            if not okd:
                status = FULL
                break
            for i in range(nd0, ni):
                if not _write(core, t_out, rs[0], re[0], i, slot, hk, hv, hused, key, wr_s, wr_e,
                              wr_i, wr_slot, wr_n):
                    status = FULL
                    break
            if status != OK:
                break
            continue
        # an op: inputs from a_lo + 1, its output at a_lo
        t_out = ac_t[st_acc[a_lo]]
        w_lo, w_hi = st[lb, 7], st[lb, 8]
        first_q = work[w_lo, 0]
        nw = 0
        ne = 0
        for k in range(a_lo + 1, a_hi):
            t = ac_t[st_acc[k]]
            rk = k - a_lo
            if st[lb, 15] >> (rk - 1) & 1:  # reads a matmul output: drain its open groups
                hit = False
                for gg in range(g_n[core]):
                    if g_t[core, gg] == t and _overlaps(g_s[core, gg], g_e[core, gg], rs[rk], re[rk], tn[t, 0]):
                        hit = True
                        break
                if hit:
                    nd0 = ni
                    ni, okd = _drain(core, t, tn[t, 0], rs[rk], re[rk], first_q, work[w_lo, 3], xb,
                                     xl, 0, lb, te_fill, g_t, g_s, g_e, g_first, g_last, g_n, gsel,
                                     ni, qid, qcore, qname, nq, names, db, dl, ek_lo, ek_n,
                                     ek_dur, miss, nmiss, lat, queue, label, start, end, pred, why,
                                     lag, qfree, qlast, bft, bfb, held, bmask, ps, pe, po, pn, pa,
                                     pb, flags)
                    nq = _nq(qcore, qid)
                    if not okd:
                        status = FULL
                        break
                    for i in range(nd0, ni):
                        wb[nw], wl[nw] = i, 0.0
                        nw += 1
                    continue
            ne0 = ne
            ne = _writers(core, t, tn[t, 0], rs[rk], re[rk], hk, hv, hused, key, wr_s, wr_e, wr_i,
                          wr_slot, wr_n, ent_i, ent_s, ne)
            for m in range(ne0, ne):
                w = ent_i[m]
                wb[nw] = w
                wl[nw] = te_fill if names[qname[queue[w]], 0] == tkind else 0.0  # ent_lag
                nw += 1
        if status != OK:
            break
        slot = st[lb, 5] + (execs[core, lb] % st[lb, 4] if st[lb, 14] else 0)
        wb[nw], wl[nw] = sf_h[core, slot], 0.0  # slot_wait(slot_free.get(slot))
        nw += 1
        r0 = 0 if st[lb, 9] else 1
        t0 = ac_t[st_acc[a_lo + r0]]
        n = 1
        for x in range(tn[t0, 0]):
            n *= re[r0, x] - rs[r0, x]
        for k in range(w_lo, w_hi):
            nm = work[k, 0]
            if work[k, 1] == -2:  # the Tensor Engine: 128 x 128 elements per MM_INIT instruction
                dur = te_cycle * max(mm_init, 128) * (-(-n // (128 * 128)))
            else:
                dur = _eng_dur(work[k, 1], n, ek_lo, ek_n, ek_dur, miss, nmiss)
            q = qid[core, nm]
            if q < 0:
                q = qid[core, nm] = nq
                qcore[nq], qname[nq] = core, nm
                nq += 1
            if not _add(ni, q, dur, -1, wb, wl, nw, 0, core, -1, lb, queue, label, start, end,
                        pred, why, lag, qfree, qlast, bft, bfb, held, bmask, ps, pe, po, pn, pa,
                        pb, flags):
                status = FULL
                break
            wb[0], wl[0] = ni, 0.0
            nw = 1
            ni += 1
        if status != OK:
            break
        i = ni - 1
        _read_done(core, ent_s, ne, i, end, sf_t, sf_h)
        sf_t[core, slot], sf_h[core, slot] = 0.0, -1  # after its own reads
        if not _write(core, t_out, rs[0], re[0], i, slot, hk, hv, hused, key, wr_s, wr_e, wr_i,
                      wr_slot, wr_n):
            status = FULL
            break
        execs[core, lb] += 1
    if status == OK and nmiss[0]:
        status = MISS
    return (status, ni, nq, queue, label, start, end, pred, why, lag, qcore, qname, ps, pe, po, pn,
            flags, lat[0], dma_bytes, miss[:min(nmiss[0], miss.shape[0])], nmiss[0])


@njit(cache=True)
def _nq(qcore, qid):
    """Queues created so far (the count _drain may have raised)."""
    n = 0
    for c in range(qid.shape[0]):
        for m in range(qid.shape[1]):
            if qid[c, m] >= 0:
                n += 1
    return n


@njit(cache=True)
def _read_done(core, ent_s, ne, i, end, sf_t, sf_h):
    """_Run._read_done with the slot's wait kept as the running last reader (slot_wait's choice:
    the first reader to end latest, after 0)."""
    for k in range(ne):
        slot = ent_s[k]
        if slot >= 0 and end[i] > sf_t[core, slot]:
            sf_t[core, slot] = end[i]
            sf_h[core, slot] = i


@njit(cache=True)
def _drain(core, t, rank, s, e, nm, tab, xb, xl, nx, lb, te_fill, g_t, g_s, g_e, g_first, g_last,
           g_n, gsel, ni, qid, qcore, qname, nq, names, db, dl, ek_lo, ek_n, ek_dur, miss, nmiss,
           lat, queue, label, start, end, pred, why, lag, qfree, qlast, bft, bfb, held, bmask, ps,
           pe, po, pn, pa, pb, flags):
    """_Run._drain: one read-out instruction per open group of tensor ``t`` overlapping (s, e),
    in the order they opened, each after the extra waits and its last matmul plus the fill, freeing
    its banks; the groups close. Returns the next instruction index and False when an array is
    full."""
    m = 0
    for k in range(g_n[core]):
        if g_t[core, k] == t and _overlaps(g_s[core, k], g_e[core, k], s, e, rank):
            gsel[m] = k
            m += 1
    if m == 0:
        return ni, True
    q = qid[core, nm]
    if q < 0:
        q = qid[core, nm] = nq
        qcore[nq], qname[nq] = core, nm
    for j in range(m):
        k = gsel[j]
        for w in range(nx):
            db[w], dl[w] = xb[w], xl[w]
        db[nx], dl[nx] = g_last[core, k], te_fill
        n = 1
        for x in range(rank):
            n *= g_e[core, k, x] - g_s[core, k, x]
        dur = _eng_dur(tab, n, ek_lo, ek_n, ek_dur, miss, nmiss)
        if not _add(ni, q, dur, -1, db, dl, nx + 1, 0, core, g_first[core, k], lb, queue, label,
                    start, end, pred, why, lag, qfree, qlast, bft, bfb, held, bmask, ps, pe, po,
                    pn, pa, pb, flags):
            return ni, False
        lat[0] += te_fill
        ni += 1
    # close them, keeping the others' order
    w = 0
    j = 0
    for k in range(g_n[core]):
        if j < m and gsel[j] == k:
            j += 1
            continue
        if w != k:
            g_t[core, w] = g_t[core, k]
            g_s[core, w] = g_s[core, k]
            g_e[core, w] = g_e[core, k]
            g_first[core, w] = g_first[core, k]
            g_last[core, w] = g_last[core, k]
        w += 1
    g_n[core] = w
    return ni, True


@njit(cache=True)
def critical_path(pred, end, code, start, nkinds):
    """Scheduler.critical_path (from the first instruction to end last back along ``pred``) and
    the seconds of each kind on it, summed along it as timeline() sums them."""
    i = np.argmax(end)
    seen = np.zeros(len(pred), np.bool_)
    back = np.empty(len(pred), np.int64)
    n = 0
    while i >= 0 and not seen[i]:
        seen[i] = True
        back[n] = i
        n += 1
        i = pred[i]
    path = back[:n][::-1].copy()
    share = np.zeros(nkinds)
    hit = np.zeros(nkinds, np.bool_)
    for i in path:
        k = code[i]
        share[k] = share[k] + end[i] - start[i]
        hit[k] = True
    return path, share, hit
