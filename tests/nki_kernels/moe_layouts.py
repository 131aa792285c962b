"""Kernels written for loopsim's tests in three layouts of the production library's MoE kernels
(2026 API, ``import nki``): a block's token ids loaded column by column from one row chosen by
an index tile, a bias row broadcast onto the partitions by ``nc_stream_shuffle``, and an engine
op's tile stored at another index than its input's. Each test states its hand count."""

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def block_token_affinity(tpid, aff, B=512, E=4):
    """tpid [NB * B] int32, the token ids of NB blocks of B; aff [T * E, 1] fp32. Per block (a
    sequential loop, its index kept in an SBUF tile bumped at the end of each block): the
    block's B ids loaded 128 at a time into the columns of one [128, B / 128] tile by
    ``scalar_offset=`` DMAs of the block's row (a loop run concretely: ``min`` of its index),
    then that whole tile read at once (x E) as the rows of aff to gather, column by column."""
    NT = B // 128
    NB = tpid.shape[0] // B
    out = nl.ndarray((128, NT), dtype=aff.dtype, buffer=nl.shared_hbm)
    blk = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.memset(blk, value=0)
    rows = tpid.reshape((NB, B))
    for b in nl.sequential_range(NB):
        ids = nl.ndarray((128, NT), dtype=tpid.dtype, buffer=nl.sbuf)
        for t in range(NT):
            n = min(128, B - 128 * t)
            nisa.dma_copy(dst=ids[0:n, t], src=rows.ap(pattern=[[1, n], [1, 1]], offset=128 * t,
                                                       scalar_offset=blk, indirect_dim=0))
        addr = nl.ndarray((128, NT), dtype=nl.int32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=addr, op0=nl.multiply, data=ids[0:128, 0:NT], operand0=E)
        got = nl.ndarray((128, NT), dtype=aff.dtype, buffer=nl.sbuf)
        for t in range(NT):
            nisa.dma_copy(dst=got[0:128, t:t + 1], src=aff.ap(
                pattern=[[1, 128], [1, 1]], offset=0,
                vector_offset=addr.ap(pattern=[[NT, 128], [1, 1]], offset=t), indirect_dim=0))
        nisa.dma_copy(dst=out, src=got)
        nisa.tensor_scalar(dst=blk, data=blk, op0=nl.add, operand0=1)
    return out


