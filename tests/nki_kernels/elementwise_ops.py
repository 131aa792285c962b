"""Kernels written for loopsim's tests: elementwise chains wider than any op kind (the rotary
embedding idiom), a broadcast between ranks, and an on-chip reshape that mixes a tile's free
dimensions. Each test in tests/test_nki_ops.py states its hand count."""

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def rotary_halves(x, cos, sin):
    """RoPE on [rows, 128] in 128-row tiles, the two halves of each output row written apart:
    out[:, :64] = x1 * cos - x2 * sin, out[:, 64:] = x2 * cos + x1 * sin (6 instructions on
    128 x 64 tiles; 4 input tiles: x's halves, cos, sin)."""
    rows, d = x.shape
    h = d // 2
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    c = nl.ndarray((128, h), dtype=cos.dtype, buffer=nl.sbuf)
    s = nl.ndarray((128, h), dtype=sin.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=c, src=cos)
    nisa.dma_copy(dst=s, src=sin)
    for i in nl.affine_range(rows // 128):
        t = nl.ndarray((128, d), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x[i * 128:(i + 1) * 128, :])
        a = nl.ndarray((128, h), dtype=x.dtype, buffer=nl.sbuf)
        b = nl.ndarray((128, h), dtype=x.dtype, buffer=nl.sbuf)
        e = nl.ndarray((128, h), dtype=x.dtype, buffer=nl.sbuf)
        f = nl.ndarray((128, h), dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=a, data1=t[:, :h], data2=c, op=nl.multiply)
        nisa.tensor_tensor(dst=b, data1=t[:, h:], data2=s, op=nl.multiply)
        nisa.tensor_tensor(dst=e, data1=t[:, h:], data2=c, op=nl.multiply)
        nisa.tensor_tensor(dst=f, data1=t[:, :h], data2=s, op=nl.multiply)
        r = nl.ndarray((128, d), dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=r[:, :h], data1=a, data2=b, op=nl.subtract)
        nisa.tensor_tensor(dst=r[:, h:], data1=e, data2=f, op=nl.add)
        nisa.dma_copy(dst=out[i * 128:(i + 1) * 128, :], src=r)
    return out


@nki.jit
def rotary_in_place(x, cos, sin):
    """The rope_hf idiom: r = x * cos over the whole row, then r[:, :64] -= x2 * sin and
    r[:, 64:] += x1 * sin in place (5 instructions: one of 128 x 128, four of 128 x 64)."""
    rows, d = x.shape
    h = d // 2
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    c = nl.ndarray((128, d), dtype=cos.dtype, buffer=nl.sbuf)
    s = nl.ndarray((128, d), dtype=sin.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=c, src=cos)
    nisa.dma_copy(dst=s, src=sin)
    for i in nl.affine_range(rows // 128):
        t = nl.ndarray((128, d), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x[i * 128:(i + 1) * 128, :])
        r = nl.ndarray((128, d), dtype=x.dtype, buffer=nl.sbuf)
        p = nl.ndarray((128, h), dtype=x.dtype, buffer=nl.sbuf)
        q = nl.ndarray((128, h), dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=r, data1=t, data2=c, op=nl.multiply)
        nisa.tensor_tensor(dst=p, data1=t[:, h:], data2=s[:, :h], op=nl.multiply)
        nisa.tensor_tensor(dst=r[:, :h], data1=r[:, :h], data2=p, op=nl.subtract)
        nisa.tensor_tensor(dst=q, data1=t[:, :h], data2=s[:, h:], op=nl.multiply)
        nisa.tensor_tensor(dst=r[:, h:], data1=r[:, h:], data2=q, op=nl.add)
        nisa.dma_copy(dst=out[i * 128:(i + 1) * 128, :], src=r)
    return out


@nki.jit
def scale_into_3d(x, aff):
    """down_projection_mx's idiom: a per-row [128, 1] scale times a [128, H] tile (NumPy
    broadcasting), written into one slot of a [128, 1, H] buffer: the output has a rank its
    first operand lacks, and follows the operand whose axes it has."""
    rows, cols = x.shape
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((rows, cols), dtype=x.dtype, buffer=nl.sbuf)
    a = nl.ndarray((rows, 1), dtype=aff.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    nisa.dma_copy(dst=a, src=aff)
    o = nl.ndarray((rows, 1, cols), dtype=x.dtype, buffer=nl.sbuf)
    o[:, 0:1, :] = nl.multiply(a, t)
    nisa.dma_copy(dst=out, src=o)
    return out


@nki.jit
def regroup_elementwise(x):
    """An instruction whose output access pattern groups the free elements otherwise than its
    input's ([128, 4, 256] written from [128, 1024]: as many elements per partition)."""
    rows, cols = x.shape
    out = nl.ndarray((rows, 4, cols // 4), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((rows, cols), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    o = nl.ndarray((rows, 4, cols // 4), dtype=x.dtype, buffer=nl.sbuf)
    nisa.tensor_scalar(dst=o, data=t, op0=nl.multiply, operand0=2.0)
    nisa.dma_copy(dst=out, src=o)
    return out


@nki.jit
def regroup_through_view(x):
    """A [128, 4, 256] tile copied into a [128, 2, 512] buffer through a reshaped view of it
    (the free axes regrouped: 4 x 256 and 2 x 512 mix), then stored from the buffer."""
    p, a, b = x.shape
    out = nl.ndarray((p, 2, a * b // 2), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((p, a, b), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    buf = nl.ndarray((p, 2, a * b // 2), dtype=x.dtype, buffer=nl.sbuf)
    view = buf.reshape((p, a, b))
    nisa.tensor_copy(dst=view, src=t)
    nisa.dma_copy(dst=out, src=buf)
    return out


@nki.jit
def rotary_ap_blocks(x, cos, sin):
    """rope_hf's layout: [512, 128] tensors read as one [128, 4, 128] tile through .ap (row r of
    block j at partition r, the 4 blocks of 128 rows along the free axis), the in-place RoPE on
    it, and the result written back through the same pattern."""
    rows, d = x.shape
    n, h = rows // 128, d // 2
    pattern = [[d, 128], [128 * d, n], [1, d]]
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((128, n, d), dtype=x.dtype, buffer=nl.sbuf)
    c = nl.ndarray((128, n, d), dtype=x.dtype, buffer=nl.sbuf)
    s = nl.ndarray((128, n, d), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x.ap(pattern=pattern, offset=0))
    nisa.dma_copy(dst=c, src=cos.ap(pattern=pattern, offset=0))
    nisa.dma_copy(dst=s, src=sin.ap(pattern=pattern, offset=0))
    r = nl.ndarray((128, n, d), dtype=x.dtype, buffer=nl.sbuf)
    p = nl.ndarray((128, n, h), dtype=x.dtype, buffer=nl.sbuf)
    q = nl.ndarray((128, n, h), dtype=x.dtype, buffer=nl.sbuf)
    nisa.tensor_tensor(dst=r, data1=t, data2=c, op=nl.multiply)
    nisa.tensor_tensor(dst=p, data1=t[:, :, h:], data2=s[:, :, :h], op=nl.multiply)
    nisa.tensor_tensor(dst=r[:, :, :h], data1=r[:, :, :h], data2=p, op=nl.subtract)
    nisa.tensor_tensor(dst=q, data1=t[:, :, :h], data2=s[:, :, h:], op=nl.multiply)
    nisa.tensor_tensor(dst=r[:, :, h:], data1=r[:, :, h:], data2=q, op=nl.add)
    nisa.dma_copy(dst=out.ap(pattern=pattern, offset=0), src=r)
    return out


@nki.jit
def scratch_halves(x):
    """A scratch buffer reused by halves: its first half's value is read (and stored) before the
    second half is written, so the second chain does not carry the first one's instruction."""
    rows, d = x.shape
    h = d // 2
    out = nl.ndarray((rows, h), dtype=x.dtype, buffer=nl.shared_hbm)
    out2 = nl.ndarray((rows, h), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((rows, d), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    w = nl.ndarray((rows, d), dtype=x.dtype, buffer=nl.sbuf)
    nisa.tensor_scalar(dst=w[:, :h], data=t[:, :h], op0=nl.multiply, operand0=2.0)
    u = nl.ndarray((rows, h), dtype=x.dtype, buffer=nl.sbuf)
    nisa.tensor_scalar(dst=u, data=w[:, :h], op0=nl.add, operand0=1.0)
    nisa.dma_copy(dst=out, src=u)
    nisa.tensor_scalar(dst=w[:, h:], data=t[:, h:], op0=nl.multiply, operand0=3.0)
    nisa.dma_copy(dst=out2, src=w[:, h:])
    return out


@nki.jit
def chain_of(x, y, z, w, n_ops=3):
    """r = x * y, then n_ops - 1 more in-place instructions on the whole [128, F] tile, reading
    z, w and y in turn (subtract, add alternating): a chain of n_ops instructions."""
    p, f = x.shape
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    tiles = []
    for src in (x, y, z, w):
        t = nl.ndarray((p, f), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=src)
        tiles.append(t)
    r = nl.ndarray((p, f), dtype=x.dtype, buffer=nl.sbuf)
    nisa.tensor_tensor(dst=r, data1=tiles[0], data2=tiles[1], op=nl.multiply)
    for j in range(n_ops - 1):
        nisa.tensor_tensor(dst=r, data1=r, data2=tiles[2 + j % 2] if j < 2 else tiles[1 + j % 3],
                           op=nl.add if j % 2 else nl.subtract)
    nisa.dma_copy(dst=out, src=r)
    return out
