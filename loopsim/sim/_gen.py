"""Jitted trace generator: walks a compiled loop nest and writes its tile requests in order.

Private: :mod:`loopsim.sim.trace` compiles a kernel's nest into the flat int64 tables below and calls
:func:`walk` through its checked wrappers. One call fills a buffer with the next requests of the
trace and stops before a statement whose requests would not fit, leaving its place (program
counter, loop counters, partial-sum state) in the arrays it was given, so the next call resumes
there: the same function builds a whole trace or streams it chunk by chunk.

Tables (all int64, built by ``trace.compile_nest``):

``code[pc] = (op, arg, jump)``
    ``OP_LOOP``: arg = loop number, jump = pc after its END. ``OP_END``: arg = loop number,
    jump = first pc of its body. ``OP_STMT``: arg = statement number.
``loops[L] = (trips, step, edge_t0, edge_t1, edge_extent)``
    an iteration whose ``sum(coef * ival[loop])`` over ``edge_terms[edge_t0:edge_t1]`` (rows of
    (loop, coef)) is ``>= edge_extent`` does not run
    (the loop has run past a tensor's edge; ``edge_t0 == edge_t1``: no such rule). Iterations
    past the edge are all at the end, so the loop stops at the first one.
``stmts[s] = (acc0, acc1, max_events, check, matmul, k_ax, m_ax, n_ax, kt0, mt0, nt0, flops, batch)``
    the statement's accesses ``accs[acc0:acc1]``, how many requests it may emit at most, whether
    a tile of it can start past its tensor's edge (then it is checked each time), and for a
    matmul (1: tiles always whole, ``flops`` each; 2: ragged) the axis rows (into ``axes``) of its
    K, M and N extents and its full tile extents; ``batch``: instructions per execution (the
    batch values its tile spans, never ragged; 1 for a plain matmul), ``flops`` includes them.
``accs[a] = (first_id, kind, skip, ax0, ax1, simple, l0, l1, zeroed, lin0)``
    ``skip``: a read of a PSUM tile, no SBUF request (dropped). ``simple``: the tile is one block,
    whose id is ``first_id + lin0 + sum(cnt[lin[l0:l1, 0]] * lin[l0:l1, 1])``. ``zeroed``: the tensor is
    an SBUF accumulator, which starts as zeros: a read that is its block's first request is
    dropped.
``axes[x] = (t0, t1, shape, block, blocks, nfull, id_stride, offset)``
    per tensor dimension of an access: its start is ``offset + sum(coef * ival[loop])`` over the
    rows (loop, coef) of ``terms[t0:t1]``; the dimension, its block size and count, the blocks a full tile spans and
    the id stride of one block along it.
``fast[L] = (r0, r1, events, flops, instructions)``, ``rows[r] = (access, stride, kind, plain)``
    a fast loop (``r0 >= 0``, see ``trace._fast_loops``): its body is statements whose requests
    are one block each, so each request's id advances by ``stride`` per iteration. The walker
    runs as many whole iterations as fit at once, one add and two stores per request, and adds
    the iterations' FLOPs and instructions in one step; a partial iteration goes statement by
    statement as in any other loop.

State: ``cnt``/``ival`` (int64[L]) loop counters and variable values; ``last_kind``
(int8[n_objects]: low bits 0 none, 1 accumulated, 2 stored, for the partial-sum rule; bit
``_SEEN`` once an accumulator's block has been requested); ``st`` (int64[4]) =
(pc, flops, instructions, overflow flag).
"""

import numpy as np
from loopsim.sim._jit import njit

from loopsim.ir.codes import ACC as _ACC, PRODUCE as _PRODUCE, STORE as _STORE, USE as _USE
from loopsim.sim._codes import MM_RAGGED, OP_LOOP, OP_STMT
from loopsim.sim._codes import (  # the tables' columns, by name
    A_KIND, A_L0, A_L1, A_LIN0, A_OFFSET, A_SIMPLE, A_SKIP, A_X0, A_X1, A_ZEROED, C_ARG, C_JUMP, C_OP,
    F_EVENTS, F_FLOPS, F_INSTR, F_R0, F_R1, L_EDGE, L_STEP, L_T0, L_T1, L_TRIPS, N_COEF, N_LOOP,
    R_ACC, R_KIND, R_PLAIN, R_STRIDE, S_A0, S_A1, S_CHECK, S_FLOPS, S_INSTR, S_KT, S_MM,
    S_ROW_K, S_SLOTS, X_BLOCK, X_COUNT, X_DIM, X_NFULL, X_OFF, X_STRIDE, X_T0, X_T1)

