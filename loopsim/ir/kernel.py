"""Kernel IR: tensors, loops, tile accesses and the statements of a tiled loop nest.

Every type is a frozen dataclass validated when built; an error names the field and the value.
Sizes are integers (elements); bytes come from :data:`DTYPES`. A nest is a tree: a
:class:`Loop` holds a body of loops and statements, outer to inner. A statement's place in the tree
is its loop level: a load placed outside an inner loop is hoisted and runs fewer times.

Tile geometry. An access ``A[k, m]`` names, per tensor dimension, the loop variables whose sum is
the tile's start (``A[k, mo + mi]`` for a blocked loop) or ``:`` for the whole dimension. The
tile's extent in a dimension is the smallest step among its variables, clipped at the tensor's
edge, so a ragged last tile has its real, smaller size and is never rounded up. The general form
(:class:`Access`'s optional ``coefs``, ``offsets`` and ``extents``) starts a tile at
``offset + sum(coef * var)`` with an explicit extent: ``q[128*t + 128 : 128*t + 256]``, a fixed
slice ``x[128:256, :]`` outside any loop, one loop moving two tensors by different strides.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Iterator, Union

from loopsim.base.errors import SpecError
from loopsim.base.vocab import ELEMENT_BYTES
from loopsim.ir.codes import ACC, LOAD, PRODUCE, STORE, USE, WRITE_KINDS  # noqa: F401 (event kinds, re-exported)

#: bytes per element of each tensor dtype (the one dtype table: :mod:`loopsim.base.vocab`)
DTYPES: dict[str, int] = ELEMENT_BYTES



def _positive_int(value: object, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise SpecError(f"{where}={value!r} must be an integer")
    if value <= 0:
        raise SpecError(f"{where}={value} must be > 0")
    return value


def _name(value: object, where: str) -> str:
    if not isinstance(value, str) or not value.isidentifier():
        raise SpecError(f"{where}={value!r} must be a name (letters, digits, _)")
    return value


@dataclass(frozen=True, slots=True)
class Tensor:
    """A tensor in HBM. ``shape`` in elements; ``partition_axis`` is the dimension laid on SBUF's
    partitions when a tile of it is on chip (0 by default: rows on partitions)."""

    name: str
    shape: tuple[int, ...]
    dtype: str = "bf16"
    output: bool = False
    partition_axis: int = 0
    shape_names: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        _name(self.name, "tensor.name")
        if not isinstance(self.shape, tuple) or not self.shape:
            raise SpecError(f"tensors.{self.name}.shape={self.shape!r} must be a non-empty tuple")
        for i, d in enumerate(self.shape):
            _positive_int(d, f"tensors.{self.name}.shape[{i}]")
        if self.dtype not in DTYPES:
            raise SpecError(f"tensors.{self.name}.dtype={self.dtype!r} is not a known dtype; "
                            f"known: {', '.join(DTYPES)}")
        if not (isinstance(self.partition_axis, int) and 0 <= self.partition_axis < len(self.shape)):
            raise SpecError(f"tensors.{self.name}.partition_axis={self.partition_axis!r} must be "
                            f"a dimension index in 0..{len(self.shape) - 1}")

    @property
    def elem_bytes(self) -> int:
        return DTYPES[self.dtype]

    @property
    def elements(self) -> int:
        return math.prod(self.shape)

    @property
    def bytes(self) -> int:
        """Size in HBM, bytes."""
        return self.elements * self.elem_bytes

    def dim_label(self, axis: int) -> str:
        return self.shape_names[axis] if self.shape_names else f"dim{axis}"


@dataclass(frozen=True, slots=True)
class Access:
    """A tile of ``tensor``. Per dimension its start is ``offset + sum(coef * var)`` over the loop
    variables of ``index`` (() with offset 0: ':', the whole dimension) and its extent is
    ``extent`` elements, or by default the smallest ``coef * step`` of its variables (':': the
    whole dimension; a fixed offset with no variables: the rest of the dimension).

    ``coefs`` (per dimension, one positive integer per variable), ``offsets`` (non-negative
    integers) and ``extents`` (positive, 0: the default) are () for today's meaning: coefficient 1,
    offset 0, the default extent. They are normalised so that an access spelled with the defaults
    equals one spelled without them."""

    tensor: str
    index: tuple[tuple[str, ...], ...]
    coefs: tuple[tuple[int, ...], ...] = ()
    offsets: tuple[int, ...] = ()
    extents: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        _name(self.tensor, "access.tensor")
        for terms in self.index:
            for v in terms:
                _name(v, f"{self.tensor}[...] index")
            if len(set(terms)) != len(terms):
                raise SpecError(f"{self.tensor}[...]: loop variable {v} appears twice in one index")
        nd = len(self.index)
        where = f"{self.tensor}[...]"

        def ints(xs, what, lo):
            return isinstance(xs, tuple) and all(
                not isinstance(x, bool) and isinstance(x, int) and x >= lo for x in xs)

        if self.coefs:
            if len(self.coefs) != nd or any(
                    not ints(cs, "coef", 1) or len(cs) != len(t) for cs, t in zip(self.coefs, self.index)):
                raise SpecError(f"{where}: coefs={self.coefs!r} must give one positive integer per "
                                "index variable")
            if all(c == 1 for cs in self.coefs for c in cs):
                object.__setattr__(self, "coefs", ())
        if self.offsets:
            if len(self.offsets) != nd or not ints(self.offsets, "offset", 0):
                raise SpecError(f"{where}: offsets={self.offsets!r} must give one non-negative "
                                f"integer per dimension ({nd})")
            if not any(self.offsets):
                object.__setattr__(self, "offsets", ())
        if self.extents:
            if len(self.extents) != nd or not ints(self.extents, "extent", 0):
                raise SpecError(f"{where}: extents={self.extents!r} must give one non-negative "
                                f"integer per dimension ({nd}; 0: the default)")
            if not any(self.extents):
                object.__setattr__(self, "extents", ())

    @property
    def variables(self) -> frozenset[str]:
        return frozenset(v for terms in self.index for v in terms)

    @property
    def plain(self) -> bool:
        """Today's meaning: every coefficient 1, no offset, no explicit extent."""
        return not (self.coefs or self.offsets or self.extents)

    def coefs_of(self, axis: int) -> tuple[int, ...]:
        """The coefficient of each variable of ``index[axis]``."""
        return self.coefs[axis] if self.coefs else (1,) * len(self.index[axis])

    def terms_of(self, axis: int) -> tuple[tuple[str, int], ...]:
        """(variable, coefficient) pairs of the start in ``axis``."""
        return tuple(zip(self.index[axis], self.coefs_of(axis)))

    def offset_of(self, axis: int) -> int:
        return self.offsets[axis] if self.offsets else 0

    def extent_of(self, axis: int) -> int:
        """The explicit extent in ``axis`` (elements), 0 for the default."""
        return self.extents[axis] if self.extents else 0

    def whole(self, axis: int) -> bool:
        """Whether ``axis`` is ':' (the whole dimension)."""
        return not self.index[axis] and not self.offset_of(axis) and not self.extent_of(axis)

    def start_text(self, axis: int) -> str:
        parts = [v if c == 1 else f"{c}*{v}" for v, c in self.terms_of(axis)]
        if self.offset_of(axis) or not parts:
            parts.append(str(self.offset_of(axis)))
        return " + ".join(parts)

    def dim_text(self, axis: int) -> str:
        if self.whole(axis):
            return ":"
        lo = self.start_text(axis)
        e = self.extent_of(axis)
        if not e and self.index[axis]:
            return lo
        if not self.index[axis]:
            return f"{self.offset_of(axis)}:{self.offset_of(axis) + e}" if e else f"{lo}:"
        hi = " + ".join([v if c == 1 else f"{c}*{v}" for v, c in self.terms_of(axis)] +
                        [str(self.offset_of(axis) + e)])
        return f"{lo}:{hi}"

    def __str__(self) -> str:
        return f"{self.tensor}[{', '.join(self.dim_text(a) for a in range(len(self.index)))}]"


