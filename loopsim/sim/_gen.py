"""Jitted trace generator: walks a compiled loop nest and writes its tile requests in order.

Private: :mod:`loopsim.trace` compiles a kernel's nest into the flat int64 tables below and calls
:func:`walk` through its checked wrappers. One call fills a buffer with the next requests of the
trace and stops before a statement whose requests would not fit, leaving its place (program
counter, loop counters, partial-sum state) in the arrays it was given, so the next call resumes
there: the same function builds a whole trace or streams it chunk by chunk.

Tables (all int64, built by ``trace.compile_nest``):

``code[pc] = (op, arg, jump)``
    ``OP_LOOP``: arg = loop number, jump = pc after its END. ``OP_END``: arg = loop number,
    jump = first pc of its body. ``OP_STMT``: arg = statement number.
``loops[L] = (trips, step, edge_t0, edge_t1, edge_extent)``
    an iteration whose ``sum(ival[edge_terms[edge_t0:edge_t1]]) >= edge_extent`` does not run
    (the loop has run past a tensor's edge; ``edge_t0 == edge_t1``: no such rule). Iterations
    past the edge are all at the end, so the loop stops at the first one.
``stmts[s] = (acc0, acc1, max_events, check, matmul, k_ax, m_ax, n_ax, kt0, mt0, nt0, flops, batch)``
    the statement's accesses ``accs[acc0:acc1]``, how many requests it may emit at most, whether
    a tile of it can start past its tensor's edge (then it is checked each time), and for a
    matmul (1: tiles always whole, ``flops`` each; 2: ragged) the axis rows (into ``axes``) of its
    K, M and N extents and its full tile extents; ``batch``: instructions per execution (the
    batch values its tile spans, never ragged; 1 for a plain matmul), ``flops`` includes them.
``accs[a] = (first_id, kind, skip, ax0, ax1, simple, l0, l1, zeroed)``
    ``skip``: a read of a PSUM tile, no SBUF request (dropped). ``simple``: the tile is one block,
    whose id is ``first_id + sum(cnt[lin[l0:l1, 0]] * lin[l0:l1, 1])``. ``zeroed``: the tensor is
    an SBUF accumulator, which starts as zeros: a read that is its block's first request is
    dropped.
``axes[x] = (t0, t1, shape, block, blocks, nfull, id_stride)``
    per tensor dimension of an access: the loop numbers summed for its start
    (``terms[t0:t1]``), the dimension, its block size and count, the blocks a full tile spans and
    the id stride of one block along it.

State: ``cnt``/``ival`` (int64[L]) loop counters and variable values; ``last_kind``
(int8[n_objects]: low bits 0 none, 1 accumulated, 2 stored, for the partial-sum rule; bit
``_SEEN`` once an accumulator's block has been requested); ``st`` (int64[4]) =
(pc, flops, instructions, overflow flag).
"""

import numpy as np
from numba import njit

from loopsim.sim._codes import OP_END, OP_LOOP, OP_STMT

_USE, _STORE, _PRODUCE, _ACC = 1, 2, 3, 4
_FLOP_LIMIT = 2**62
_SEEN = 4  # last_kind bit: the object has been requested (SBUF accumulators start as zeros)


@njit(cache=True, nogil=True)
def _edge_ok(loops, edge_terms, ival, L):
    t0 = loops[L, 2]
    t1 = loops[L, 3]
    if t0 == t1:
        return True
    s = 0
    for t in range(t0, t1):
        s += ival[edge_terms[t]]
    return s < loops[L, 4]


