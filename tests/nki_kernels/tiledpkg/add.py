"""out = a + b over tiles from the package's range class and config object."""

import nki
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
