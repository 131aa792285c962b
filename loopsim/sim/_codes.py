"""Operation codes of the compiled nest (:func:`loopsim.sim.trace.compile_nest`), shared with the
jitted walker (:mod:`loopsim.sim._gen`) without importing numba."""

OP_LOOP, OP_END, OP_STMT = 0, 1, 2
