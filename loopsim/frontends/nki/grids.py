"""Tile grids, block grids and stream buffers of the 2026 NKI language (``nl.tiles``,
``nl.blocks``, ``nl.alloc_tiles``, ``nl.alloc_blocks``, ``nl.empty_like``,
``nl.alloc_stream_buffers``): views that name regions of a tensor in tile (or block) coordinates.

A grid allocates nothing and moves nothing; its ``.data`` is the selected region as the tensor view
the instructions take (an HBM slice or an on-chip tile), so what a kernel moves through a grid is
counted as the same DMA written with ``nl.ds`` would be. Sizes and offsets are elements; an offset
may be a loop index (:class:`.symbolic.Sym`). Sources:
https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/generated/nki.language.NkiTileGrid.html,
…/nki.language.blocks.html, …/nki.language.alloc_stream_buffers.html,
…/nki.language.NkiStreamBuffers.html (2026-10).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from loopsim.frontends.nki.errors import TraceError
from loopsim.frontends.nki.symbolic import Sym, _refuse_value
from loopsim.frontends.nki.views import DS, HbmTensor, HbmView, Tile

_HBM = ("hbm", "shared_hbm", "private_hbm")


@dataclass(frozen=True)
class _Dim:
    """One source dimension of a grid: ``start``/``extent`` of the selected elements; ``step``:
    elements per grid coordinate (1 for an untiled leading dimension, a tile, or a block of
    tiles); ``tiled``; ``used``: an integer index consumed this coordinate."""

    start: object
    extent: int
    step: int
    tiled: bool
    used: bool = False


def _is_index(k) -> bool:
    return isinstance(k, Sym) or (isinstance(k, int) and not isinstance(k, bool))


class NkiGrid:
    """A tensor (``base``: an HBM tensor or an on-chip tile) seen through tile (or block)
    coordinates. ``shape`` counts the coordinates left to index; ``element_shape`` the selected
    elements; ``data`` the selection as one tensor operand."""

    def __init__(self, base, dims, tile_shape, block_shape=None):
        self.base, self._dims = base, tuple(dims)
        self.tile_shape = tuple(tile_shape)
        self.block_shape = None if block_shape is None else tuple(block_shape)

    # -- geometry -------------------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(d.extent if not d.tiled else -(-d.extent // d.step)
                     for d in self._dims if not d.used)

    @property
    def element_shape(self) -> tuple[int, ...]:
        return tuple(d.extent for d in self._dims if d.tiled or not d.used)

    @property
    def dtype(self):
        return self.base.dtype

    @property
    def buffer(self):
        return getattr(self.base, "buffer", "sbuf")

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def index_step_elements(self) -> tuple[int, ...]:
        return tuple(d.step for d in self._dims if not d.used)

    @property
    def is_remainder(self) -> bool:
        return any(d.tiled and d.used and d.extent < d.step for d in self._dims)

    is_data_representable = True

    @property
    def data(self):
        """The selection as a view of ``base``: a tiled dimension keeps its selected run, an
        untiled leading one indexed by an integer is dropped (one slab)."""
        full = tuple(getattr(self.base, "shape", ()))
        key = []
        for d, n in zip(self._dims, full):
            if d.used and not d.tiled:
                key.append(d.start)
            else:
                key.append(DS(d.start, d.extent))
        if all(isinstance(k, DS) and isinstance(k.start, int) and k.start == 0 and k.size == n
               for k, n in zip(key, full)):
            return self.base
        return self.base[tuple(key)]

    # -- indexing -------------------------------------------------------------------------
    def __getitem__(self, key):
        key = key if isinstance(key, tuple) else (key,)
        free = [i for i, d in enumerate(self._dims) if not d.used]
        if len(key) > len(free):
            raise TraceError(f"a grid of shape {self.shape} indexed with {len(key)} coordinates")
        dims = list(self._dims)
        for i, k in zip(free, key):
            dims[i] = _select(dims[i], k, self.shape[free.index(i)])
        return type(self)(self.base, dims, self.tile_shape, self.block_shape)

    def __iter__(self):
        raise TraceError("iterating over a grid is not supported by NKI; index it with "
                         "range(grid.shape[d])")

    def __len__(self):
        raise TraceError("len() of a grid is not supported by NKI; use grid.shape")

    def __repr__(self):
        kind = "NkiBlockGrid" if self.block_shape is not None else "NkiTileGrid"
        return f"{kind}(shape={self.shape}, element_shape={self.element_shape})"


class NkiTileGrid(NkiGrid):
    pass


class NkiBlockGrid(NkiGrid):
    pass


def _select(d: _Dim, k, coords: int) -> _Dim:
    """Dimension ``d`` after index ``k`` (an integer, a loop index, or a slice of coordinates)."""
    if isinstance(k, slice):
        if k.step not in (None, 1):
            raise TraceError(f"a grid slice with step {k.step} is not modelled")
        lo = 0 if k.start is None else k.start
        hi = coords if k.stop is None else k.stop
        n = Sym.of(hi) - Sym.of(lo)
        if not n.is_const() or n.const <= 0:
            raise TraceError(f"grid slice {lo}:{hi} must select a constant positive number of "
                             "coordinates")
        return replace(d, start=d.start + lo * d.step, extent=_clamped(d, lo, n.const * d.step))
    if not _is_index(k):
        raise TraceError(f"grid index {k!r}: integers, loop indices and slices are modelled")
    if isinstance(k, int) and not 0 <= k < coords:
        raise TraceError(f"grid index {k} out of range for {coords} coordinates")
    size = d.step if d.tiled else 1
    return replace(d, start=d.start + k * d.step, extent=_clamped(d, k, size), used=True)


def _clamped(d: _Dim, k, size: int) -> int:
    """Elements selected from coordinate ``k`` on, ``size`` at most: a partial final tile keeps
    its exact extent; a loop index needs the extent to be whole steps, else it runs concretely."""
    if isinstance(k, int):
        return min(size, d.extent - k * d.step)
    if d.extent % d.step:
        _refuse_value(f"a grid whose last tile is partial ({d.extent} elements in steps of "
                      f"{d.step}) indexed by a loop index", k)
    return size


def grid(src, tile_shape=None, block_shape=None):
    """``nl.tiles(src, tile_shape=...)`` / ``nl.blocks(src, tile_shape=..., block_shape=...)``
    over a tensor, or over a grid's selection (its tile shape kept unless given)."""
    what = "nl.blocks" if block_shape is not None else "nl.tiles"
    if isinstance(src, NkiGrid):
        tile_shape = tile_shape or src.tile_shape
        if block_shape is None and src.block_shape is not None and what == "nl.blocks":
            block_shape = src.block_shape
        kept = [d for d in src._dims if d.tiled or not d.used]
        dims = [_Dim(d.start, d.extent, 1, False) for d in kept]
        base, dropped = src.base, [d for d in src._dims if d.used and not d.tiled]
    elif isinstance(src, (HbmTensor, HbmView, Tile)) or (
            hasattr(src, "shape") and hasattr(src, "__getitem__") and
            not isinstance(src, NkiStreamBuffers)):
        base, dims, dropped = src, [_Dim(0, int(n), 1, False) for n in src.shape], []
    else:
        raise TraceError(f"{what} of {src!r}: expected a tensor or a grid")
    if tile_shape is None:
        raise TraceError(f"{what}: tile_shape= is required")
    tile_shape = tuple(tile_shape)
    if len(tile_shape) < 2 or len(tile_shape) > len(dims) or not all(
            _is_index(t) and isinstance(t, int) and t > 0 for t in tile_shape):
        raise TraceError(f"{what}: tile_shape {tile_shape} must be at least two positive integers, "
                         f"no more than the tensor's {len(dims)} dimensions")
    if block_shape is not None:
        block_shape = tuple(block_shape)
        if len(block_shape) != len(tile_shape) or not all(
                isinstance(b, int) and b > 0 for b in block_shape):
            raise TraceError(f"nl.blocks: block_shape {block_shape} must be {len(tile_shape)} "
                             "positive integers (tiles per block)")
    lead = len(dims) - len(tile_shape)
    out = list(dims[:lead])
    for j, (d, t) in enumerate(zip(dims[lead:], tile_shape)):
        out.append(replace(d, step=t * (block_shape[j] if block_shape else 1), tiled=True))
    # a grid over a selection keeps the slabs it dropped: re-insert them where they were
    if dropped:
        merged, it = [], iter(out)
        for d in src._dims:
            merged.append(d if (d.used and not d.tiled) else next(it))
        out = merged
    cls = NkiBlockGrid if block_shape is not None else NkiTileGrid
    return cls(base, out, tile_shape, block_shape)


