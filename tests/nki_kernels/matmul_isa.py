"""Matmul C = lhsT.T @ rhs written for loopsim's tests against the nki.isa API (dst= style):
the four steps of the NKI matmul tutorial's optimisation path, each a function.

lhsT is K x M (K on the partitions), rhs is K x N, the result M x N. Tile sizes are the Tensor
Engine's limits: 128 on the partitions, 128 stationary columns, 512 moving columns.
"""

import nki
import nki.isa as nisa
import nki.language as nl

TK = nl.tile_size.pmax                  # 128 contraction rows per instruction
TM = nl.tile_size.gemm_stationary_fmax  # 128 output rows
TN = nl.tile_size.gemm_moving_fmax      # 512 output columns


@nki.jit
def tiled(lhsT, rhs):
    """Step 1: both operand tiles fetched inside the contraction loop."""
    K, M = lhsT.shape
    N = rhs.shape[1]
    result = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    for m in nl.affine_range(M // TM):
        for n in nl.affine_range(N // TN):
            acc = nl.ndarray((TM, TN), dtype=nl.float32, buffer=nl.psum)
            for k in nl.affine_range(K // TK):
                a = nl.ndarray((TK, TM), dtype=lhsT.dtype, buffer=nl.sbuf)
                b = nl.ndarray((TK, TN), dtype=rhs.dtype, buffer=nl.sbuf)
                nisa.dma_copy(dst=a, src=lhsT[k * TK:(k + 1) * TK, m * TM:(m + 1) * TM])
                nisa.dma_copy(dst=b, src=rhs[k * TK:(k + 1) * TK, n * TN:(n + 1) * TN])
                nisa.nc_matmul(dst=acc, stationary=a, moving=b)
            out = nl.ndarray((TM, TN), dtype=lhsT.dtype, buffer=nl.sbuf)
            nisa.tensor_copy(dst=out, src=acc)
            nisa.dma_copy(dst=result[m * TM:(m + 1) * TM, n * TN:(n + 1) * TN], src=out)
    return result


@nki.jit
def hoisted(lhsT, rhs):
    """Step 2: the K x TM column of lhsT fetched once per m, the K x TN column of rhs once per
    (m, n), each into a buffer of K/128 tiles allocated outside the loop that fills it."""
    K, M = lhsT.shape
    N = rhs.shape[1]
    KT = K // TK
    result = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    for m in nl.affine_range(M // TM):
        a_col = nl.ndarray((KT, nl.par_dim(TK), TM), dtype=lhsT.dtype, buffer=nl.sbuf)
        for k in nl.affine_range(KT):
            nisa.dma_copy(dst=a_col[k], src=lhsT[k * TK:(k + 1) * TK, m * TM:(m + 1) * TM])
        for n in nl.affine_range(N // TN):
            b_col = nl.ndarray((KT, nl.par_dim(TK), TN), dtype=rhs.dtype, buffer=nl.sbuf)
            for k in nl.affine_range(KT):
                nisa.dma_copy(dst=b_col[k], src=rhs[k * TK:(k + 1) * TK, n * TN:(n + 1) * TN])
            acc = nl.ndarray((TM, TN), dtype=nl.float32, buffer=nl.psum)
            for k in nl.affine_range(KT):
                nisa.nc_matmul(dst=acc, stationary=a_col[k], moving=b_col[k])
            out = nl.ndarray((TM, TN), dtype=lhsT.dtype, buffer=nl.sbuf)
            nisa.tensor_copy(dst=out, src=acc)
            nisa.dma_copy(dst=result[m * TM:(m + 1) * TM, n * TN:(n + 1) * TN], src=out)
    return result


@nki.jit
def blocked(lhsT, rhs, TILES_M=2, TILES_N=2):
    """Step 3: blocks of TILES_M x TILES_N output tiles; per M-block the K x BM panel of lhsT,
    per (M-block, N-block) the K x BN panel of rhs."""
    K, M = lhsT.shape
    N = rhs.shape[1]
    KT = K // TK
    BM, BN = TM * TILES_M, TN * TILES_N
    result = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    for m in nl.affine_range(M // BM):
        a_panel = nl.ndarray((TILES_M, KT, nl.par_dim(TK), TM), dtype=lhsT.dtype, buffer=nl.sbuf)
        for bm in nl.affine_range(TILES_M):
            for k in nl.affine_range(KT):
                nisa.dma_copy(dst=a_panel[bm, k],
                              src=lhsT[k * TK:(k + 1) * TK, (m * TILES_M + bm) * TM:(m * TILES_M + bm + 1) * TM])
        for n in nl.affine_range(N // BN):
            b_panel = nl.ndarray((TILES_N, KT, nl.par_dim(TK), TN), dtype=rhs.dtype, buffer=nl.sbuf)
            for bn in nl.affine_range(TILES_N):
                for k in nl.affine_range(KT):
                    nisa.dma_copy(dst=b_panel[bn, k],
                                  src=rhs[k * TK:(k + 1) * TK, nl.ds((n * TILES_N + bn) * TN, TN)])
            for bm in nl.affine_range(TILES_M):
                for bn in nl.affine_range(TILES_N):
                    acc = nl.ndarray((TM, TN), dtype=nl.float32, buffer=nl.psum)
                    for k in nl.affine_range(KT):
                        nisa.nc_matmul(dst=acc, stationary=a_panel[bm, k], moving=b_panel[bn, k])
                    out = nl.ndarray((TM, TN), dtype=lhsT.dtype, buffer=nl.sbuf)
                    nisa.tensor_copy(dst=out, src=acc)
                    row = (m * TILES_M + bm) * TM
                    col = (n * TILES_N + bn) * TN
                    nisa.dma_copy(dst=result[row:row + TM, col:col + TN], src=out)
    return result


@nki.jit
def fully_optimized(lhsT, rhs, TILES_M=16, TILES_N=2, TILES_K=8):
    """Step 4: blocks in M, N and K, loop order n, K-block, M-block. Each PSUM tile is added into
    an SBUF result tile (zeroed per N-block) after its K-tiles; the result tiles of a whole
    N-block column are stored after the K-block loop."""
    K, M = lhsT.shape
    N = rhs.shape[1]
    BM, BN, BK = TM * TILES_M, TN * TILES_N, TK * TILES_K
    result = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    for n in nl.affine_range(N // BN):
        sums = nl.ndarray((M // BM, TILES_M, nl.par_dim(TM), BN), dtype=lhsT.dtype, buffer=nl.sbuf)
        nisa.memset(dst=sums, value=0.0)
        for kb in nl.sequential_range(K // BK):
            b_block = nl.ndarray((TILES_K, nl.par_dim(TK), BN), dtype=rhs.dtype, buffer=nl.sbuf)
            for kt in nl.affine_range(TILES_K):
                k0 = (kb * TILES_K + kt) * TK
                nisa.dma_copy(dst=b_block[kt], src=rhs[k0:k0 + TK, n * BN:(n + 1) * BN])
            for m in nl.affine_range(M // BM):
                a_block = nl.ndarray((TILES_K, nl.par_dim(TK), BM), dtype=lhsT.dtype, buffer=nl.sbuf)
                for kt in nl.affine_range(TILES_K):
                    k0 = (kb * TILES_K + kt) * TK
                    nisa.dma_copy(dst=a_block[kt], src=lhsT[k0:k0 + TK, m * BM:(m + 1) * BM])
                for nt in nl.affine_range(TILES_N):
                    for mt in nl.affine_range(TILES_M):
                        ps = nl.ndarray((TM, TN), dtype=nl.float32, buffer=nl.psum)
                        for kt in nl.affine_range(TILES_K):
                            nisa.nc_matmul(dst=ps, stationary=a_block[kt, :, mt * TM:(mt + 1) * TM],
                                           moving=b_block[kt, :, nt * TN:(nt + 1) * TN])
                        tile = sums[m, mt, :, nt * TN:(nt + 1) * TN]
                        nisa.tensor_tensor(dst=tile, data1=tile, data2=ps, op=nl.add)
        for m in nl.affine_range(M // BM):
            for mt in nl.affine_range(TILES_M):
                row = (m * TILES_M + mt) * TM
                nisa.dma_copy(dst=result[row:row + TM, n * BN:(n + 1) * BN], src=sums[m, mt])
    return result