def tile_extent(acc: Access, axis: int, steps: dict[str, int], tensor: Tensor) -> int:
    """Extent (elements) of a full tile of ``acc`` in ``axis`` (``steps``: loop variable -> step),
    clipped only where it would pass the tensor's edge from its offset: the explicit extent, else
    the smallest coefficient x step of its variables, else (no variables) the dimension from the
    offset on."""
    d = tensor.shape[axis] - acc.offset_of(axis)
    e = acc.extent_of(axis)
    if not e:
        terms = acc.terms_of(axis)
        e = min(steps[v] * c for v, c in terms) if terms else d
    return min(d, e)


@dataclass(frozen=True, slots=True)
class Statement:
    """Base of statements. ``line`` is the line in the nest text (0 when built in Python)."""

    line: int = field(default=0, kw_only=True)

    def accesses(self) -> tuple[tuple[Access, int], ...]:
        """(access, event kind) pairs, in the order the statement touches them."""
        raise NotImplementedError

    def where(self) -> str:
        return f"nest line {self.line}" if self.line else type(self).__name__.lower()


@dataclass(frozen=True, slots=True)
class Load(Statement):
    """DMA a tile HBM -> SBUF. As written, every execution crosses the link. ``chunk``: the tile is
    filled by several transfers (NKI's ``for k: dma_copy(tiles[k], ...)`` loop into one buffer):
    ``load A[:, m] by TILE_K`` moves TILE_K rows of the tensor's partition axis per transfer,
    ``load A[:, m] by TILE_K, TILE_M`` gives the extent per tensor axis (0: the whole axis); ()
    is one transfer of the tile. Only the DMA instructions change: the bytes and the buffer are
    the tile's."""

    tile: Access
    chunk: tuple[int, ...] = ()
    #: a DMA transpose (NKI ``nisa.dma_transpose`` from HBM): the same bytes, moved at the DMA
    #: engines' transpose rate (the sheet's ``dma.transpose``)
    transpose: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.chunk, tuple) or any(
                isinstance(c, bool) or not isinstance(c, int) or c < 0 for c in self.chunk) or \
                (self.chunk and not any(self.chunk)):
            raise SpecError(f"{self.where()}: load {self.tile} by {self.chunk!r}: the extents per "
                            "transfer must be positive integers (0: the whole axis)")
        if self.chunk and len(self.chunk) not in (1, len(self.tile.index)):
            raise SpecError(f"{self.where()}: load {self.tile} by {', '.join(map(str, self.chunk))}: "
                            f"give one extent (rows of the partition axis) or one per axis "
                            f"({len(self.tile.index)})")

    def chunks(self, partition_axis: int) -> tuple[int, ...]:
        """The transfer's extent per tensor axis (0: the whole tile's), () for one transfer."""
        if len(self.chunk) == 1 and len(self.tile.index) != 1:
            return tuple(self.chunk[0] if a == partition_axis else 0 for a in range(len(self.tile.index)))
        return self.chunk

    def accesses(self):
        return ((self.tile, LOAD),)

    def __str__(self) -> str:
        return f"load {self.tile}" + (f" by {', '.join(map(str, self.chunk))}" if self.chunk else "")