def alloc_grid(new_tensor, tile_shape, element_shape, buffer, dtype, name="", block_shape=None):
    """``nl.alloc_tiles`` / ``nl.alloc_blocks``: new storage of ``element_shape`` (allocated by
    ``new_tensor(shape, dtype, buffer, name)``, as ``nl.ndarray``) seen as a grid."""
    if element_shape is None or tile_shape is None:
        raise TraceError("nl.alloc_tiles/alloc_blocks: tile_shape= and element_shape= are required")
    t = new_tensor(tuple(int(n) for n in element_shape), dtype, buffer, name)
    return grid(t, tile_shape, block_shape)


def like(new_tensor, x, dtype=None, buffer=None, name=""):
    """``nl.empty_like(x, buffer=, dtype=)``: storage of ``x``'s geometry (a grid: its selected
    elements, seen with its tile and block shapes; a tensor: its shape)."""
    dtype = dtype if dtype is not None else x.dtype
    if isinstance(x, NkiGrid):
        return alloc_grid(new_tensor, x.tile_shape, x.element_shape, buffer or x.buffer, dtype,
                          name, x.block_shape)
    if not hasattr(x, "shape"):
        raise TraceError(f"nl.empty_like of {x!r}: expected a tensor or a grid")
    return new_tensor(tuple(x.shape), dtype, buffer or getattr(x, "buffer", "sbuf"), name)


