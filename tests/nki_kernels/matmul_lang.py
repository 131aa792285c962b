"""The same matmul steps as matmul_isa.py, written against nki.language (nl.load / nl.store /
nl.matmul, return-value style, index tiles from nl.arange and nl.mgrid)."""

from neuronxcc import nki
import neuronxcc.nki.language as nl


@nki.jit
def tiled(lhsT, rhs, result):
    """Step 1, the output passed in (older NKI style)."""
    K, M = lhsT.shape
    N = rhs.shape[1]
    i_k = nl.arange(128)[:, None]
    i_m = nl.arange(128)[None, :]
    i_n = nl.arange(512)[None, :]
    for m in nl.affine_range(M // 128):
        for n in nl.affine_range(N // 512):
            acc = nl.zeros((128, 512), nl.float32, buffer=nl.psum)
            for k in nl.affine_range(K // 128):
                a = nl.load(lhsT[k * 128 + i_k, m * 128 + i_m])
                b = nl.load(rhs[k * 128 + i_k, n * 512 + i_n])
                acc += nl.matmul(a, b, transpose_x=True)
            nl.store(result[nl.ds(m * 128, 128), nl.ds(n * 512, 512)], value=nl.copy(acc, dtype=result.dtype))


@nki.jit
def hoisted(lhsT, rhs, result):
    """Step 2 with plain range loops and nl.load into slices of a column buffer."""
    K, M = lhsT.shape
    N = rhs.shape[1]
    for m in range(M // 128):
        a_col = nl.ndarray((K // 128, nl.par_dim(128), 128), dtype=lhsT.dtype, buffer=nl.sbuf)
        for k in range(K // 128):
            a_col[k, :, :] = nl.load(lhsT[k * 128:(k + 1) * 128, m * 128:(m + 1) * 128])
        for n in range(N // 512):
            b_col = nl.ndarray((K // 128, nl.par_dim(128), 512), dtype=rhs.dtype, buffer=nl.sbuf)
            for k in range(K // 128):
                b_col[k, :, :] = nl.load(rhs[k * 128:(k + 1) * 128, n * 512:(n + 1) * 512])
            acc = nl.zeros((128, 512), nl.float32, buffer=nl.psum)
            for k in range(K // 128):
                acc += nl.matmul(a_col[k], b_col[k], transpose_x=True)
            ip, jf = nl.mgrid[0:128, 0:512]
            nl.store(result[m * 128 + ip, n * 512 + jf], value=acc)


@nki.jit
def blocked(lhsT, rhs, result, TILES_M=2, TILES_N=2):
    """Step 3 in the nl style."""
    K, M = lhsT.shape
    N = rhs.shape[1]
    BM, BN = 128 * TILES_M, 512 * TILES_N
    for m in nl.affine_range(M // BM):
        a_panel = nl.ndarray((TILES_M, K // 128, nl.par_dim(128), 128), dtype=lhsT.dtype, buffer=nl.sbuf)
        for bm in nl.affine_range(TILES_M):
            for k in nl.affine_range(K // 128):
                a_panel[bm, k] = nl.load(lhsT[k * 128:(k + 1) * 128, m * BM + bm * 128:m * BM + (bm + 1) * 128])
        for n in nl.affine_range(N // BN):
            b_panel = nl.ndarray((TILES_N, K // 128, nl.par_dim(128), 512), dtype=rhs.dtype, buffer=nl.sbuf)
            for bn in nl.affine_range(TILES_N):
                for k in nl.affine_range(K // 128):
                    b_panel[bn, k] = nl.load(rhs[k * 128:(k + 1) * 128, n * BN + bn * 512:n * BN + (bn + 1) * 512])
            for bm in nl.affine_range(TILES_M):
                for bn in nl.affine_range(TILES_N):
                    acc = nl.zeros((128, 512), nl.float32, buffer=nl.psum)
                    for k in nl.affine_range(K // 128):
                        acc += nl.matmul(a_panel[bm, k], b_panel[bn, k], transpose_x=True)
                    out = nl.copy(acc, dtype=result.dtype)
                    nl.store(result[m * BM + bm * 128:m * BM + (bm + 1) * 128,
                                    n * BN + bn * 512:n * BN + (bn + 1) * 512], value=out)


@nki.jit
def fully_optimized(lhsT, rhs, result, TILES_M=16, TILES_N=2, TILES_K=8):
    """Step 4 in the nl style: result tiles summed with nl.add across K-blocks."""
    K, M = lhsT.shape
    N = rhs.shape[1]
    BM, BN, BK = 128 * TILES_M, 512 * TILES_N, 128 * TILES_K
    for n in nl.affine_range(N // BN):
        sums = nl.zeros((M // 128, nl.par_dim(128), BN), dtype=lhsT.dtype, buffer=nl.sbuf)
        for kb in nl.sequential_range(K // BK):
            b_block = nl.ndarray((TILES_K, nl.par_dim(128), BN), dtype=rhs.dtype, buffer=nl.sbuf)
            for kt in nl.affine_range(TILES_K):
                b_block[kt] = nl.load(rhs[nl.ds(kb * BK + kt * 128, 128), nl.ds(n * BN, BN)])
            for m in nl.affine_range(M // BM):
                a_block = nl.ndarray((TILES_K, nl.par_dim(128), BM), dtype=lhsT.dtype, buffer=nl.sbuf)
                for kt in nl.affine_range(TILES_K):
                    a_block[kt] = nl.load(lhsT[nl.ds(kb * BK + kt * 128, 128), nl.ds(m * BM, BM)])
                for nt in nl.affine_range(TILES_N):
                    for mt in nl.affine_range(TILES_M):
                        ps = nl.zeros((128, 512), nl.float32, buffer=nl.psum)
                        for kt in nl.affine_range(TILES_K):
                            ps += nl.matmul(a_block[kt, :, nl.ds(mt * 128, 128)],
                                            b_block[kt, :, nl.ds(nt * 512, 512)], transpose_x=True)
                        row = m * TILES_M + mt
                        sums[row, :, nl.ds(nt * 512, 512)] = nl.add(sums[row, :, nl.ds(nt * 512, 512)], ps)
        for m in nl.affine_range(M // 128):
            nl.store(result[nl.ds(m * 128, 128), nl.ds(n * BN, BN)], value=sums[m])