@njit(cache=True, nogil=True)
def walk(code, loops, edge_terms, stmts, accs, axes, terms, lin, cnt, ival, last_kind, st,
         obj_out, kind_out, store):
    """Emit the next requests into ``obj_out``/``kind_out`` (up to their length; nothing is
    written when ``store`` is False, the requests are only counted). Returns how many; the trace
    is finished when ``st[0] == code.shape[0]``."""
    cap = obj_out.shape[0] if store else np.int64(2**62)
    nops = code.shape[0]
    n = 0
    pc = st[0]
    flops = st[1]
    instr = st[2]
    bs = np.empty(16, np.int64)
    while pc < nops:
        op = code[pc, 0]
        if op == OP_LOOP:
            L = code[pc, 1]
            cnt[L] = 0
            ival[L] = 0
            if _edge_ok(loops, edge_terms, ival, L):
                pc += 1
            else:
                pc = code[pc, 2]
            continue
        if op == OP_END:
            L = code[pc, 1]
            c = cnt[L] + 1
            if c < loops[L, 0]:
                cnt[L] = c
                ival[L] = c * loops[L, 1]
                if _edge_ok(loops, edge_terms, ival, L):
                    pc = code[pc, 2]
                    continue
            pc += 1
            continue
        s = code[pc, 1]
        if n + stmts[s, 2] > cap:
            break
        pc += 1
        a0 = stmts[s, 0]
        a1 = stmts[s, 1]
        if stmts[s, 3]:  # a tile starting past its tensor's edge: the statement does not run
            ok = True
            for a in range(a0, a1):
                for x in range(accs[a, 3], accs[a, 4]):
                    v = 0
                    for t in range(axes[x, 0], axes[x, 1]):
                        v += ival[terms[t]]
                    if v >= axes[x, 2]:
                        ok = False
            if not ok:
                continue
        mm = stmts[s, 4]
        if mm:
            if mm == 1:
                e = stmts[s, 11]
            else:  # ragged tiles: the instruction covers only what lies inside the tensors
                e = 2
                for j in range(3):
                    x = stmts[s, 5 + j]
                    v = 0
                    for t in range(axes[x, 0], axes[x, 1]):
                        v += ival[terms[t]]
                    e *= min(stmts[s, 8 + j], axes[x, 2] - v)
                e *= stmts[s, 12]
            instr += stmts[s, 12]
            if flops > _FLOP_LIMIT - e:
                st[3] = 1
            else:
                flops += e
        for a in range(a0, a1):
            zeroed = accs[a, 8]
            if accs[a, 2] and not zeroed:
                continue
            kind = accs[a, 1]
            base = accs[a, 0]
            if accs[a, 5]:  # one block per tile: the id is linear in the loop counters
                for t in range(accs[a, 6], accs[a, 7]):
                    base += cnt[lin[t, 0]] * lin[t, 1]
                total = 1
            else:
                x0 = accs[a, 3]
                x1 = accs[a, 4]
                total = 1
                for x in range(x0, x1):
                    v = 0
                    for t in range(axes[x, 0], axes[x, 1]):
                        v += ival[terms[t]]
                    b = v // axes[x, 3]
                    bs[x - x0] = b
                    base += b * axes[x, 6]
                    total *= axes[x, 5]
            for e in range(total):
                o = base
                if total > 1:  # the e-th block of the tile, last axis fastest; blocks past the edge skipped
                    r = e
                    valid = True
                    for x in range(x1 - 1, x0 - 1, -1):
                        nf = axes[x, 5]
                        j = r % nf
                        r //= nf
                        if bs[x - x0] + j >= axes[x, 4]:
                            valid = False
                        o += j * axes[x, 6]
                    if not valid:
                        continue
                lk = last_kind[o]
                if kind == _ACC:  # stays in PSUM unless the tile was stored before: a read-back
                    last_kind[o] = (lk & _SEEN) | 1
                    if lk & 3 != 2:
                        continue
                elif kind == _STORE:
                    last_kind[o] = (lk & _SEEN) | 2
                if zeroed:
                    last_kind[o] |= _SEEN
                    if not lk & _SEEN and kind == _USE:  # the first request reads zeros
                        continue
                    if accs[a, 2]:
                        continue
                if store:
                    obj_out[n] = o
                    kind_out[n] = kind
                n += 1
    st[0] = pc
    st[1] = flops
    st[2] = instr
    return n


@njit(cache=True, nogil=True)
def last_index(obj, n_objects, base, last):
    """``last[o]`` = base + the index of the last request of ``o`` in ``obj`` (updated in place)."""
    for i in range(obj.shape[0]):
        last[obj[i]] = base + i


@njit(cache=True, nogil=True)
def dead_flags(obj, base, last, temp, dead):
    """``dead[i]``: request i is the last one of an object flagged in ``temp``."""
    for i in range(obj.shape[0]):
        o = obj[i]
        dead[i] = temp[o] and last[o] == base + i


@njit(cache=True, nogil=True)
def write_flags(kind, out):
    """``out[i]``: request i overwrites its object (a store, or an op producing the tile)."""
    for i in range(kind.shape[0]):
        k = kind[i]
        out[i] = k == _STORE or k == _PRODUCE