def _key(k: Sym) -> tuple:
    """A loop-index expression by its loops (not their names) and constant."""
    return tuple(sorted((v.uid, c) for v, c in k.terms.items())), k.const


class NkiStreamBuffers:
    """``nl.alloc_stream_buffers(view, buffer=, dim=, num_slots=)``: ``buffers[k]`` is slot
    ``k % num_slots``, storage of one step of ``view`` along ``dim``.

    With an integer ``k`` (a loop traced iteration by iteration) each slot is its own storage, so
    the dataflow follows the kernel; with a loop index (one symbolic pass) every logical iteration
    names the one tile the loop body writes, and the rotation is the timeline's: the source
    tensor's loads rotate through ``num_slots`` buffers (``Kernel.buffers``), execution j filling
    slot j mod ``num_slots`` and waiting for the readers of j - ``num_slots``."""

    def __init__(self, make, num_slots: int, source_name: str | None):
        self._make, self.num_slots = make, num_slots
        self.source_name = source_name
        self._slots: dict = {}
        self._syms: list = []  # the loop-index expressions the pool was indexed by

    def __getitem__(self, k):
        if isinstance(k, int) and not isinstance(k, bool):
            if k < 0:
                raise TraceError(f"stream buffers[{k}]: a negative index is not supported by NKI")
            if self._syms:  # a prologue or epilogue beside a symbolic loop: run the loop per iteration
                _refuse_value("stream buffers indexed by an integer and by a loop index", *self._syms)
            slot = k % self.num_slots
        elif isinstance(k, Sym):
            # one symbolic pass stands for every iteration: a single slot, as long as the pool
            # is indexed by one expression (k + 1 beside k, or an integer beside k, names
            # different slots in one iteration: those loops run iteration by iteration)
            if any(isinstance(x, int) for x in self._slots) or \
                    any(_key(x) != _key(k) for x in self._syms):
                _refuse_value(f"stream buffers indexed by {k} beside "
                              f"{', '.join(sorted({str(x) for x in self._syms}) or ['an integer'])}",
                              k, *self._syms)
            self._syms.append(k)
            slot = "loop"
        else:
            raise TraceError(f"stream buffers[{k!r}]: the index must be a non-negative integer "
                             "(a loop index of range())")
        if slot not in self._slots:
            self._slots[slot] = self._make(slot)
        return self._slots[slot]

    def __iter__(self):
        raise TraceError("iterating over stream buffers is not supported by NKI; index them with "
                         "a loop index")

    def __len__(self):
        raise TraceError("len() of stream buffers is not supported by NKI; use num_slots")


def stream_buffers(new_tensor, view, buffer, dim, num_slots=2, dtype=None, transpose_axes=None,
                   name=""):
    """The pool of ``nl.alloc_stream_buffers``: the step is ``view`` indexed at 0 along ``dim``
    (every other coordinate kept); its storage made in ``buffer``, ``dtype`` (default the view's),
    shape permuted by ``transpose_axes``."""
    if not (isinstance(num_slots, int) and not isinstance(num_slots, bool) and num_slots > 0):
        raise TraceError(f"nl.alloc_stream_buffers: num_slots={num_slots!r} must be a positive integer")
    if buffer in _HBM:
        raise TraceError(f"nl.alloc_stream_buffers: buffer={buffer!r}: slots live in SBUF or PSUM")
    shape = tuple(getattr(view, "shape", ()))
    if not isinstance(dim, int) or not 0 <= dim < len(shape):
        raise TraceError(f"nl.alloc_stream_buffers: dim={dim!r} must name one of the view's "
                         f"{len(shape)} coordinates (shape {shape})")
    if isinstance(view, NkiGrid):
        step = view[(slice(None),) * dim + (0,)]
        if transpose_axes is not None:
            raise TraceError("nl.alloc_stream_buffers: transpose_axes= of a grid view is not "
                             "modelled (of a tensor view it is)")

        def make(slot):
            return like(new_tensor, step, dtype, buffer, f"{name or 'stream'}_{slot}")
        base = view.base
    elif isinstance(view, (HbmTensor, Tile)) or hasattr(view, "tensor"):
        one = shape[:dim] + shape[dim + 1:]
        if transpose_axes is not None:
            if sorted(transpose_axes) != list(range(len(one))):
                raise TraceError(f"nl.alloc_stream_buffers: transpose_axes={transpose_axes} is not a "
                                 f"permutation of the step's {len(one)} axes")
            one = tuple(one[a] for a in transpose_axes)

        def make(slot):
            return new_tensor(one, dtype if dtype is not None else view.dtype, buffer,
                              f"{name or 'stream'}_{slot}")
        base = view.tensor if hasattr(view, "tensor") else view
    else:
        raise TraceError(f"nl.alloc_stream_buffers of {view!r}: expected a tensor or a grid view")
    source = base.logical.name if isinstance(base, HbmTensor) else None
    return NkiStreamBuffers(make, num_slots, source)
