"""Event kinds a statement generates, the codes shared by the IR, the trace and the jitted walker
(:mod:`loopsim.sim._gen` imports them from here; nothing else is imported, so numba code may too).

LOAD/STORE cross HBM as written; USE and PRODUCE touch SBUF only; ACC is an accumulation into an
output tile (PSUM), which reads the partial sum back only when the tile was stored before its
accumulation finished.
"""

LOAD, USE, STORE, PRODUCE, ACC = 0, 1, 2, 3, 4
#: the kinds that overwrite their block (no fetch on a miss)
WRITE_KINDS = (STORE, PRODUCE)
