"""What a traced kernel did: loops, DMAs, matmuls and engine ops, and where each tile came from.

Every on-chip buffer carries a *binding*: which logical tile it holds (an HBM tensor's tile, a
matmul accumulator, or the result of engine ops) as an affine map from buffer coordinates to the
logical tensor's coordinates. Statements are recorded against logical tiles, so a matmul reading
``lhsT_tiles[k]`` is recorded as reading ``lhsT[128·k : 128·k + 128, ...]`` whichever loop filled
the buffer. Engine ops are not statements one by one: their results are *derived* values carrying
the tiles they came from and the ops applied, and become one loopsim op (``online_softmax``,
``exp``, ``add``, ...) only where a matmul reads them or a store writes them out.

Numbers are elements (sizes, offsets) and never tensor values: the record tracks shapes only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .errors import TraceError
from .symbolic import Cond, IndexTile, LoopVar, Sym

#: NKI dtype names -> loopsim dtypes
DTYPE_OF = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32", "tfloat32": "fp32",
            "float8_e4m3": "fp8", "float8_e5m2": "fp8", "int8": "int8", "uint8": "int8",
            "int32": "fp32", "uint32": "fp32", "int16": "fp16", "uint16": "fp16", "bool_": "int8"}


def dtype_name(dt, default: str = "bf16") -> str:
    if dt is None:
        return default
    if isinstance(dt, str):
        return DTYPE_OF.get(dt, dt)
    name = getattr(dt, "__name__", None) or getattr(dt, "name", None) or str(dt)
    return DTYPE_OF.get(name, DTYPE_OF.get(str(name).split(".")[-1], default))


# ---------------------------------------------------------------------------------------------
# Logical tensors and tiles


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
        self.running = False
        self.stat = False
        self.materialised = False
        self.pa_strong: int | None = None
        self.pa_weak: int | None = None

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


# ---------------------------------------------------------------------------------------------
# HBM tensors and on-chip buffers


class ParDim(int):
    """``nl.par_dim(n)``: marks the partition axis of an on-chip buffer's shape."""


class HbmTensor:
    """An HBM tensor argument (or one the kernel allocates in HBM for its result)."""

    def __init__(self, rec: "Recorder", logical: Logical):
        self._rec, self.logical = rec, logical

    @property
    def shape(self):
        return self.logical.shape

    @property
    def dtype(self):
        return self.logical.dtype

    def __getitem__(self, key):
        return HbmView(self, _slice_dims(self.shape, [Sym({}, 0)] * len(self.shape),
                                         [True] * len(self.shape), key))

    def full(self) -> "HbmView":
        return HbmView(self, [(Sym({}, 0), d, True) for d in self.shape])

    def __repr__(self):
        return f"HBM {self.logical.name}{list(self.shape)}"


class HbmView:
    """A slice of an HBM tensor: per dimension (start, size, kept)."""

    def __init__(self, t: HbmTensor, dims):
        self.tensor, self.dims = t, dims

    @property
    def shape(self):
        return tuple(s for _, s, k in self.dims if k)

    @property
    def dtype(self):
        return self.tensor.dtype

    def __getitem__(self, key):
        starts = [a for a, _, _ in self.dims]
        kept = [k for _, _, k in self.dims]
        return HbmView(self.tensor, _slice_dims([s for _, s, _ in self.dims], starts, kept, key))


def _slice_dims(sizes, starts, kept, key):
    """Apply an index ``key`` to the kept dimensions; returns [(start, size, kept)] per dim."""
    key = key if isinstance(key, tuple) else (key,)
    if any(k is Ellipsis for k in key):
        i = next(i for i, k in enumerate(key) if k is Ellipsis)
        n_kept = sum(kept)
        key = key[:i] + (slice(None),) * (n_kept - len(key) + 1) + key[i + 1:]
    out = [(a, s, k) for a, s, k in zip(starts, sizes, kept)]
    positions = [i for i, k in enumerate(kept) if k]
    if len(key) > len(positions):
        raise TraceError(f"index {key!r} has {len(key)} entries for a tile of {len(positions)} "
                         "dimensions")
    for pos, k in zip(positions, key):
        base, size, _ = out[pos]
        if isinstance(k, slice):
            if k.step not in (None, 1):
                raise TraceError(f"a strided slice (step {k.step}) is not modelled")
            lo = Sym.of(0 if k.start is None else k.start)
            hi = Sym.of(size if k.stop is None else k.stop)
            n = hi - lo
            if not n.is_const() or n.const <= 0:
                raise TraceError(f"slice {lo}:{hi} must have a constant positive size")
            out[pos] = (base + lo, n.const, True)
        elif isinstance(k, DS):
            out[pos] = (base + k.start, k.size, True)
        elif isinstance(k, IndexTile):
            out[pos] = (base + k.offset, k.size, True)
        elif isinstance(k, (int, Sym)) and not isinstance(k, bool):
            out[pos] = (base + Sym.of(k), 1, False)
        else:
            raise TraceError(f"index {k!r} is not modelled (slices, nl.ds, nl.arange, ints and "
                             "loop indices are)")
    return out


