"""The record's vocabulary: logical tensors and tiles, buffer bindings, and the recorded events.

A :class:`Binding` says which logical tile an on-chip buffer holds, as an affine map from buffer
coordinates to the logical tensor's (per logical dimension: a start and, per buffer axis it runs
along, elements per buffer coordinate). Events are recorded against logical tiles.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from loopsim.frontends.nki.symbolic import LoopVar, Sym

class Logical:
    """A logical tensor: an HBM tensor, a matmul accumulator, an op result or a constant.
    Union-find (``parent``): an accumulator stored to HBM becomes that HBM tensor."""

    def __init__(self, kind: str, name: str, dtype: str, shape: tuple[int, ...] | None = None,
                 line: int = 0):
        self.kind, self.name, self.dtype, self.shape, self.line = kind, name, dtype, shape, line
        self.parent: Logical | None = None
        self.output = False
        self.loaded = False
        # derived values (kind "op")
        self.sources: tuple[TileRef, ...] = ()
        self.data_ops: tuple[str, ...] = ()
        self.stat_ops: tuple[str, ...] = ()
        self.elem_ops = 0  # element-operations of the instructions that made it (their outputs)
        self.read = False  # read by another op (which then carries its instructions)
        self.running = False
        self.stat = False
        self.materialised = False
        self.site = None  # (file, line, op) of the instruction that made it (an op result)
        self.iters: tuple = ()  # the iterations of concrete loops it was made in
        self.pa_strong: int | None = None
        self.pa_weak: int | None = None
        # an HBM constant holding an identity matrix (a matmul moving it is a transpose)
        self.identity = False
        # a "const" standing for data whose element order loopsim does not follow (a copy
        # permuting elements through access patterns, and values made from it): not a constant
        self.data = False

    def find(self) -> "Logical":
        x = self
        while x.parent is not None:
            x = x.parent
        return x

    def __repr__(self) -> str:
        return f"{self.kind}:{self.name}"


@dataclass
class TileRef:
    """A tile of a logical tensor: per logical dimension its start and size (elements)."""

    logical: Logical
    starts: tuple[Sym, ...]
    sizes: tuple[int, ...]

    def vars(self) -> set:
        return {v for s in self.starts for v in s.terms}


@dataclass
class DimMap:
    start: Sym
    size: int
    axes: tuple[tuple[int, int], ...]  # (buffer axis, elements per buffer coordinate)


@dataclass
class Binding:
    logical: Logical
    dims: tuple[DimMap, ...]


@dataclass
class LoopRec:
    var: LoopVar
    body: list = field(default_factory=list)


@dataclass
class LoadEv:
    ref: TileRef
    absorbed: tuple[LoopVar, ...]
    line: int
    buf: object = None  # the on-chip Buffer written
    # re-rolled loops (innermost first) whose iterations each filled a buffer of their own,
    # with those buffers: the load hoists out of them when a buffer is read after its iteration
    hoist: tuple = ()
    chunk: tuple = ()  # extents per transfer (ir.Load.chunk): (1,) one row per descriptor, a gather
    transpose: bool = False  # nisa.dma_transpose: the DMA engines swap the tile's axes


@dataclass
class StoreEv:
    ref: TileRef
    line: int


@dataclass
class MatmulEv:
    out: TileRef
    stationary: TileRef
    moving: TileRef
    line: int
    free_dims: tuple[int, int] = (1, 1)  # the stationary's M and the moving's N dimension
    site: str = ""  # FILE:LINE of the call (a helper module's own line)


@dataclass
class AccumulateEv:
    out: TileRef
    src: TileRef
    line: int


@dataclass
class OpEv:
    value: Logical
    out: TileRef
    line: int


#: engine ops that rescale or combine an accumulator without making a new tensor of their own
ARITH = {"add", "subtract", "multiply", "divide", "reciprocal", "copy", "negative", "maximum",
         "minimum"}



def same_tile(a: TileRef, b: TileRef) -> bool:
    """The same tile of the same logical tensor."""
    return a.logical.find() is b.logical.find() and a.sizes == b.sizes and \
        all(x.same(y) for x, y in zip(a.starts, b.starts))


def fmt_tile(ref: TileRef) -> str:
    return "[" + ", ".join(f"{s}:+{n}" for s, n in zip(ref.starts, ref.sizes)) + "]"


def tile_refs(ev) -> list[TileRef]:
    """The tile references an event reads or writes (output first), [] for a loop record."""
    if isinstance(ev, (LoadEv, StoreEv)):
        return [ev.ref]
    if isinstance(ev, MatmulEv):
        return [ev.out, ev.stationary, ev.moving]
    if isinstance(ev, AccumulateEv):
        return [ev.out, ev.src]
    if isinstance(ev, OpEv):
        return [ev.out, *ev.value.sources]
    return []