@dataclass(frozen=True, slots=True)
class Store(Statement):
    """DMA a tile SBUF -> HBM. As written, every execution crosses the link."""

    tile: Access

    def accesses(self):
        return ((self.tile, STORE),)

    def __str__(self) -> str:
        return f"store {self.tile}"


@dataclass(frozen=True, slots=True)
class Matmul(Statement):
    """``out += stationary @ moving`` on the Tensor Engine, accumulating into a PSUM tile.

    The stationary tile is K_t (on partitions) x M_t, the moving tile K_t x N_t, the output M_t x
    N_t. Which dimension of each operand is K, M or N follows from the index variables: the
    operand dimension whose index equals an output dimension's is that output dimension.
    """

    out: Access
    stationary: Access
    moving: Access

    def accesses(self):
        return ((self.stationary, USE), (self.moving, USE), (self.out, ACC))

    def __str__(self) -> str:
        return f"matmul {self.out} += {self.stationary} @ {self.moving}"


@dataclass(frozen=True, slots=True)
class Accumulate(Statement):
    """``acc out += src``: add a matmul's PSUM tile ``src`` into the SBUF tile ``out`` (NKI's
    ``tensor_tensor(..., op=add)`` on the Vector Engine), then free the PSUM accumulator.

    ``src`` must be a tensor a matmul of the kernel accumulates and that nothing stores: it lives in
    PSUM only, so the acc drains it (PSUM holds one accumulator per tile until its acc, not across
    the loop the SBUF sum runs over). ``out`` lives in SBUF from its first acc, which reads zeros
    (memset, no HBM read), until a store writes it out. Events: the PSUM read (USE, dropped from
    the SBUF trace), then a read and a write of the SBUF tile (USE, PRODUCE; the first read of each
    tile is dropped). Each execution costs the tile's elements on the Vector Engine.
    """

    out: Access
    src: Access

    def accesses(self):
        return ((self.src, USE), (self.out, USE), (self.out, PRODUCE))

    def __str__(self) -> str:
        return f"acc {self.out} += {self.src}"