class DS:
    """``nl.ds(start, size)``."""

    def __init__(self, start, size):
        self.start = Sym.of(start)
        if isinstance(size, Sym) or not isinstance(size, int) or size <= 0:
            raise TraceError(f"nl.ds size {size!r} must be a positive integer")
        self.size = size


class Buffer:
    """An SBUF or PSUM allocation, at the loop depth where it was made."""

    def __init__(self, rec, name, shape, dtype, space, depth, line):
        self.rec, self.name, self.dtype, self.space, self.depth, self.line = \
            rec, name, dtype, space, depth, line
        self.shape = tuple(int(s) for s in shape)
        pars = [i for i, s in enumerate(shape) if isinstance(s, ParDim)]
        self.pax = pars[0] if pars else 0
        self.binding: Binding | None = None
        self.fresh_load = None  # (LoadEv, source) of an nl.load result not yet used
        self.fresh_op = None  # (op name, inputs) of an nl.* elementwise result
        self.fresh_matmul = None  # the MatmulEv of a return-style nc_matmul/nl.matmul result


class Tile:
    """A view of an on-chip buffer (what kernels hold and index): per buffer axis (offset, size,
    kept). Operators on tiles are elementwise engine ops; truth values are refused."""

    def __init__(self, buf: Buffer, offsets=None, sizes=None, kept=None):
        self.buf = buf
        n = len(buf.shape)
        self.offsets = offsets if offsets is not None else [Sym({}, 0)] * n
        self.sizes = sizes if sizes is not None else list(buf.shape)
        self.kept = kept if kept is not None else [True] * n

    @property
    def shape(self):
        return tuple(s for s, k in zip(self.sizes, self.kept) if k)

    @property
    def dtype(self):
        return self.buf.dtype

    @property
    def buffer(self):
        return self.buf.space

    def __getitem__(self, key):
        dims = _slice_dims(self.sizes, self.offsets, self.kept, key)
        # a slice of a tile is relative to the tile's own start
        return Tile(self.buf, [a for a, _, _ in dims], [s for _, s, _ in dims], [k for *_, k in dims])

    def __setitem__(self, key, value):
        self.buf.rec.assign(self[key], value)

    def __iadd__(self, other):
        return self.buf.rec.iadd(self, other)

    def _binop(name, swap=False):
        def f(self, other):
            a, b = (other, self) if swap else (self, other)
            return self.buf.rec.elementwise(name, [a, b])
        return f

    __add__, __radd__ = _binop("add"), _binop("add", True)
    __sub__, __rsub__ = _binop("subtract"), _binop("subtract", True)
    __mul__, __rmul__ = _binop("multiply"), _binop("multiply", True)
    __truediv__, __rtruediv__ = _binop("divide"), _binop("divide", True)
    __lt__, __le__ = _binop("less"), _binop("less_equal")
    __gt__, __ge__ = _binop("greater"), _binop("greater_equal")
    __eq__, __ne__ = _binop("equal"), _binop("not_equal")
    __hash__ = object.__hash__

    def __neg__(self):
        return self.buf.rec.elementwise("negative", [self])

    def _data(self, *_):
        raise TraceError("data-dependent control flow: an if/while/int/float/bool here needs the "
                         f"values of a {list(self.shape)} tile; loopsim traces shapes, never tensor "
                         "values")

    __bool__ = __int__ = __float__ = __index__ = __iter__ = __len__ = _data

    def __repr__(self):
        return f"tile {self.buf.name}{list(self.shape)}"


# ---------------------------------------------------------------------------------------------
# The record