_FLOP_LIMIT = 2**62
_SEEN = 4  # last_kind bit: the object has been requested (SBUF accumulators start as zeros)

# Every table and counter int64, ids int32 (int64 past 2**31 objects), kinds int8. ``axes`` and
# ``terms`` are None for a nest whose statements are all simple (no tile past an edge, no ragged
# matmul, one block per request): numba then prunes the code that reads them, and that variant
# compiles in 1.5 s CPU against 1.9 s for the general one (benchmarks/bench_plain.py). A process
# that has the general variant already runs simple nests on it too (``trace.Walker``), so it
# compiles the general one only when a nest needs it and never compiles the simple one after it.


@njit(cache=True, nogil=True, inline="always")
def _emit(o, kind, zeroed, skip, last_kind, obj_out, kind_out, n):
    """One request of object ``o`` under the partial-sum and zeroed-accumulator rules; returns
    the new count (``n`` when the request is dropped)."""
    lk = last_kind[o]
    if kind == _ACC:  # stays in PSUM unless the tile was stored before: a read-back
        last_kind[o] = (lk & _SEEN) | 1
        if lk & 3 != 2:
            return n
    elif kind == _STORE:
        last_kind[o] = (lk & _SEEN) | 2
    if zeroed:
        last_kind[o] |= _SEEN
        if not lk & _SEEN and kind == _USE:  # the first request reads zeros
            return n
        if skip:
            return n
    obj_out[n] = o
    kind_out[n] = kind
    return n + 1


