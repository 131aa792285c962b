"""out = a + b over tiles from the package's range class and config object."""

import nki
import nki.isa as nisa
import nki.language as nl
import torch  # not installed where loopsim runs: stubbed, never called

from .tiling import AddConfig, Logger, TileRange


@nki.jit
def tiled_add(a, b, cfg: AddConfig = AddConfig()):
    log = Logger("tiled_add", 1, None)
    R, C = a.shape
    out = nl.ndarray((R, C), dtype=a.dtype, buffer=nl.shared_hbm)
    for r0, rs in TileRange(R, cfg.tile_rows):
        for c0, cs in TileRange(C, cfg.tile_cols):
            x = nl.load(a[r0:r0 + rs, c0:c0 + cs])
            y = nl.load(b[r0:r0 + rs, c0:c0 + cs])
            nl.store(out[r0:r0 + rs, c0:c0 + cs], value=nl.add(x, y))
    return out


def launch(rows=256, cols=1024):
    """Builds the inputs and a config object, calls the kernel."""
    a = nl.ndarray((rows, cols), dtype=nl.bfloat16, buffer=nl.shared_hbm)
    b = nl.ndarray((rows, cols), dtype=nl.bfloat16, buffer=nl.shared_hbm)
    return tiled_add(a, b, AddConfig(tile_rows=128, tile_cols=256))


@nki.jit
def scaled_rows(x, gamma):
    """out[r, :] = x[r, :] * gamma[0, :] over the row tiles of a tuple; gamma is broadcast to
    128 partitions with a matmul against a ones column (the Tensor Engine broadcast idiom)."""
    from .tiling import tiles_of

    R, C = x.shape
    out = nl.ndarray((R, C), dtype=x.dtype, buffer=nl.shared_hbm)
    ones = nl.ndarray((1, 128), dtype=x.dtype, buffer=nl.sbuf)
    nisa.memset(dst=ones, value=1.0)
    g = nl.ndarray((1, C), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=g, src=gamma)
    g_b = nl.ndarray((128, C), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul(dst=g_b, stationary=ones, moving=g)
    for t in tiles_of(R, 128):
        xt = nl.ndarray((128, C), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=xt[0:t.size, :], src=x[t.start:t.start + t.size, :])
        yt = nl.ndarray((128, C), dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=yt[0:t.size, :], data1=xt[0:t.size, :], data2=g_b[0:t.size, :],
                           op=nl.multiply)
        nisa.dma_copy(dst=out[t.start:t.start + t.size, :], src=yt[0:t.size, :])
    return out