@nki.jit
def index_bumped_per_tile(tpid, B=512):
    """The index tile bumped inside the loop that reads through it, after the first read: which
    row each read sees changes with the loop, which the trace cannot know at the first one."""
    NT = B // 128
    out = nl.ndarray((128, NT), dtype=tpid.dtype, buffer=nl.shared_hbm)
    blk = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.memset(blk, value=0)
    rows = tpid.reshape((tpid.shape[0] // B, B))
    ids = nl.ndarray((128, NT), dtype=tpid.dtype, buffer=nl.sbuf)
    for t in range(NT):
        n = min(128, B - 128 * t)
        nisa.dma_copy(dst=ids[0:n, t], src=rows.ap(pattern=[[1, n], [1, 1]], offset=128 * t,
                                                   scalar_offset=blk, indirect_dim=0))
        nisa.tensor_scalar(dst=blk, data=blk, op0=nl.add, operand0=1)
    nisa.dma_copy(dst=out, src=ids)
    return out


@nki.jit
def bias_broadcast(x, bias, expert):
    """x [T, H] bf16; bias [E, H] bf16, the row of the expert named by expert [1, 1] int32
    read by a ``scalar_offset=`` DMA into [1, H], broadcast onto 128 partitions 32 at a time
    (``nc_stream_shuffle`` with a mask of partition 0, in a loop run concretely), then added to
    each [128, 512] tile of x."""
    T, H = x.shape
    out = nl.ndarray((T, H), dtype=x.dtype, buffer=nl.shared_hbm)
    eid = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=eid, src=expert)
    row = nl.ndarray((1, H), dtype=bias.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=row, src=bias.ap(pattern=[[H, 1], [1, H]], offset=0, scalar_offset=eid,
                                       indirect_dim=0))
    wide = nl.ndarray((128, H), dtype=bias.dtype, buffer=nl.sbuf)
    for q in range(4):
        n = min(32, 128 - 32 * q)
        nisa.nc_stream_shuffle(src=row[0:1, :], dst=wide[32 * q:32 * q + n, 0:H], shuffle_mask=[0] * 32)
    for t in nl.affine_range(T // 128):
        xt = nl.ndarray((128, H), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=xt, src=x[nl.ds(t * 128, 128), :])
        for h in nl.affine_range(H // 512):
            s = nl.ndarray((128, 512), dtype=x.dtype, buffer=nl.sbuf)
            nisa.tensor_tensor(dst=s, data1=xt[0:128, nl.ds(h * 512, 512)],
                               data2=wide[0:128, nl.ds(h * 512, 512)], op=nl.add)
            nisa.dma_copy(dst=out[nl.ds(t * 128, 128), nl.ds(h * 512, 512)], src=s)
    return out


@nki.jit
def shuffle_identity(x):
    """x [32, H] loaded, moved partition to same partition (the identity mask), stored."""
    P, H = x.shape
    out = nl.ndarray((P, H), dtype=x.dtype, buffer=nl.shared_hbm)
    a = nl.ndarray((P, H), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=a, src=x)
    b = nl.ndarray((P, H), dtype=x.dtype, buffer=nl.sbuf)
    nisa.nc_stream_shuffle(src=a, dst=b, shuffle_mask=list(range(32)))
    nisa.dma_copy(dst=out, src=b)
    return out


@nki.jit
def scaled_rows_to_scratch(g, ids, aff):
    """g [T, 2 H] bf16; per tile t of 128 tokens (a loop run concretely), the second half of the
    rows ``ids[128 t ...]`` names (gathered), scaled by the tokens' factors ``aff`` and stored
    into a scratch tensor at the tile's index: the gathered tile's index (its columns H ... 2 H)
    is not the store's (columns 0 ... H)."""
    T, H2 = g.shape
    H = H2 // 2
    NT = ids.shape[0] // 128
    scratch = nl.ndarray((NT * 128, H), dtype=g.dtype, buffer=nl.shared_hbm)
    for t in range(NT):
        n = min(128, NT * 128 - 128 * t)
        idx = nl.ndarray((128, 1), dtype=nl.int32, buffer=nl.sbuf)
        nisa.dma_copy(dst=idx[0:n, :], src=ids[nl.ds(t * 128, n), :])
        a = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=a[0:n, :], src=aff[nl.ds(t * 128, n), :])
        rows = nl.ndarray((128, H), dtype=g.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=rows[0:n, :], src=g.ap(pattern=[[H2, n], [1, H]], offset=H,
                                                 vector_offset=idx[0:n, :], indirect_dim=0))
        s = nl.ndarray((128, H), dtype=g.dtype, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=s[0:n, :], data=rows[0:n, :], op0=nl.multiply, operand0=a[0:n, :])
        nisa.dma_copy(dst=scratch[nl.ds(t * 128, n), :], src=s[0:n, :])
    return scratch


@nki.jit
def block_scratch_matmul(x, w):
    """Per block of 128 rows of x [NB * 128, 128] bf16: exp of the block written to a scratch
    tensor in HBM allocated in the block's iteration (one per block, as the backward kernel's
    per-block buffers), read back as the stationary of a matmul with w [128, N], stored."""
    R, K = x.shape
    N = w.shape[1]
    out = nl.ndarray((R, N), dtype=x.dtype, buffer=nl.shared_hbm)
    for b in range(R // 128):
        scratch = nl.ndarray((128, K), dtype=x.dtype, buffer=nl.shared_hbm, name=f"scratch_{b}")
        xt = nl.ndarray((128, K), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=xt, src=x[nl.ds(b * 128, 128), :])
        e = nl.ndarray((128, K), dtype=x.dtype, buffer=nl.sbuf)
        nisa.activation(dst=e, op=nl.exp, data=xt)
        nisa.dma_copy(dst=scratch, src=e)
        st = nl.ndarray((128, K), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=st, src=scratch)
        wt = nl.ndarray((128, N), dtype=w.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=wt, src=w)
        ps = nl.ndarray((K, N), dtype=nl.float32, buffer=nl.psum)
        nisa.nc_matmul(dst=ps, stationary=st, moving=wt)
        res = nl.ndarray((K, N), dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_copy(dst=res, src=ps)
        nisa.dma_copy(dst=out[nl.ds(b * 128, 128), :], src=res)
    return out


@nki.jit
def shuffle_scalar_ap(expert):
    """expert [1, 1] int32 broadcast onto 128 partitions 32 at a time from a one-element access
    pattern of its tile (``.ap([[1, 1], [1, 1]])``), stored."""
    out = nl.ndarray((128, 1), dtype=expert.dtype, buffer=nl.shared_hbm)
    e = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=e, src=expert)
    v = nl.ndarray((128, 1), dtype=nl.int32, buffer=nl.sbuf)
    for q in range(4):
        nisa.nc_stream_shuffle(dst=v[32 * q:32 * (q + 1), 0:1], src=e.ap(pattern=[[1, 1], [1, 1]]),
                               shuffle_mask=[0] * 32)
    nisa.dma_copy(dst=out, src=v)
    return out
