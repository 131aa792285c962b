"""What a kernel holds while it runs under the shim: HBM tensors and their slices, on-chip
buffers and views of them (tiles). Sizes and offsets are elements; offsets may be loop-index
expressions (:class:`loopsim.frontends.nki.symbolic.Sym`). Operators on tiles and their truth values go to
the recorder (``tile.buf.rec``): a tile has a shape, never values.
"""

from __future__ import annotations

from loopsim.frontends.nki.errors import TraceError
from loopsim.frontends.nki.symbolic import IndexTile, Sym

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


