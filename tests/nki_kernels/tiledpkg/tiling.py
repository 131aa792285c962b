"""Helpers of the test package: a config dataclass and a range class iterating with Python's
``range`` (loopsim gives every module of the package its loop-recording ``range``)."""

from dataclasses import dataclass

import nki.language as nl


@dataclass(frozen=True)
class AddConfig:
    tile_rows: int = 128
    tile_cols: int = 512


class TileRange:
    """Iterates (start, size) over ``n`` elements in tiles of ``tile``."""

    def __init__(self, n, tile):
        self.n, self.tile = n, tile

    def __iter__(self):
        for i in range(self.n // self.tile):
            yield i * self.tile, self.tile


class Logger(nl.NKIObject if hasattr(nl, "NKIObject") else object):
    def __init__(self, name, level, sink):
        self.name, self.level, self.sink = name, level, sink


class Tile1D:
    def __init__(self, start, size):
        self.start, self.size = start, size


def tiles_of(n, tile):
    """A tuple of tiles (start, size) covering ``n``, built eagerly: a kernel iterating it runs
    a plain Python loop over a tuple, which loopsim sees only as the statements it makes."""
    return tuple(Tile1D(i * tile, min(tile, n - i * tile)) for i in range(-(-n // tile)))
