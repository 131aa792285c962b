"""Configuration and tiling helpers of the prodlike package."""

from dataclasses import dataclass

import nki.language as nl


@dataclass(frozen=True)
class ResidualConfig(nl.NKIObject):
    """How ``residual_add`` tiles its rows (``tile_rows`` partitions per tile)."""

    tile_rows: int = 128
    validate: bool = True


class RowTile(nl.NKIObject):
    def __init__(self, index, start, size):
        self.index, self.start, self.size = index, start, size


def row_tiles(rows: int, tile: int) -> tuple:
    """Every row tile of ``rows``, built eagerly into a tuple (the last one may be short)."""
    return tuple(RowTile(i, i * tile, min(tile, rows - i * tile)) for i in range(-(-rows // tile)))
