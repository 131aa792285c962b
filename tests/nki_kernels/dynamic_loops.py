"""Kernels written for loopsim's tests with loops bounded by NeuronCore registers (nisa.register_*,
nl.dynamic_range), in the idioms of production kernels: a count read from a tensor into a
register, a dynamic loop from a static start to it. Each test states its hand count."""

import nki
import nki.isa as nisa
import nki.language as nl

TILE_P, TILE_F = 128, 512


@nki.jit
def tiles_from_count(a, b, n_tiles, first=0):
    """out[rows of tile m] = a + b for tiles first .. n_tiles - 1 of 128 rows; n_tiles ([1, 1]
    int32 in HBM) is read into a register at run time. The rows a tile reads come from an SBUF
    counter (scalar_offset): which rows is data, the bytes are not."""
    rows, cols = a.shape
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    count = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=count, src=n_tiles)
    reg = nisa.register_alloc()
    nisa.register_load(reg, count)
    row = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.memset(dst=row, value=first * TILE_P)
    for _ in nl.dynamic_range(first, reg, 1):
        for j in nl.affine_range(cols // TILE_F):
            ta = nl.ndarray((TILE_P, TILE_F), dtype=a.dtype, buffer=nl.sbuf)
            tb = nl.ndarray((TILE_P, TILE_F), dtype=a.dtype, buffer=nl.sbuf)
            pattern = [[cols, TILE_P], [1, TILE_F]]
            nisa.dma_copy(dst=ta, src=a.ap(pattern=pattern, offset=j * TILE_F, scalar_offset=row,
                                           indirect_dim=0))
            nisa.dma_copy(dst=tb, src=b.ap(pattern=pattern, offset=j * TILE_F, scalar_offset=row,
                                           indirect_dim=0))
            s = nl.ndarray((TILE_P, TILE_F), dtype=a.dtype, buffer=nl.sbuf)
            nisa.tensor_tensor(dst=s, data1=ta, data2=tb, op=nl.add)
            nisa.dma_copy(dst=out.ap(pattern=pattern, offset=j * TILE_F, scalar_offset=row,
                                     indirect_dim=0), src=s)
        nisa.tensor_scalar(dst=row, data=row, op0=nl.add, operand0=TILE_P)
    return out


@nki.jit
def static_then_dynamic_blocks(xT, w, used, n_static=2):
    """Blocks of 128 columns of xT ([K, N], K <= 128) against w ([K, 512]): the first n_static in
    a static loop, the rest up to the number of used blocks (the sum of the flags in ``used``,
    read into a register) in a dynamic loop, as a mixture-of-experts kernel walks its padded
    blocks."""
    k, n = xT.shape
    out = nl.ndarray((n, w.shape[1]), dtype=xT.dtype, buffer=nl.shared_hbm)
    wt = nl.ndarray(w.shape, dtype=w.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=wt, src=w)

    def block(i):
        xt = nl.ndarray((k, TILE_P), dtype=xT.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=xt, src=xT[:, nl.ds(i * TILE_P, TILE_P)])
        acc = nl.ndarray((TILE_P, w.shape[1]), dtype=nl.float32, buffer=nl.psum)
        nisa.nc_matmul(dst=acc, stationary=xt, moving=wt)
        o = nl.ndarray((TILE_P, w.shape[1]), dtype=xT.dtype, buffer=nl.sbuf)
        nisa.tensor_copy(dst=o, src=acc)
        nisa.dma_copy(dst=out[nl.ds(i * TILE_P, TILE_P), :], src=o)

    for i in nl.sequential_range(n_static):
        block(i)
    flags = nl.ndarray((1, used.shape[0]), dtype=nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=flags, src=used.reshape((1, used.shape[0])))
    total = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.tensor_reduce(dst=total, data=flags, op=nl.add, axis=1)
    stop = nisa.register_alloc()
    nisa.register_load(stop, total)
    for i in nl.dynamic_range(n_static, stop):
        block(i)
    return out


@nki.jit
def moved_bounds(x, step_from_tensor=False):
    """Registers set by register_move (constants: exact) and register_alloc(a tensor) (run time):
    a loop over the 128-row tiles of x with the step in a register."""
    rows, cols = x.shape
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    stop = nisa.register_alloc(rows // TILE_P)
    step = nisa.register_alloc()
    if step_from_tensor:
        one = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
        nisa.memset(dst=one, value=2)
        step = nisa.register_alloc(one)
    else:
        nisa.register_move(step, 2)
    copy = nisa.register_alloc()
    nisa.register_move(copy, stop)
    for i in nl.dynamic_range(0, copy, step):
        t = nl.ndarray((TILE_P, cols), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x[nl.ds(i * TILE_P, TILE_P), :])
        nisa.dma_copy(dst=out[nl.ds(i * TILE_P, TILE_P), :], src=t)
    return out


@nki.jit
def while_on_register(x, go):
    """A while loop on a register reloaded in the loop: refused (its trip count is data)."""
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    flag = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=flag, src=go)
    reg = nisa.register_alloc()
    nisa.register_load(reg, flag)
    while reg:
        t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x)
        nisa.dma_copy(dst=out, src=t)
        nisa.register_load(reg, flag)
    return out


@nki.jit
def unset_register(x):
    """A loop bounded by a register nothing was written to: refused."""
    reg = nisa.register_alloc()
    for _ in nl.dynamic_range(reg):
        t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x)
    return x


@nki.jit
def store_then_fence(x):
    """x copied to out through SBUF, then the HBM fence dynamic kernels end with: a DMA of out
    onto itself."""
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    nisa.dma_copy(dst=out, src=t)
    nisa.dma_copy(dst=out, src=out)
    return out
