"""Kernels written for loopsim's tests of the blockwise-MoE idioms (the production library's
blockwise matmul kernels, in our own code): a buffer written in column pieces by one instruction
in a loop (a list of buffers, one per intermediate tile), experts' weights picked per block of
tokens, a loop whose last iterations do nothing (``if h < n_used``), and a block's result
scattered to the tokens' rows. Shapes in the docstrings; tests/test_nki_blockwise.py holds the
hand counts."""

import nki.isa as nisa
import nki.language as nl

P = 128
PS = 512  # one PSUM bank of fp32


def gated_pieces(x, wg, wu, wd):
    """x [H=128, T] (tokens on the free axis), wg, wu [128, I], wd [I, D]. Per PSUM-wide column
    piece b and intermediate tile i: gate[b][i] = wg[:, i].T @ x[:, b], up likewise; then
    inter[i][:, b] = silu(gate[b][i]) * up[b][i]: ONE instruction pair writes each inter[i] in
    T // 512 column pieces (a loop over b). Then per 128-token tile t:
    out[t, :] = sum_i inter[i][:, t].T @ wd[i, :]."""
    H, T = x.shape
    I, D = wg.shape[1], wd.shape[1]
    NI, NB = I // P, T // PS
    out = nl.ndarray((T, D), dtype=x.dtype, buffer=nl.shared_hbm)
    x_sb = nl.ndarray((H, T), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=x_sb, src=x)
    wg_sb = nl.ndarray((H, I), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=wg_sb, src=wg)
    wu_sb = nl.ndarray((H, I), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=wu_sb, src=wu)
    gate = [[nl.ndarray((P, PS), dtype=nl.float32, buffer=nl.psum) for _ in range(NI)] for _ in range(NB)]
    up = [[nl.ndarray((P, PS), dtype=nl.float32, buffer=nl.psum) for _ in range(NI)] for _ in range(NB)]
    for b in range(NB):
        for i in range(NI):
            nisa.nc_matmul(dst=gate[b][i], stationary=wg_sb[:, nl.ds(i * P, P)], moving=x_sb[:, nl.ds(b * PS, PS)])
            nisa.nc_matmul(dst=up[b][i], stationary=wu_sb[:, nl.ds(i * P, P)], moving=x_sb[:, nl.ds(b * PS, PS)])
    inter = [nl.ndarray((P, T), dtype=x.dtype, buffer=nl.sbuf) for _ in range(NI)]
    act = [nl.ndarray((P, T), dtype=x.dtype, buffer=nl.sbuf) for _ in range(NI)]
    for i in range(NI):
        for b in range(NB):
            nisa.activation(op=nl.silu, data=gate[b][i], dst=act[i][:, nl.ds(b * PS, PS)])
            nisa.tensor_tensor(dst=inter[i][:, nl.ds(b * PS, PS)], data1=act[i][:, nl.ds(b * PS, PS)],
                               data2=up[b][i], op=nl.multiply)
    wd_sb = []
    for i in range(NI):
        w = nl.ndarray((P, D), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=w, src=wd[nl.ds(i * P, P), :])
        wd_sb.append(w)
    for t in range(T // P):
        ps = nl.ndarray((P, D), dtype=nl.float32, buffer=nl.psum)
        for i in range(NI):
            nisa.nc_matmul(dst=ps, stationary=inter[i][:, nl.ds(t * P, P)], moving=wd_sb[i])
        res = nl.ndarray((P, D), dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_copy(dst=res, src=ps)
        nisa.dma_copy(dst=out[nl.ds(t * P, P), :], src=res)
    return out


def expert_per_block(x, w):
    """x [K, T] (tokens on the free axis) in E blocks of B = T // E tokens; w [E, K, M]: block
    blk uses expert blk's weights, K in 128-row tiles k, the block's tokens in 512-column tiles
    n: out[:, blk, n] = sum_k w[blk, k].T @ x[k, blk, n], out [M, T]."""
    K, T = x.shape
    E, _, M = w.shape
    B = T // E
    out = nl.ndarray((M, T), dtype=x.dtype, buffer=nl.shared_hbm)
    for blk in nl.sequential_range(E):
        for n in nl.affine_range(B // PS):
            ps = nl.ndarray((M, PS), dtype=nl.float32, buffer=nl.psum)
            for k in nl.affine_range(K // P):
                x_sb = nl.ndarray((P, PS), dtype=x.dtype, buffer=nl.sbuf)
                nisa.dma_copy(dst=x_sb, src=x[nl.ds(k * P, P), nl.ds(blk * B + n * PS, PS)])
                w_sb = nl.ndarray((P, M), dtype=w.dtype, buffer=nl.sbuf)
                nisa.dma_copy(dst=w_sb, src=w[blk, nl.ds(k * P, P), :])
                nisa.nc_matmul(dst=ps, stationary=w_sb, moving=x_sb)
            res = nl.ndarray((M, PS), dtype=x.dtype, buffer=nl.sbuf)
            nisa.tensor_copy(dst=res, src=ps)
            nisa.dma_copy(dst=out[:, nl.ds(blk * B + n * PS, PS)], src=res)
    return out


def banks_used(x, w, banks=4):
    """x [128, 128], w [128, N]: a loop over ``banks`` PSUM banks of 512 columns of which only
    the first N // 512 are used (``if h < used``): out[:, h] = x.T @ w[:, h] for each used h
    (N = 1024: 2 of 4). out [128, N]."""
    K, M = x.shape
    N = w.shape[1]
    used = N // PS
    out = nl.ndarray((M, N), dtype=x.dtype, buffer=nl.shared_hbm)
    x_sb = nl.ndarray((K, M), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=x_sb, src=x)
    ps = [nl.ndarray((M, PS), dtype=nl.float32, buffer=nl.psum) for _ in range(banks)]
    for h in range(banks):
        if h < used:
            w_sb = nl.ndarray((K, PS), dtype=w.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=w_sb, src=w[:, nl.ds(h * PS, PS)])
            nisa.nc_matmul(dst=ps[h], stationary=x_sb, moving=w_sb)
            res = nl.ndarray((M, PS), dtype=x.dtype, buffer=nl.sbuf)
            nisa.tensor_copy(dst=res, src=ps[h])
            nisa.dma_copy(dst=out[:, nl.ds(h * PS, PS)], src=res)
    return out


def scattered_block(x, w, idx):
    """x [K=128, T=256] (tokens on the free axis), w [128, N=64], idx [T, 1] int32 (each token's
    row of out). Per 128-token tile t: sq = x[:, t]**2 (an op the matmul reads: an op graph),
    y = 2 * (sq.T @ w) [128 tokens, N], stored to the rows idx[t] of out [T, N] (a scatter:
    vector_offset=)."""
    K, T = x.shape
    N = w.shape[1]
    out = nl.ndarray((T, N), dtype=x.dtype, buffer=nl.shared_hbm)
    w_sb = nl.ndarray((K, N), dtype=w.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=w_sb, src=w)
    for t in nl.affine_range(T // P):
        x_sb = nl.ndarray((K, P), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=x_sb, src=x[:, nl.ds(t * P, P)])
        sq = nl.ndarray((K, P), dtype=x.dtype, buffer=nl.sbuf)
        nisa.activation(op=nl.square, data=x_sb, dst=sq)
        ps = nl.ndarray((P, N), dtype=nl.float32, buffer=nl.psum)
        nisa.nc_matmul(dst=ps, stationary=sq, moving=w_sb)
        y = nl.ndarray((P, N), dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=y, data=ps, op0=nl.multiply, operand0=2.0)
        rows = nl.ndarray((P, 1), dtype=idx.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=rows, src=idx[nl.ds(t * P, P), :])
        nisa.dma_copy(dst=out.ap(pattern=[[N, P], [1, N]], offset=0, vector_offset=rows, indirect_dim=0),
                      src=y)
    return out


def _scaled_into(dst, src, s):
    nisa.tensor_scalar(dst=dst, data=src, op0=nl.multiply, operand0=s)


def halves_by_helper(x):
    """x [128, 256]: out[:, :128] = 2 * x[:, 128:], out[:, 128:] = 3 * x[:, :128] (the halves
    swapped), both written by the one instruction of a helper called twice (no loop), then
    stored whole: the stored tile is made by both calls."""
    R, C = x.shape
    h = C // 2
    out = nl.ndarray((R, C), dtype=x.dtype, buffer=nl.shared_hbm)
    x_sb = nl.ndarray((R, C), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=x_sb, src=x)
    r = nl.ndarray((R, C), dtype=x.dtype, buffer=nl.sbuf)
    _scaled_into(r[:, 0:h], x_sb[:, h:C], 2.0)
    _scaled_into(r[:, h:C], x_sb[:, 0:h], 3.0)
    nisa.dma_copy(dst=out, src=r)
    return out