@dataclass(frozen=True, slots=True)
class Loop:
    """``for var in extent by step``: var takes 0, step, 2*step, ... below extent."""

    var: str
    extent: int
    step: int
    body: tuple["Node", ...]
    line: int = 0
    split: int = 1  # physical cores this loop's iterations are divided among (LNC), 1 = not split
    # the loop over physical cores of an LNC split (loopsim.count.lnc.cores_nest): every iteration runs,
    # so a core whose slice is empty still makes the statements that do not index its slice
    spmd: bool = False
    #: (extent, step) as the source spelled them ("M", "TM"); () when built from numbers
    symbols: tuple[str, ...] = field(default=(), compare=False)

    def __post_init__(self) -> None:
        where = f"nest line {self.line}" if self.line else f"loop {self.var}"
        _name(self.var, f"{where}: loop variable")
        _positive_int(self.extent, f"{where}: extent of {self.var}")
        _positive_int(self.step, f"{where}: step of {self.var}")
        _positive_int(self.split, f"{where}: split of {self.var}")
        if not isinstance(self.body, tuple) or not self.body:
            raise SpecError(f"{where}: loop {self.var} has an empty body")

    @property
    def trips(self) -> int:
        return -(-self.extent // self.step)


Node = Union[Loop, Statement]


def walk(body: tuple[Node, ...], loops: tuple[Loop, ...] = ()) -> Iterator[tuple[Node, tuple[Loop, ...]]]:
    """Yield (node, enclosing loops outer->inner) for every node, in program order."""
    for node in body:
        yield node, loops
        if isinstance(node, Loop):
            yield from walk(node.body, loops + (node,))


@dataclass(frozen=True, slots=True)
class Kernel:
    """One kernel: tensors in HBM and a loop nest. SBUF starts empty and outputs end in HBM."""

    name: str
    tensors: tuple[Tensor, ...]
    body: tuple[Node, ...]
    params: tuple[tuple[str, int], ...] = ()
    about: str = ""
    source: str = ""  # file the kernel came from, for error messages
    # buffers a load inside a loop rotates through, per tensor ("*": every tensor); default 1
    buffers: tuple[tuple[str, int], ...] = ()
    # engine work outside the op statements (loopsim.ir.ops.EngineWork), from a traced kernel
    work: tuple = ()
    # what a trace assumed or stubbed (one line each), shown with the report's notes
    notes: tuple[str, ...] = ()
    # facts derived from the fields, computed once per kernel (it is frozen): statements, tensor map
    _derived: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        where = self.source or f"kernel {self.name}"
        for tname, n in self.buffers:
            if tname != "*" and tname not in {t.name for t in self.tensors}:
                raise SpecError(f"{where}: buffers.{tname}: no tensor {tname}; tensors: "
                                f"{', '.join(t.name for t in self.tensors)}")
            _positive_int(n, f"{where}: buffers.{tname}")
        names = [t.name for t in self.tensors]
        dup = {n for n in names if names.count(n) > 1}
        if dup:
            raise SpecError(f"{where}: tensor {sorted(dup)[0]} is declared twice")
        if not self.body:
            raise SpecError(f"{where}: nest is empty")
        by_name = self.tensor_map
        seen_vars: dict[str, Loop] = {}
        loaded: set[str] = set()
        for node, loops in walk(self.body):
            if isinstance(node, Loop):
                if node.var in by_name or node.var in dict(self.params):
                    raise SpecError(f"{where}: nest line {node.line}: loop variable {node.var} "
                                    "shadows a tensor or parameter")
                if node.var in {l.var for l in loops}:
                    raise SpecError(f"{where}: nest line {node.line}: loop variable {node.var} "
                                    "is already bound by an enclosing loop")
                seen_vars[node.var] = node
                continue
            bound = {l.var: l for l in loops}
            for acc, kind in node.accesses():
                t = by_name.get(acc.tensor)
                if t is None:
                    raise SpecError(f"{where}: {node.where()}: '{node}' names tensor {acc.tensor}, "
                                    f"which is not declared; declared: {', '.join(names)}")
                if len(acc.index) != len(t.shape):
                    raise SpecError(f"{where}: {node.where()}: {acc} has {len(acc.index)} indices "
                                    f"but {t.name} has {len(t.shape)} dimensions")
                for v in acc.variables:
                    if v not in bound:
                        raise SpecError(f"{where}: {node.where()}: index {v} in {acc} is not a "
                                        "loop variable of an enclosing loop")
                for axis, terms in enumerate(acc.index):
                    off, ext, d = acc.offset_of(axis), acc.extent_of(axis), t.shape[axis]
                    if off >= d or (not terms and off + ext > d):  # a moving tile clips at the edge
                        raise SpecError(f"{where}: {node.where()}: {acc} dimension {axis}: the tile "
                                        f"(offset {off}, extent {ext or 'default'}) lies outside "
                                        f"{t.name}'s {d} elements")
                    # blocked index outer + inner: each step divides the next larger one; a block
                    # equal to its tile (equal steps, one tile per block) is legal (steps times
                    # the variables' coefficients)
                    steps = [bound[v].step * c for v, c in acc.terms_of(axis)]
                    for outer, inner in zip(sorted(steps, reverse=True), sorted(steps, reverse=True)[1:]):
                        if outer % inner:
                            raise SpecError(
                                f"{where}: {node.where()}: {acc} dimension {axis}: steps "
                                f"{', '.join(map(str, steps))} must each divide the next larger one "
                                "(blocked index: outer + inner)")
                if kind == LOAD:
                    loaded.add(t.name)
            if isinstance(node, Matmul):
                for op in (node.stationary, node.moving):
                    if by_name[op.tensor].output is False and op.tensor not in loaded and \
                            not self._produced(op.tensor):
                        raise SpecError(f"{where}: {node.where()}: matmul reads {op} but no load of "
                                        f"{op.tensor} precedes it in the nest")
            if isinstance(node, Accumulate):
                self._check_accumulate(node, loops, where)
        for t in self.tensors:
            if t.output and not any(isinstance(n, Store) and n.tile.tensor == t.name
                                    for n, _ in walk(self.body)):
                raise SpecError(f"{where}: output {t.name} is never stored")

    def _check_accumulate(self, node: Accumulate, loops: tuple[Loop, ...], where: str) -> None:
        """The source of an acc is a PSUM accumulator (a matmul's output nothing stores) and its
        tile has the shape of the SBUF tile it is added into."""
        src = node.src.tensor
        made = {s.out.tensor for s, _ in self.statements() if isinstance(s, Matmul)}
        stored = {s.tile.tensor for s, _ in self.statements() if isinstance(s, Store)}
        if src not in made or src in stored or self.tensor_map[src].output:
            raise SpecError(f"{where}: {node.where()}: '{node}' adds {src} from PSUM, so {src} must be "
                            "the output of a matmul of this nest that is never stored nor an output "
                            "(matmul PS[m, n] += A[k, m] @ B[k, n]; acc C[m, n] += PS[m, n]; store C[m, n])")
        steps = {l.var: l.step for l in loops}

        def tile(acc: Access) -> list[int]:
            t = self.tensor_map[acc.tensor]
            return [tile_extent(acc, a, steps, t) for a in range(len(t.shape))]

        if tile(node.out) != tile(node.src):
            raise SpecError(f"{where}: {node.where()}: '{node}' adds a {tile(node.src)} tile into a "
                            f"{tile(node.out)} tile; the two tiles must have the same shape")

    def _produced(self, tensor: str) -> bool:
        return any(kind == PRODUCE and a.tensor == tensor
                   for n, _ in walk(self.body) if not isinstance(n, Loop)
                   for a, kind in n.accesses())

    @property
    def tensor_map(self) -> dict[str, Tensor]:
        got = self._derived.get("tensor_map")
        if got is None:
            got = self._derived["tensor_map"] = {t.name: t for t in self.tensors}
        return got

    def statements(self) -> tuple[tuple[Statement, tuple[Loop, ...]], ...]:
        """Every statement with its enclosing loops (outer -> inner), in program order; walked once
        per kernel and kept."""
        got = self._derived.get("statements")
        if got is None:
            got = self._derived["statements"] = tuple(
                (node, loops) for node, loops in walk(self.body) if not isinstance(node, Loop))
        return got

    @property
    def inputs(self) -> tuple[Tensor, ...]:
        """Tensors the kernel loads from HBM (read before any store of theirs)."""
        loaded = {a.tensor for s, _ in self.statements() for a, k in s.accesses() if k == LOAD}
        return tuple(t for t in self.tensors if t.name in loaded and not t.output)

    @property
    def outputs(self) -> tuple[Tensor, ...]:
        return tuple(t for t in self.tensors if t.output)

    @property
    def compulsory_bytes(self) -> int:
        """Q if every input were read once and every output written once (the textbook count)."""
        return sum(t.bytes for t in self.inputs) + sum(t.bytes for t in self.outputs)
