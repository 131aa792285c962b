"""Kernels written for loopsim's tests of on-chip buffers filled piece by piece (the MoE and
attention-backward idioms: a block of tokens gathered tile by tile into a [P, blocks, block]
buffer; heads shuffled one by one into a [D, N*S] buffer), of HBM tensors read in more than one
shape, and of HBM access patterns that repeat or overlap. Shapes in the docstrings;
tests/test_pieces.py holds the hand counts."""

import nki.isa as nisa
import nki.language as nl

P = 128


def blocked_gather(w, x):
    """x [128, 1024] is gathered tile by tile (8 tiles of 128 columns, a Python loop) into a
    buffer [128, 2, 512]: tile k lands in block k // 4 at column 128 * (k % 4). Then per block b
    out[:, 512*b ...] = w.T @ buf[:, b, :] (w [128, 128])."""
    K, T = x.shape
    blocks, block = 2, T // 2
    out = nl.ndarray((w.shape[1], T), dtype=x.dtype, buffer=nl.shared_hbm)
    buf = nl.ndarray((K, blocks, block), dtype=x.dtype, buffer=nl.sbuf)
    per = block // P
    for k in range(T // P):
        nisa.dma_copy(dst=buf[:, k // per, nl.ds((k % per) * P, P)], src=x[:, nl.ds(k * P, P)])
    w_sb = nl.ndarray(w.shape, dtype=w.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=w_sb, src=w)
    for b in nl.affine_range(blocks):
        ps = nl.ndarray((w.shape[1], block), dtype=nl.float32, buffer=nl.psum)
        nisa.nc_matmul(dst=ps, stationary=w_sb, moving=buf[:, b, :])
        res = nl.ndarray((w.shape[1], block), dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_copy(dst=res, src=ps)
        nisa.dma_copy(dst=out[:, nl.ds(b * block, block)], src=res)
    return out


def _add_heads(shuf, b, out, D, N, S):
    for n in nl.affine_range(N):
        b_sb = nl.ndarray((D, S), dtype=b.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=b_sb, src=b[:, nl.ds(n * S, S)])
        res = nl.ndarray((D, S), dtype=b.dtype, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=res, data1=shuf[:, nl.ds(n * S, S)], data2=b_sb, op=nl.add)
        nisa.dma_copy(dst=out[:, nl.ds(n * S, S)], src=res)


def shuffled_heads(a, b):
    """a [128, 4, 4] (d, head, s) is loaded whole and its heads copied one by one (a static loop)
    into a [128, 16] buffer (head n at columns 4n .. 4n + 4, the layout of an attention output
    projection's shuffle); then per head n (an affine loop) out[:, 4n ...] = shuf[:, 4n ...] +
    b[:, 4n ...] (b, out [128, 16])."""
    D, N, S = a.shape
    out = nl.ndarray(b.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    a_sb = nl.ndarray((D, N, S), dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=a_sb, src=a)
    shuf = nl.ndarray((D, N * S), dtype=a.dtype, buffer=nl.sbuf)
    for n in nl.static_range(N):
        nisa.tensor_copy(dst=shuf[:, nl.ds(n * S, S)], src=a_sb[:, n, :])
    _add_heads(shuf, b, out, D, N, S)
    return out


def shuffled_head_groups(a, b, group=1):
    """As :func:`shuffled_heads`, the heads placed by ``divmod(n, group)`` (grouped heads): the
    copy loop runs iteration by iteration (its index is a Python value), one piece each; head n
    lands at column 4 * (o * (N // group) + g) for (g, o) = divmod(n, group), here group 1."""
    D, N, S = a.shape
    out = nl.ndarray(b.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    a_sb = nl.ndarray((D, N, S), dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=a_sb, src=a)
    shuf = nl.ndarray((D, N * S), dtype=a.dtype, buffer=nl.sbuf)
    for n in nl.static_range(N):
        g, o = divmod(n, group)
        nisa.tensor_copy(dst=shuf[:, nl.ds((o * (N // group) + g) * S, S)], src=a_sb[:, n, :])
    _add_heads(shuf, b, out, D, N, S)
    return out


def staged_rows(x):
    """x [8, 128] copied out through a scratch HBM tensor written as one row [1, 1024] and read
    back, after a reshape, as 8 rows [8, 128] (the MoE token-index staging idiom)."""
    R, C = x.shape
    stage = nl.ndarray((1, R * C), dtype=x.dtype, buffer=nl.shared_hbm)
    out = nl.ndarray((R, C), dtype=x.dtype, buffer=nl.shared_hbm)
    row = nl.ndarray((1, R * C), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=row, src=x.reshape((1, R * C)))
    nisa.dma_copy(dst=stage[0, nl.ds(0, R * C)], src=row[0, :])
    stage = stage.reshape((R, C))
    for r in nl.affine_range(R):
        t = nl.ndarray((1, C), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=stage[nl.ds(r, 1), :])
        nisa.dma_copy(dst=out[nl.ds(r, 1), :], src=t)
    return out


def two_shapes(x, f=64):
    """A scratch HBM tensor [64, 128] reshaped to [128, 64] before its first use, written tile
    by tile through its first handle's access pattern (rows of 128 = two rows of 64) and read
    back whole as [128, 64] (the indexed-flatten idiom). x [128, 64]."""
    P_, F = x.shape
    scratch = nl.ndarray((P_ * F // 128, 128), dtype=x.dtype, buffer=nl.private_hbm)
    flat = scratch.reshape((P_, F))
    t = nl.ndarray((P_, F), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    nisa.dma_copy(dst=flat, src=t)
    for b in nl.affine_range(2):
        h = nl.ndarray((32, 128), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=h, src=x.reshape((P_ * F // 128, 128))[nl.ds(b * 32, 32), :])
        nisa.dma_copy(dst=scratch.ap(pattern=[[128, 32], [1, 128]], offset=b * 32 * 128), src=h)
    out = nl.ndarray((P_, F), dtype=x.dtype, buffer=nl.shared_hbm)
    back = nl.ndarray((P_, F), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=back, src=scratch.reshape((P_, F)))
    nisa.dma_copy(dst=out, src=back)
    return out


def every_other_row(x):
    """Rows 0, 2, 4, ... of x [256, 64] read by one access pattern [[128, 128], [1, 64]] (a
    stride of two rows: no box) into a [128, 64] tile, stored to out [128, 64]."""
    R, C = x.shape
    out = nl.ndarray((R // 2, C), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((R // 2, C), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x.ap(pattern=[[2 * C, R // 2], [1, C]], offset=0))
    nisa.dma_copy(dst=out, src=t)
    return out


def sliding_windows(x, k=3):
    """The k overlapping windows of x [1, 512] (window j = columns j .. j + 510), read by one
    access pattern [[1, k], [1, 510]] (an implicit-GEMM im2col) into a [k, 510] tile, stored to
    out [k, 510]."""
    W = x.shape[1]
    Q = W - k + 1
    out = nl.ndarray((k, Q), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((k, Q), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x.ap(pattern=[[1, k], [1, Q]], offset=0))
    nisa.dma_copy(dst=out, src=t)
    return out


def scattered(x):
    """x [64]: the pattern [[3, 4], [2, 4]] (elements 3a + 2b) is no box whichever entry is
    split: refused."""
    t = nl.ndarray((4, 4), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x.ap(pattern=[[3, 4], [2, 4]], offset=0))
    out = nl.ndarray((4, 4), dtype=x.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=t)
    return out


def transposed_side_by_side(x, y):
    """The 4 column tiles of x [128, 512] transposed one by one into one PSUM row [128, 512]
    (tile c at columns c .. c + 128), copied to SBUF at once, then per tile t (an affine loop)
    out[:, 128t ...] = xt[:, 128t ...] + y[:, 128t ...] (y, out [128, 512])."""
    P_, C = x.shape
    x_sb = nl.ndarray((P_, C), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=x_sb, src=x)
    ps = nl.ndarray((P_, C), dtype=x.dtype, buffer=nl.psum)
    for c in (0, 128, 256, 384):
        nisa.nc_transpose(dst=ps[:, nl.ds(c, P)], data=x_sb[:, nl.ds(c, P)])
    xt = nl.ndarray((P_, C), dtype=x.dtype, buffer=nl.sbuf)
    nisa.tensor_copy(dst=xt, src=ps)
    out = nl.ndarray((P_, C), dtype=x.dtype, buffer=nl.shared_hbm)
    for t in nl.affine_range(C // P):
        y_sb = nl.ndarray((P_, P), dtype=y.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=y_sb, src=y[:, nl.ds(t * P, P)])
        res = nl.ndarray((P_, P), dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=res, data1=xt[:, nl.ds(t * P, P)], data2=y_sb, op=nl.add)
        nisa.dma_copy(dst=out[:, nl.ds(t * P, P)], src=res)
    return out


def row_windows_max(x, k=3):
    """out[r, :] = max over the k rows r .. r + k - 1 of x [256, 64] (a pooling window along
    rows, stride 1): per 128-row tile t one load of the overlapping row windows
    x[128t + i_h + i_kh, i_w] ([128, k, 64], masked at the last rows), a max over the k axis,
    a store of out [254, 64]."""
    H, W = x.shape
    out = nl.ndarray((H - (k - 1), W), dtype=x.dtype, buffer=nl.shared_hbm)
    for t in nl.affine_range(H // P):
        i_h, i_kh, i_w = nl.mgrid[0:P, 0:k, 0:W]
        win = nl.load(x[t * P + i_h + i_kh, i_w], mask=(t * P + i_h < H - (k - 1)))
        m = nl.max(win, axis=[1])
        i_o, i_c = nl.mgrid[0:P, 0:W]
        nl.store(out[t * P + i_o, i_c], value=m, mask=(t * P + i_o < H - (k - 1)))
    return out


def two_element_sizes(x):
    """x [128, 128] bf16 read as int32 pairs ([128, 64] through .ap(dtype=)), then through its
    bf16 handle: handles of two element sizes, each counting the bytes it covers."""
    a = nl.ndarray((128, 64), dtype=nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=a, src=x.ap(pattern=[[64, 128], [1, 64]], offset=0, dtype=nl.int32))
    b = nl.ndarray((128, 128), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=b, src=x[:, :])
    out = nl.ndarray((128, 128), dtype=x.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=b)
    return out