@njit(cache=True, nogil=True)
def walk(code, loops, edge_terms, stmts, accs, axes, terms, lin, fast, rows, cnt, ival,
         last_kind, st, scratch, obj_out, kind_out):
    """Emit the next requests into ``obj_out``/``kind_out`` (up to their length). Returns how
    many; the trace is finished when ``st[0] == code.shape[0]``. ``scratch``: int64, at least
    as long as the most rows of a fast loop and the most dimensions of an access. ``axes`` and
    ``terms``: None skips the statement-level checks (a nest with ``Nest.general`` False)."""
    cap = obj_out.shape[0]
    nops = code.shape[0]
    n = 0
    pc = st[0]
    flops = st[1]
    instr = st[2]
    while pc < nops:
        op = code[pc, C_OP]
        if op != OP_STMT:  # a loop's first iteration (OP_LOOP) or its next one (OP_END)
            L = code[pc, C_ARG]
            if op == OP_LOOP:
                c = 0
                body = pc + 1
                after = code[pc, C_JUMP]
            else:
                c = cnt[L] + 1
                body = code[pc, C_JUMP]
                after = pc + 1
                if c >= loops[L, L_TRIPS]:
                    pc = after
                    continue
            step = loops[L, L_STEP]
            cnt[L] = c
            ival[L] = c * step
            # iterations c, c + 1, ... run while sum(ival[edge terms]) < extent: L's own terms
            # grow by ``mult * step`` per iteration, the rest are fixed inside the loop
            end = loops[L, L_TRIPS]
            t0 = loops[L, L_T0]
            t1 = loops[L, L_T1]
            if t0 != t1:
                fixed = 0
                mult = 0
                for t in range(t0, t1):
                    v = edge_terms[t, 0]
                    if v == L:
                        mult += edge_terms[t, 1]
                    else:
                        fixed += ival[v] * edge_terms[t, 1]
                room = loops[L, L_EDGE] - fixed - mult * ival[L]
                if room <= 0:
                    pc = after
                    continue
                if mult:
                    end = min(end, c + (room + mult * step - 1) // (mult * step))
            r0 = fast[L, F_R0]
            if r0 < 0:
                pc = body
                continue
            # a fast loop: its body is statements whose requests are one block each, the id
            # advancing by a fixed stride per iteration: run whole iterations, one add per request
            per = fast[L, F_EVENTS]
            stop = end if per == 0 else min(end, c + (cap - n) // per)
            r1 = fast[L, F_R1]
            for r in range(r0, r1):
                a = rows[r, R_ACC]
                o = accs[a, A_OFFSET] + accs[a, A_LIN0]
                for t in range(accs[a, A_L0], accs[a, A_L1]):
                    o += cnt[lin[t, N_LOOP]] * lin[t, N_COEF]
                scratch[r - r0] = o
            for _ in range(c, stop):
                for r in range(r0, r1):
                    o = scratch[r - r0]
                    scratch[r - r0] = o + rows[r, R_STRIDE]
                    kind = rows[r, R_KIND]
                    if rows[r, R_PLAIN]:  # plain: no partial-sum or accumulator state
                        obj_out[n] = o
                        kind_out[n] = kind
                        n += 1
                    else:
                        a = rows[r, R_ACC]
                        n = _emit(o, kind, accs[a, A_ZEROED], accs[a, A_SKIP], last_kind, obj_out, kind_out, n)
            k = stop - c
            e = fast[L, F_FLOPS]
            if e and k > (_FLOP_LIMIT - flops) // e:
                st[3] = 1
            else:
                flops += k * e
            instr += k * fast[L, F_INSTR]
            if stop < end:  # the next iteration did not fit: the statement-by-statement path takes it
                cnt[L] = stop
                ival[L] = stop * step
                pc = body
            else:
                pc = after
            continue
        s = code[pc, C_ARG]
        if n + stmts[s, S_SLOTS] > cap:
            break
        pc += 1
        a0 = stmts[s, S_A0]
        a1 = stmts[s, S_A1]
        if axes is not None and stmts[s, S_CHECK]:  # a tile starting past its tensor's edge: not run
            ok = True
            for a in range(a0, a1):
                for x in range(accs[a, A_X0], accs[a, A_X1]):
                    v = axes[x, X_OFF]
                    for t in range(axes[x, X_T0], axes[x, X_T1]):
                        v += ival[terms[t, 0]] * terms[t, 1]
                    if v >= axes[x, X_DIM]:
                        ok = False
            if not ok:
                continue
        mm = stmts[s, S_MM]
        if mm:
            e = stmts[s, S_FLOPS]
            if axes is not None and mm == MM_RAGGED:  # ragged: the instruction covers what lies inside
                e = 2
                for j in range(3):
                    x = stmts[s, S_ROW_K + j]
                    v = axes[x, X_OFF]
                    for t in range(axes[x, X_T0], axes[x, X_T1]):
                        v += ival[terms[t, 0]] * terms[t, 1]
                    e *= min(stmts[s, S_KT + j], axes[x, X_DIM] - v)
                e *= stmts[s, S_INSTR]
            instr += stmts[s, S_INSTR]
            if flops > _FLOP_LIMIT - e:
                st[3] = 1
            else:
                flops += e
        for a in range(a0, a1):
            zeroed = accs[a, A_ZEROED]
            skip = accs[a, A_SKIP]
            if skip and not zeroed:
                continue
            kind = accs[a, A_KIND]
            base = accs[a, A_OFFSET]
            x0 = accs[a, A_X0]
            x1 = accs[a, A_X1]
            total = 1
            if axes is None or accs[a, A_SIMPLE]:  # one block per tile: id linear in the loop counters
                base += accs[a, A_LIN0]
                for t in range(accs[a, A_L0], accs[a, A_L1]):
                    base += cnt[lin[t, N_LOOP]] * lin[t, N_COEF]
            else:
                for x in range(x0, x1):
                    v = axes[x, X_OFF]
                    for t in range(axes[x, X_T0], axes[x, X_T1]):
                        v += ival[terms[t, 0]] * terms[t, 1]
                    b = v // axes[x, X_BLOCK]
                    scratch[x - x0] = b
                    base += b * axes[x, X_STRIDE]
                    total *= axes[x, X_NFULL]
            for e in range(total):
                o = base
                if axes is not None and total > 1:  # e-th block, last axis fastest; past the edge: skip
                    r = e
                    valid = True
                    for x in range(x1 - 1, x0 - 1, -1):
                        nf = axes[x, X_NFULL]
                        j = r % nf
                        r //= nf
                        if scratch[x - x0] + j >= axes[x, X_COUNT]:
                            valid = False
                        o += j * axes[x, X_STRIDE]
                    if not valid:
                        continue
                n = _emit(o, kind, zeroed, skip, last_kind, obj_out, kind_out, n)
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
