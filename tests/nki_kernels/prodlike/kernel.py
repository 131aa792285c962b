"""out = x + residual, row tile by row tile, reading and writing HBM through access patterns."""

import nki
import nki.isa as nisa
import nki.language as nl

from .config import ResidualConfig, row_tiles


@nki.jit
def residual_add(x, residual, cfg: ResidualConfig = ResidualConfig()):
    R, C = x.shape
    if cfg.validate:
        assert residual.shape == x.shape, "x and residual differ in shape"
    out = nl.ndarray((R, C), dtype=x.dtype, buffer=nl.shared_hbm)
    for t in row_tiles(R, cfg.tile_rows):
        rows = [[C, t.size], [1, C]]  # t.size rows of C contiguous elements
        a = nl.ndarray((cfg.tile_rows, C), dtype=x.dtype, buffer=nl.sbuf)
        b = nl.ndarray((cfg.tile_rows, C), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=a[0:t.size, :], src=x.ap(pattern=rows, offset=t.start * C))
        nisa.dma_copy(dst=b[0:t.size, :], src=residual.ap(pattern=rows, offset=t.start * C))
        s = nl.ndarray((cfg.tile_rows, C), dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=s[0:t.size, :], data1=a[0:t.size, :], data2=b[0:t.size, :], op=nl.add)
        nisa.dma_copy(dst=out.ap(pattern=rows, offset=t.start * C), src=s[0:t.size, :])
    return out


def launch(rows=1024, cols=2048):
    """Builds the HBM inputs and a configuration object and calls the kernel."""
    x = nl.ndarray((rows, cols), dtype=nl.bfloat16, buffer=nl.shared_hbm)
    residual = nl.ndarray((rows, cols), dtype=nl.bfloat16, buffer=nl.shared_hbm)
    return residual_add(x, residual, ResidualConfig(tile_rows=128))