@dataclass
class LoopRec:
    var: LoopVar
    body: list = field(default_factory=list)


@dataclass
class LoadEv:
    ref: TileRef
    absorbed: tuple[LoopVar, ...]
    line: int


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
#: reductions: their result is a per-row statistic, not a tile of the data
REDUCTIONS = {"max", "min", "sum", "mean", "prod"}


class Recorder:
    """State of one trace: the loop stack, the recorded body, tensors and buffers."""

    def __init__(self, path: str, func: str):
        self.path, self.func = path, func
        self.root: list = []
        self.stack: list[LoopRec] = []
        self.logicals: list[Logical] = []
        self.grid: list[LoopVar] = []
        self.names: set[str] = set()
        self.running = False

    # -- locations and names -------------------------------------------------------------
    def line(self) -> int:
        import sys
        f = sys._getframe(1)
        while f is not None:
            if f.f_code.co_filename == self.path:
                return f.f_lineno
            f = f.f_back
        return 0

    def source_line(self) -> str:
        import linecache
        n = self.line()
        return linecache.getline(self.path, n) if n else ""

    def unique(self, name: str) -> str:
        base = re.sub(r"\W", "_", name) or "t"
        if not base[0].isalpha():
            base = "t" + base
        n, i = base, 1
        while n in self.names:
            n = f"{base}_{i}"
            i += 1
        self.names.add(n)
        return n

    def assigned_name(self, default: str) -> str:
        m = re.match(r"\s*(\w+)\s*(\[.*\])?\s*[+]?=(?!=)", self.source_line())
        return m.group(1) if m else default

    @property
    def body(self) -> list:
        return self.stack[-1].body if self.stack else self.root

    @property
    def depth(self) -> int:
        return len(self.stack)

    def in_scope(self) -> set:
        return {r.var for r in self.stack} | set(self.grid)

    # -- loops ---------------------------------------------------------------------------
    def loop(self, trips: int, kind: str, start: int = 0, step: int = 1):
        m = re.match(r"\s*for\s+(\w+)\s+in\b", self.source_line())
        var = LoopVar(m.group(1) if m else "i", trips, kind, self.line())
        return _LoopIter(self, var, start, step)

    def grid_var(self, axis: int, trips: int) -> LoopVar:
        v = LoopVar(f"pid{axis}", trips, "grid", 0)
        self.grid.append(v)
        return v

    # -- tensors and buffers --------------------------------------------------------------
    def hbm(self, name: str, shape, dtype: str, *, line: int = 0) -> HbmTensor:
        lg = Logical("hbm", self.unique(name), dtype, tuple(int(d) for d in shape), line)
        self.logicals.append(lg)
        return HbmTensor(self, lg)

    def alloc(self, shape, dtype, space: str, name: str | None = None) -> Tile:
        shape = tuple(shape)
        for d in shape:
            if isinstance(d, Sym) or isinstance(d, bool) or not isinstance(d, int) or d <= 0:
                raise TraceError(f"buffer shape {shape!r} must be positive integers")
        b = Buffer(self, name or self.assigned_name("buf"), shape, dtype_name(dtype, "fp32" if space == "psum" else "bf16"),
                   space, self.depth, self.line())
        return Tile(b)

    # -- binding and resolving tiles ------------------------------------------------------
    def resolve(self, t: Tile, what: str) -> tuple[TileRef | None, list]:
        """The logical tile a view holds (None: a constant) and, per kept axis of the view, the
        logical dimension it runs along (None: a broadcast axis)."""
        b = t.buf.binding
        if b is None:
            raise TraceError(f"{what} reads buffer {t.buf.name} before anything was written to it")
        starts, sizes, axis_of = [], [], [None] * len(t.offsets)
        for d, dm in enumerate(b.dims):
            s, n = dm.start, dm.size
            if dm.axes:
                n = 1
                for a, scale in dm.axes:
                    s = s + t.offsets[a] * scale
                    n += scale * (t.sizes[a] - 1)
                    if t.kept[a] and axis_of[a] is None:
                        axis_of[a] = d
            starts.append(s)
            sizes.append(n)
        kept_axes = [axis_of[a] for a in range(len(t.offsets)) if t.kept[a]]
        ref = TileRef(b.logical, tuple(starts), tuple(sizes))
        return ref, kept_axes

    def bind(self, dst: Tile, ref: TileRef, axis_of: list) -> set:
        """Make ``dst`` hold ``ref`` (whose kept axes run along ``axis_of``); returns the loop
        variables the buffer's coordinates absorb (a buffer filled by a loop)."""
        kept = [a for a in range(len(dst.offsets)) if dst.kept[a]]
        if len(kept) != len(axis_of):
            raise TraceError(f"shape mismatch: writing a {len(axis_of)}-D tile into {dst!r}")
        local = {r.var for r in self.stack[dst.buf.depth:]}
        absorbed: set = set()
        dims = []
        for d in range(len(ref.starts)):
            start = ref.starts[d]
            axes = [(kept[i], 1) for i, dd in enumerate(axis_of) if dd == d]
            for a, _ in axes:
                start = start - dst.offsets[a]
            for a in range(len(dst.offsets)):
                # a buffer axis indexed by loops inside the allocation: the tile it holds moves
                # with that index, by a whole number of elements per buffer coordinate
                mine = {u: k for u, k in dst.offsets[a].terms.items() if u in local}
                if not mine or any(a == x for x, _ in axes):
                    continue
                v, k = next(iter(mine.items()))
                c = start.terms.get(v, 0)
                if c == 0 or c % k or any(start.terms.get(u, 0) != c // k * ku for u, ku in mine.items()):
                    continue  # not this logical dimension (or the same place each iteration)
                axes.append((a, c // k))
                start = start - dst.offsets[a] * (c // k)
                absorbed.update(mine)
            dims.append(DimMap(start, ref.sizes[d], tuple(axes)))
        dst.buf.binding = Binding(ref.logical, tuple(dims))
        return absorbed

    def check_scope(self, ref: TileRef, what: str) -> None:
        out = ref.vars() - self.in_scope()
        if out:
            v = next(iter(out))
            raise TraceError(f"{what} reads a tile written in loop {v.name} after that loop ended "
                             "(the buffer holds one iteration's tile): not modelled")

    # -- statements ----------------------------------------------------------------------
    def dma(self, dst, src) -> None:
        line = self.line()
        if isinstance(src, HbmTensor):
            src = src.full()
        if isinstance(dst, HbmTensor):
            dst = dst.full()
        if isinstance(src, HbmView) and isinstance(dst, Tile):
            lg = src.tensor.logical
            lg.loaded = True
            ref = TileRef(lg, tuple(a for a, _, _ in src.dims), tuple(s for _, s, _ in src.dims))
            axis_of = [d for d, (_, _, k) in enumerate(src.dims) if k]
            if [ref.sizes[d] for d in axis_of] != [s for s, k in zip(dst.sizes, dst.kept) if k]:
                raise TraceError(f"load of {src.shape} from {lg.name} into {dst!r}: shapes differ")
            absorbed = self.bind(dst, ref, axis_of)
            self._vote(dst, weak=True)
            order = [r.var for r in self.stack]
            if absorbed and set(order[len(order) - len(absorbed):]) != absorbed:
                raise TraceError(f"buffer {dst.buf.name} is filled by loops "
                                 f"{', '.join(sorted(v.name for v in absorbed))} that are not the "
                                 "innermost loops around the DMA: not modelled")
            ev = LoadEv(ref, tuple(v for v in order if v in absorbed), line)
            self.body.append(ev)
            return ev
        elif isinstance(src, Tile) and isinstance(dst, HbmView):
            self.store(dst, src, line)
        elif isinstance(src, Tile) and isinstance(dst, Tile):
            self.copy(dst, src)
        else:
            raise TraceError(f"a DMA from {src!r} to {dst!r} is not modelled (HBM <-> SBUF and "
                             "SBUF <-> SBUF are)")

    def store(self, dst: HbmView, src: Tile, line: int) -> None:
        ref, axis_of = self.resolve(src, "store")
        lg = dst.tensor.logical
        dref = TileRef(lg, tuple(a for a, _, _ in dst.dims), tuple(s for _, s, _ in dst.dims))
        dkept = [d for d, (_, _, k) in enumerate(dst.dims) if k]
        if [dref.sizes[d] for d in dkept] != list(src.shape):
            raise TraceError(f"store of {src!r} into {lg.name}{list(dst.shape)}: shapes differ")
        lg.output = True
        if ref is not None and ref.logical.kind == "op" and not ref.logical.find().kind == "hbm":
            ref = self.materialise(ref, "store", into_store=True)
        if ref is not None:
            src_lg = ref.logical.find()
            if src_lg.kind in ("acc", "op", "sum") and src_lg is not lg:
                same = len(ref.starts) == len(dref.starts) and all(
                    axis_of[i] == dkept[i] for i in range(len(dkept))) and all(
                    a.same(b) and x == y for a, b, x, y in zip(ref.starts, dref.starts, ref.sizes, dref.sizes))
                if not same:
                    raise TraceError(f"stores tile {src_lg.name}{_fmt(ref)} at {lg.name}{_fmt(dref)}: "
                                     "an accumulator must be stored at the index it was computed for")
                src_lg.parent = lg
                if src_lg.pa_weak is not None and lg.pa_weak is None:
                    lg.pa_weak = src_lg.pa_weak
                if src_lg.pa_strong is not None:
                    lg.pa_strong = src_lg.pa_strong
        if lg.pa_weak is None:
            kept = [a for a in range(len(src.offsets)) if src.kept[a]]
            if src.buf.pax in kept:
                lg.pa_weak = dkept[kept.index(src.buf.pax)]
        self.body.append(StoreEv(dref, line))

    def copy(self, dst: Tile, src: Tile, transpose: bool = False) -> None:
        ref, axis_of = self.resolve(src, "copy")
        if transpose:
            axis_of = axis_of[::-1]
        self._bind_value(dst, ref, axis_of)

    def _bind_value(self, dst: Tile, ref: TileRef | None, axis_of) -> None:
        if ref is None:
            dst.buf.binding = Binding(self._const(), ())
            return
        self.bind(dst, ref, axis_of)
        self._vote(dst, weak=True)

    def _const(self) -> Logical:
        return Logical("const", "const", "fp32")

    def memset(self, dst: Tile) -> None:
        dst.buf.binding = Binding(self._const(), ())

    def _vote(self, t: Tile, weak: bool) -> None:
        b = t.buf.binding
        lg = b.logical.find()
        for d, dm in enumerate(b.dims):
            if any(a == t.buf.pax and s == 1 for a, s in dm.axes) and lg.pa_weak is None:
                lg.pa_weak = d

    def matmul(self, dst: Tile, stationary: Tile, moving: Tile, *, transpose_x: bool = False) -> None:
        line = self.line()
        sref, s_axes = self.resolve(stationary, "matmul stationary operand")
        mref, m_axes = self.resolve(moving, "matmul moving operand")
        if transpose_x:
            s_axes = s_axes[::-1]
        for r, what in ((sref, "stationary"), (mref, "moving")):
            if r is None:
                raise TraceError(f"the matmul {what} operand is a constant tile: not modelled")
        if len(s_axes) != 2 or len(m_axes) != 2 or None in s_axes or None in m_axes:
            raise TraceError("matmul operands must be 2-D tiles of tensors")
        sref = self.materialise(sref, "matmul")
        mref = self.materialise(mref, "matmul")
        self.check_scope(sref, "matmul")
        self.check_scope(mref, "matmul")
        ks, md = s_axes
        km, nd = m_axes
        if sref.sizes[ks] != mref.sizes[km]:
            raise TraceError(f"matmul contraction sizes differ: {sref.sizes[ks]} vs {mref.sizes[km]}")
        sref.logical.find().pa_strong = ks
        mref.logical.find().pa_strong = km
        starts = (sref.starts[md], mref.starts[nd])
        sizes = (sref.sizes[md], mref.sizes[nd])
        out_lg = None
        if dst.buf.binding is not None:
            cur, cur_axes = self.resolve(dst, "matmul output")
            if cur is not None and cur.logical.find().kind == "acc" and cur_axes == [0, 1] and all(
                    a.same(b) for a, b in zip(cur.starts, starts)) and tuple(cur.sizes) == sizes:
                out_lg = cur.logical.find()
        if out_lg is None:
            out_lg = Logical("acc", self.unique(dst.buf.name), sref.logical.find().dtype, line=line)
            self.logicals.append(out_lg)
            self.bind(dst, TileRef(out_lg, starts, sizes), [0, 1])
        out = TileRef(out_lg, starts, sizes)
        ev = MatmulEv(out, sref, mref, line, (md, nd))
        self.body.append(ev)
        return ev

    def iadd(self, dst: Tile, other):
        """``acc += nl.matmul(...)`` (or ``+=`` of another tile): accumulate into ``dst``."""
        if isinstance(other, Tile) and other.buf.fresh_matmul is not None:
            ev = other.buf.fresh_matmul
            other.buf.fresh_matmul = None
            if dst.buf.binding is not None:
                cur, _ = self.resolve(dst, "accumulation")
                if cur is not None and cur.logical.find().kind == "acc" and cur.logical.find() is not ev.out.logical:
                    ev.out.logical.parent = cur.logical.find()
                    return dst
            self.bind(dst, ev.out, [0, 1])
            return dst
        self.op("add", "vector", dst, [dst, other])
        return dst

    def assign(self, dst: Tile, value) -> None:
        if isinstance(value, Tile):
            if value.buf is dst.buf:
                return
            fresh = value.buf.fresh_load
            if fresh is not None and self.body and self.body[-1] is fresh[0]:
                self.body.pop()  # t[...] = nl.load(src): the DMA writes the slot directly
                self.dma(dst, fresh[1])
                return
            fresh = value.buf.fresh_op
            if fresh is not None and (not self.body or not isinstance(self.body[-1], LoopRec)):
                if self.body and isinstance(self.body[-1], OpEv) and self.body[-1].value is \
                        value.buf.binding.logical:
                    self.body.pop()  # t[...] = nl.add(t[...], ps): the op writes the slot
                self.op(fresh[0], "vector", dst, fresh[1])
                return
            self.copy(dst, value)
        elif isinstance(value, (int, float)):
            self.memset(dst)
        else:
            raise TraceError(f"assigning {value!r} to a tile is not modelled")

    # -- engine ops ----------------------------------------------------------------------
    def elementwise(self, name: str, args: list, dtype=None) -> Tile:
        tiles = [a for a in args if isinstance(a, Tile)]
        if not tiles:
            raise TraceError(f"{name} of no tile")
        shape = max((t.shape for t in tiles), key=lambda s: _prod(s))
        out = self.alloc(shape, dtype or tiles[0].dtype, "sbuf", self.assigned_name(name))
        self.op(name, "vector", out, args)
        out.buf.fresh_op = (name, list(args))
        return out

    def op(self, name: str, engine: str, dst: Tile, inputs: list, *, reduce: bool = False) -> None:
        """An engine op writing ``dst`` from ``inputs`` (tiles or Python scalars).

        Data inputs (tiles of tensors, or values derived from them) give the result's sources;
        statistics (reductions, and values made only from statistics) and constants contribute
        only the ops they record. ``tensor_tensor(acc, acc, psum, add)`` into a zeroed SBUF tile
        is an SBUF accumulation of the matmul's PSUM tile (:class:`AccumulateEv`)."""
        line = self.line()
        sources: list[TileRef] = []
        data_ops: list[str] = []
        stat_ops: list[str] = []
        running = False
        first = first_stat = None
        in_place = None  # the content of dst's own region read by the op
        for x in inputs:
            if not isinstance(x, Tile):
                if isinstance(x, (Sym, IndexTile, Cond)):
                    raise TraceError(f"{name} of a loop index is not modelled")
                continue
            ref, axes = self.resolve(x, name)
            lg = ref.logical.find()
            if x.buf is dst.buf:
                in_place = lg
            carried = x.buf.depth < self.depth
            if lg.kind == "const":
                data_ops += lg.data_ops
                running = running or carried
                continue
            if lg.kind == "op" and not lg.materialised:
                if lg.stat:
                    stat_ops += lg.data_ops + lg.stat_ops
                    running = running or carried or lg.running
                    first_stat = first_stat or ref
                    continue
                running = running or lg.running
                data_ops += lg.data_ops
                stat_ops += lg.stat_ops
                for s in lg.sources:
                    if not (s.vars() - self.in_scope()) and not any(_same(s, q) for q in sources):
                        sources.append(s)
                first = first or (ref, axes)
                continue
            if ref.vars() - self.in_scope():
                continue  # a tile of a finished loop: a reduction over that loop
            if not any(_same(ref, q) for q in sources):
                sources.append(TileRef(lg, ref.starts, ref.sizes))
            first = first or (ref, axes)
        if (name == "add" and not reduce and not data_ops and not stat_ops and len(sources) == 1
                and sources[0].logical.find().kind == "acc" and dst.buf.space == "sbuf"
                and in_place is not None and in_place.kind in ("const", "sum")):
            self._accumulate(dst, sources[0], first[1], in_place, line)
            return
        (stat_ops if reduce else data_ops).append(name)
        if first is None and first_stat is None:
            c = self._const()
            c.data_ops = tuple(data_ops)
            dst.buf.binding = Binding(c, ())
            return
        val = Logical("op", dst.buf.name, dst.dtype, line=line)
        val.sources, val.data_ops, val.stat_ops = tuple(sources), tuple(data_ops), tuple(stat_ops)
        val.running, val.stat = running, reduce or first is None
        if val.stat:
            base = first[0] if first is not None else first_stat
            dst.buf.binding = Binding(val, tuple(DimMap(s, n, ()) for s, n in zip(base.starts, base.sizes)))
            return
        fref, faxes = first
        ref = TileRef(val, fref.starts, fref.sizes)
        if len([k for k in dst.kept if k]) != len(faxes):
            raise TraceError(f"{name}: output {dst!r} and input shapes differ in rank")
        self.bind(dst, ref, faxes)
        self.body.append(OpEv(val, ref, line))

    def _accumulate(self, dst: Tile, src: TileRef, axes, current: Logical, line: int) -> None:
        out = current if current.kind == "sum" else None
        if out is None:
            out = Logical("sum", self.unique(dst.buf.name), dst.dtype, line=line)
            self.logicals.append(out)
        ref = TileRef(out, src.starts, src.sizes)
        self.bind(dst, ref, axes)
        self._vote(dst, weak=True)
        self.body.append(AccumulateEv(ref, src, line))

    def materialise(self, ref: TileRef, by: str, into_store: bool = False) -> TileRef:
        """A derived value read by a matmul or a store becomes a tensor of its own (one op), or,
        stored, an epilogue of the one accumulator it scales."""
        lg = ref.logical.find()
        if lg.kind != "op" or lg.materialised:
            return TileRef(lg, ref.starts, ref.sizes)
        if lg.stat:
            raise TraceError(f"{by} of a per-row statistic ({', '.join(lg.stat_ops)}) is not modelled")
        accs = {id(s.logical.find()) for s in lg.sources if s.logical.find().kind == "acc"}
        if into_store and len(lg.sources) == 1 and accs and set(lg.data_ops) <= ARITH:
            acc = lg.sources[0].logical.find()
            lg.parent = acc
            return TileRef(acc, ref.starts, ref.sizes)
        if set(lg.data_ops) <= {"copy"} and len(lg.sources) == 1:
            src = lg.sources[0].logical.find()
            lg.parent = src
            return TileRef(src, ref.starts, ref.sizes)
        lg.materialised = True
        lg.kind = "op"
        lg.name = self.unique(lg.name)
        self.logicals.append(lg)
        return TileRef(lg, ref.starts, ref.sizes)


def _same(a: TileRef, b: TileRef) -> bool:
    return a.logical.find() is b.logical.find() and a.sizes == b.sizes and all(x.same(y) for x, y in zip(a.starts, b.starts))


def _prod(s) -> int:
    n = 1
    for d in s:
        n *= d
    return n


def _fmt(ref: TileRef) -> str:
    return "[" + ", ".join(f"{s}:+{n}" for s, n in zip(ref.starts, ref.sizes)) + "]"


class _LoopIter:
    """Yields the loop's symbolic index once; the second ``next`` closes the loop's record."""

    def __init__(self, rec: Recorder, var: LoopVar, start: int, step: int):
        self.rec, self.var, self.start, self.step, self.state = rec, var, start, step, 0

    def __iter__(self):
        return self

    def __next__(self):
        rec = self.rec
        if self.state == 0:
            self.state = 1
            node = LoopRec(self.var)
            rec.body.append(node)
            rec.stack.append(node)
            return Sym({self.var: self.step}, self.start)
        if self.state == 1:
            if not rec.stack or rec.stack[-1].var is not self.var:
                raise TraceError(f"loop {self.var.name} was left early (break, or an inner loop "
                                 "not run to its end): not modelled")
            rec.stack.pop()
            self.state = 2
        raise StopIteration
