"""Operation codes of the compiled nest (:func:`loopsim.sim.trace.compile_nest`), shared with the
jitted walker (:mod:`loopsim.sim._gen`) without importing numba."""

OP_LOOP, OP_END, OP_STMT = 0, 1, 2

# Columns of the compiled nest's tables (:class:`loopsim.sim.trace.Nest`), by name.
#: ``code`` int64[n, 3]: (operation, loop or statement number, jump target)
C_OP, C_ARG, C_JUMP = range(3)
#: ``loops`` int64[n_loops, 5]: trips, step, edge terms [t0, t1), edge extent (0: no edge)
L_TRIPS, L_STEP, L_T0, L_T1, L_EDGE = range(5)
#: ``stmts`` int64[n_stmts, 13]: its accesses [a0, a1), request slots, edge check; then the
#: matmul: kind (0 none, 1 whole tiles, 2 ragged), the axes rows of K, M, N, the full K_t, M_t,
#: N_t, FLOPs of one execution and instructions (the batch tile) of one execution
(S_A0, S_A1, S_SLOTS, S_CHECK, S_MM, S_ROW_K, S_ROW_M, S_ROW_N, S_KT, S_MT, S_NT, S_FLOPS,
 S_INSTR) = range(13)
#: the matmul statement kinds of column S_MM
MM_NONE, MM_WHOLE, MM_RAGGED = 0, 1, 2
#: ``accs`` int64[n_accs, 10]: first object id, event kind, skip (a PSUM use), axes [x0, x1),
#: simple (one block), linear terms [l0, l1), zeroed (an SBUF accumulator), the constant of a
#: simple access's linear id (its constant offsets, in blocks, times their id strides)
A_OFFSET, A_KIND, A_SKIP, A_X0, A_X1, A_SIMPLE, A_L0, A_L1, A_ZEROED, A_LIN0 = range(10)
#: ``axes`` int64[n_axes, 8]: loop terms [t0, t1), dimension, block, blocks, full blocks, id
#: stride, constant offset of the tile's start (elements)
X_T0, X_T1, X_DIM, X_BLOCK, X_COUNT, X_NFULL, X_STRIDE, X_OFF = range(8)
#: ``terms`` and ``edge_terms`` int64[n, 2]: (loop number, coefficient) of one term of a start
#: ``lin`` int64[n, 2]: (loop number, id coefficient) of a simple access's linear id
N_LOOP, N_COEF = range(2)
#: ``fast`` int64[n_loops, 5]: a fast loop's requests rows[r0:r1], and per iteration its most
#: requests, FLOPs and instructions (r0 = -1: not fast)
F_R0, F_R1, F_EVENTS, F_FLOPS, F_INSTR = range(5)
#: ``rows`` int64[R, 4]: a fast loop's request: access, id stride along the loop, kind, plain
R_ACC, R_STRIDE, R_KIND, R_PLAIN = range(4)
