"""Matmul C = lhsT.T @ rhs whose block sizes are module-level constants (written for loopsim's
tests, nki.isa dst= style): the kernel reads TILES_M and TILES_N from the module when it runs, so
a kernel reference searches them with --space like keyword parameters.

lhsT is K x M (K on the partitions), rhs is K x N, the result M x N; one block is TILES_M x 128
rows by TILES_N x 512 columns, its lhsT panel loaded once per M-block and its rhs panel once per
(M-block, N-block).
"""

import nki
import nki.isa as nisa
import nki.language as nl

TILES_M = 2            # 128-row tiles per M-block
TILES_N = 2            # 512-column tiles per N-block
SCALE = 3              # read by the next line at import: not a searchable constant
UNUSED = SCALE * 2

TK = nl.tile_size.pmax
TM = nl.tile_size.gemm_stationary_fmax
TN = nl.tile_size.gemm_moving_fmax


@nki.jit
def blocked(lhsT, rhs):
    K, M = lhsT.shape
    N = rhs.shape[1]
    KT = K // TK
    BM, BN = TM * TILES_M, TN * TILES_N
    result = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    for mb in nl.affine_range(M // BM):
        panel_a = nl.ndarray((TILES_M, KT, nl.par_dim(TK), TM), dtype=lhsT.dtype, buffer=nl.sbuf)
        for i in nl.affine_range(TILES_M):
            for kt in nl.affine_range(KT):
                r0 = (mb * TILES_M + i) * TM
                nisa.dma_copy(dst=panel_a[i, kt], src=lhsT[kt * TK:(kt + 1) * TK, r0:r0 + TM])
        for nb in nl.affine_range(N // BN):
            panel_b = nl.ndarray((TILES_N, KT, nl.par_dim(TK), TN), dtype=rhs.dtype, buffer=nl.sbuf)
            for j in nl.affine_range(TILES_N):
                for kt in nl.affine_range(KT):
                    c0 = (nb * TILES_N + j) * TN
                    nisa.dma_copy(dst=panel_b[j, kt], src=rhs[kt * TK:(kt + 1) * TK, c0:c0 + TN])
            for i in nl.affine_range(TILES_M):
                for j in nl.affine_range(TILES_N):
                    ps = nl.ndarray((TM, TN), dtype=nl.float32, buffer=nl.psum)
                    for kt in nl.affine_range(KT):
                        nisa.nc_matmul(dst=ps, stationary=panel_a[i, kt], moving=panel_b[j, kt])
                    res = nl.ndarray((TM, TN), dtype=lhsT.dtype, buffer=nl.sbuf)
                    nisa.tensor_copy(dst=res, src=ps)
                    r0, c0 = (mb * TILES_M + i) * TM, (nb * TILES_N + j) * TN
                    nisa.dma_copy(dst=result[r0:r0 + TM, c0:c0 + TN], src=res)
    return result
