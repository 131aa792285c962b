"""The recording stand-in for the NKI modules (``nki``, ``nki.language``, ``nki.isa``,
``nki.typing``, ``nki.compiler`` and the ``neuronxcc.nki...`` spellings).

Each call records into the active :class:`loopsim.frontends.nki.record.Recorder`; nothing computes a value.
A name the shim does not model is an :class:`Unmodelled` placeholder: calling it stops the trace
with the call's name. :func:`installed` puts the modules in ``sys.modules`` for one trace and
restores whatever was there before, even when the trace fails.
"""

from __future__ import annotations

import builtins
import contextlib
import sys
import types

from loopsim.base.limits import check_int
from loopsim.frontends.nki.errors import TraceError
from loopsim.frontends.nki.record import Recorder
from loopsim.frontends.nki.views import DS, HbmTensor, HbmView, ParDim, Tile, dtype_name
from loopsim.frontends.nki.symbolic import IndexTile, Sym

_active: list[Recorder] = []


def _rec() -> Recorder:
    if not _active:
        raise TraceError("an NKI call outside a loopsim trace")
    return _active[-1]


class Unmodelled:
    """A name of the NKI API that loopsim does not model; using it stops the trace."""

    def __init__(self, name: str):
        self._name = name

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        return Unmodelled(f"{self._name}.{attr}")

    def __call__(self, *a, **k):
        raise TraceError(f"{self._name} is not modelled by loopsim's NKI shim")

    def _use(self, *_):
        raise TraceError(f"{self._name} is not modelled by loopsim's NKI shim")

    __iter__ = __bool__ = __int__ = __index__ = __getitem__ = __enter__ = _use


class _DType:
    def __init__(self, name):
        self.name = self.__name__ = name

    def __repr__(self):
        return f"nl.{self.name}"


def _opname(op) -> str:
    if op is None:
        return "copy"
    if isinstance(op, Unmodelled):
        op()
    name = getattr(op, "__name__", None) or getattr(op, "name", None) or str(op)
    return {"amax": "max", "amin": "min", "identity": "copy", "bypass": "copy", "true_divide": "divide",
            "max_": "max", "min_": "min"}.get(name, name)


# ---------------------------------------------------------------------------------------------
# nki.language


def _range(kind):
    def r(start, stop=None, step=1, **_):
        if stop is None:
            start, stop = 0, start
        for x in (start, stop, step):
            if isinstance(x, Sym) or isinstance(x, bool) or not isinstance(x, int):
                raise TraceError(f"{kind}({start}, {stop}, {step}): bounds must be integers "
                                 "(a bound that depends on a loop index is not modelled)")
        if step <= 0:
            raise TraceError(f"{kind} step must be > 0")
        for x in (start, stop, step):
            check_int(x, f"{kind} bound", TraceError, what="loop bound")
        trips = max(0, -(-(stop - start) // step))
        if trips == 0:
            return iter(())
        return _rec().loop(trips, kind, start, step)
    r.__name__ = kind
    return r


affine_range, sequential_range, static_range = (_range(k) for k in
                                                ("affine_range", "sequential_range", "static_range"))


def py_range(*args):
    """``range`` inside the kernel's module: a loop while the kernel runs, else the builtin."""
    if _active and _active[-1].running and all(isinstance(a, int) and not isinstance(a, bool) for a in args):
        return _range("range")(*args)
    return builtins.range(*args)


def par_dim(n):
    return ParDim(n)


def ds(start, size):
    return DS(start, size)


def arange(*args):
    if len(args) == 1:
        lo, hi = 0, args[0]
    else:
        lo, hi = args[0], args[1]
    return IndexTile(Sym.of(lo), hi - lo)


class _MGrid:
    def __getitem__(self, key):
        key = key if isinstance(key, tuple) else (key,)
        out = []
        for i, k in enumerate(key):
            lo = k.start or 0
            out.append(IndexTile(Sym.of(lo), k.stop - lo, i))
        return _Grid(out)


class _Grid(tuple):
    def __new__(cls, items):
        return super().__new__(cls, items)

    @property
    def p(self):
        return self[0]

    @property
    def x(self):
        return self[1]

    @property
    def y(self):
        return self[2]


mgrid = _MGrid()


def program_id(axis=0):
    rec = _rec()
    if axis >= len(rec.grid):
        raise TraceError(f"nl.program_id({axis}) but the launch grid has {len(rec.grid)} "
                         "axes (give --grid)")
    return Sym({rec.grid[axis]: 1}, 0)


def num_programs(axis=None):
    rec = _rec()
    if axis is None:
        n = 1
        for g in rec.grid:
            n *= g.trips
        return n
    if axis >= len(rec.grid):
        raise TraceError(f"nl.num_programs({axis}) but the launch grid has {len(rec.grid)} axes")
    return rec.grid[axis].trips


def program_ndim():
    return len(_rec().grid)


_HBM = ("hbm", "shared_hbm", "private_hbm")


def ndarray(shape, dtype=None, buffer=None, name="", **_):
    rec = _rec()
    space = buffer if isinstance(buffer, str) else "sbuf"
    if space in _HBM:
        return rec.hbm(name or rec.assigned_name("out"), shape, dtype_name(dtype))
    return rec.alloc(shape, dtype, space, name or None)


def _filled(shape, dtype=None, buffer=None, name="", **_):
    t = ndarray(shape, dtype, buffer or "sbuf", name)
    if isinstance(t, HbmTensor):
        raise TraceError("an HBM tensor filled with a constant is not modelled")
    _rec().memset(t)
    return t


def zeros(shape, dtype=None, buffer=None, name="", **k):
    return _filled(shape, dtype, buffer, name)


ones = zeros


def full(shape, fill_value=0, dtype=None, buffer=None, name="", **k):
    return _filled(shape, dtype, buffer, name)


def load(src, mask=None, dtype=None, **_):
    if not isinstance(src, (HbmView, HbmTensor)):
        raise TraceError(f"nl.load of {src!r}: expected an HBM tensor or a slice of one")
    rec = _rec()
    t = rec.alloc(src.shape, dtype or src.dtype, "sbuf", rec.assigned_name(_hbm_name(src)))
    t.buf.fresh_load = (rec.dma(t, src), src)
    return t


def _hbm_name(x) -> str:
    t = x.tensor if isinstance(x, HbmView) else x
    return f"{t.logical.name}_tile"


def store(dst, value, mask=None, **_):
    if not isinstance(dst, (HbmView, HbmTensor)) or not isinstance(value, Tile):
        raise TraceError(f"nl.store({dst!r}, {value!r}): expected an HBM slice and a tile")
    _rec().dma(dst, value)


def copy(src, dtype=None, **_):
    rec = _rec()
    _tile(src, "nl.copy")
    t = rec.alloc(src.shape, dtype or src.dtype, "sbuf", rec.assigned_name("copy"))
    rec.copy(t, src)
    return t


def transpose(x, dtype=None, **_):
    rec = _rec()
    _tile(x, "nl.transpose")
    t = rec.alloc(x.shape[::-1], dtype or x.dtype, "sbuf", rec.assigned_name("transposed"))
    rec.copy(t, x, transpose=True)
    return t


def matmul(x, y, transpose_x=False, **_):
    rec = _rec()
    _tile(x, "nl.matmul x")
    _tile(y, "nl.matmul y")
    m = x.shape[1] if transpose_x else x.shape[0]
    out = rec.alloc((m, y.shape[1]), "float32", "psum", rec.assigned_name("matmul"))
    out.buf.fresh_matmul = rec.matmul(out, x, y, transpose_x=not transpose_x)
    return out


def _tile(x, what):
    if not isinstance(x, Tile):
        raise TraceError(f"{what}: expected an on-chip tile, got {x!r} (load it first)")


def _unary(name):
    def f(x, dtype=None, mask=None, **_):
        _tile(x, f"nl.{name}")
        return _rec().elementwise(name, [x], dtype)
    f.__name__ = name
    return f


def _binary(name):
    def f(x, y, dtype=None, mask=None, **_):
        return _rec().elementwise(name, [x, y], dtype)
    f.__name__ = name
    return f


def _reduce(name):
    def f(x, axis, dtype=None, mask=None, keepdims=False, **_):
        _tile(x, f"nl.{name}")
        axes = axis if isinstance(axis, (tuple, list)) else (axis,)
        shape = tuple((1 if i in axes else s) for i, s in enumerate(x.shape))
        if not keepdims:
            shape = tuple(s for i, s in enumerate(shape) if i not in axes) or (1,)
        rec = _rec()
        out = rec.alloc(shape, dtype or x.dtype, "sbuf", rec.assigned_name(name))
        rec.op(name, "vector", out, [x], reduce=True)
        return out
    f.__name__ = name
    return f


_UNARY = ("exp", "log", "tanh", "gelu", "silu", "sigmoid", "relu", "sqrt", "rsqrt", "reciprocal",
          "negative", "abs", "square", "erf", "sin", "cos", "softmax", "gelu_apprx_tanh")
_BINARY = ("add", "subtract", "multiply", "divide", "maximum", "minimum", "power", "equal",
           "not_equal", "greater", "greater_equal", "less", "less_equal")
_REDUCE = ("max", "min", "sum", "mean", "prod")


def softmax(x, axis=-1, dtype=None, **_):
    _tile(x, "nl.softmax")
    return _rec().elementwise("softmax", [x], dtype)


class _TileSize:
    pmax = 128
    gemm_stationary_fmax = 128
    gemm_moving_fmax = 512
    psum_fmax = 2048
    psum_partition_bytes = 16384
    total_available_sbuf_size = 192 * 1024


def _language() -> dict:
    ns = {n: _unary(n) for n in _UNARY}
    ns.update({n: _binary(n) for n in _BINARY})
    ns.update({n: _reduce(n) for n in _REDUCE})
    ns.update(dict(
        affine_range=affine_range, sequential_range=sequential_range, static_range=static_range,
        par_dim=par_dim, ds=ds, arange=arange, mgrid=mgrid, program_id=program_id,
        num_programs=num_programs, program_ndim=program_ndim, ndarray=ndarray, zeros=zeros,
        ones=ones, full=full, load=load, store=store, copy=copy, transpose=transpose,
        matmul=matmul, softmax=softmax, tile_size=_TileSize,
        sbuf="sbuf", psum="psum", hbm="hbm", shared_hbm="shared_hbm", private_hbm="private_hbm",
    ))
    for d in ("bfloat16", "float16", "float32", "tfloat32", "float8_e4m3", "float8_e5m2", "int8",
              "uint8", "int16", "uint16", "int32", "uint32", "bool_"):
        ns[d] = _DType(d)
    ns["identity"] = _named("copy")
    ns["copy_op"] = ns["identity"]
    return ns


def _named(name):
    def f(*a, **k):
        raise TraceError(f"nl.{name} called as a function is not modelled")
    f.__name__ = name
    return f


# ---------------------------------------------------------------------------------------------
# nki.isa: each instruction either writes ``dst`` (new API) or returns its result (old API)


def _styled(params: tuple[str, ...], tiles: tuple[str, ...]):
    """Decorator: bind a call in either style to ``params`` (+ ``dst``)."""
    def deco(impl):
        def call(*args, **kwargs):
            for style in (("dst",) + params, params) if "dst" in kwargs else (params, ("dst",) + params):
                bound = _bind(style, args, kwargs)
                if bound is None:
                    continue
                if all(isinstance(bound.get(t), Tile) or (t not in bound) for t in tiles) and \
                        not any(isinstance(bound.get(p), Tile) for p in _NOT_TILES):
                    if "dst" in style and not isinstance(bound.get("dst"), (Tile, HbmView, HbmTensor)):
                        continue
                    return impl(**bound)
            raise TraceError(f"nisa.{impl.__name__}: arguments not understood "
                             f"(expected {', '.join(params)}, optionally dst= first)")
        call.__name__ = impl.__name__
        return call
    return deco


#: parameters that name an operator or an axis, never a tile
_NOT_TILES = ("op", "op0", "op1", "reduce_op", "axis", "reverse0", "reverse1")


def _bind(params, args, kwargs):
    if len(args) > len(params):
        return None
    out = dict(zip(params, args))
    for k, v in kwargs.items():
        if k in out:
            return None
        out[k] = v
    return out


def _result(dst, shape, dtype, space, name):
    if dst is not None:
        return dst, False
    rec = _rec()
    return rec.alloc(shape, dtype, space, rec.assigned_name(name)), True


@_styled(("stationary", "moving"), ("stationary", "moving"))
def nc_matmul(stationary, moving, dst=None, **_):
    rec = _rec()
    out, fresh = _result(dst, (stationary.shape[1], moving.shape[1]), "float32", "psum", "matmul")
    ev = rec.matmul(out, stationary, moving)
    if fresh:
        out.buf.fresh_matmul = ev
    return out


@_styled(("data",), ("data",))
def nc_transpose(data, dst=None, **_):
    rec = _rec()
    out, _ = _result(dst, data.shape[::-1], data.dtype, "psum", "transposed")
    rec.copy(out, data, transpose=True)
    return out


def _operands(*xs):
    return [x for x in xs if isinstance(x, Tile)]


@_styled(("op", "data", "bias", "scale"), ("data",))
def activation(op, data, bias=None, scale=1.0, dst=None, reduce_op=None, reduce_res=None, **_):
    rec = _rec()
    out, _ = _result(dst, data.shape, data.dtype, "sbuf", "act")
    rec.op(_opname(op), "scalar", out, [data] + _operands(bias, scale))
    if reduce_res is not None:
        rec.op(_opname(reduce_op) if reduce_op is not None else "sum", "scalar", reduce_res, [out],
               reduce=True)
    return out


@_styled(("op", "data", "reduce_op", "reduce_res", "bias", "scale"), ("data",))
def activation_reduce(op, data, reduce_op=None, reduce_res=None, bias=None, scale=1.0, dst=None, **_):
    return activation(op=op, data=data, bias=bias, scale=scale, dst=dst, reduce_op=reduce_op,
                      reduce_res=reduce_res)


@_styled(("op", "data", "axis"), ("data",))
def tensor_reduce(op, data, axis=None, dst=None, negate=False, keepdims=False, **_):
    rec = _rec()
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    shape = tuple((1 if i in axes else s) for i, s in enumerate(data.shape))
    out, _ = _result(dst, shape, data.dtype, "sbuf", "reduced")
    rec.op(_opname(op), "vector", out, [data], reduce=True)
    return out


@_styled(("data1", "data2", "op"), ("data1", "data2"))
def tensor_tensor(data1, data2, op, dst=None, **_):
    rec = _rec()
    out, _ = _result(dst, data1.shape, data1.dtype, "sbuf", "tt")
    rec.op(_opname(op), "vector", out, [data1, data2])
    return out


@_styled(("data", "op0", "operand0", "reverse0", "op1", "operand1", "reverse1"), ("data",))
def tensor_scalar(data, op0, operand0, reverse0=False, op1=None, operand1=None, reverse1=False,
                  dst=None, **_):
    rec = _rec()
    out, _ = _result(dst, data.shape, data.dtype, "sbuf", "ts")
    rec.op(_opname(op0), "vector", out, [data] + _operands(operand0))
    if op1 is not None:
        rec.op(_opname(op1), "vector", out, [out] + _operands(operand1))
    return out


@_styled(("data", "op0", "operand0", "op1", "operand1"), ("data",))
def scalar_tensor_tensor(data, op0, operand0, op1, operand1, dst=None, **_):
    rec = _rec()
    out, _ = _result(dst, data.shape, data.dtype, "sbuf", "stt")
    rec.op(_opname(op0), "vector", out, [data] + _operands(operand0))
    rec.op(_opname(op1), "vector", out, [out] + _operands(operand1))
    return out


@_styled(("src",), ("src",))
def tensor_copy(src, dst=None, **_):
    rec = _rec()
    out, _ = _result(dst, src.shape, src.dtype, "sbuf", "copy")
    rec.copy(out, src)
    return out


@_styled(("data",), ("data",))
def reciprocal(data, dst=None, **_):
    rec = _rec()
    out, _ = _result(dst, data.shape, data.dtype, "sbuf", "recip")
    rec.op("reciprocal", "vector", out, [data])
    return out


def memset(*args, **kwargs):
    rec = _rec()
    dst = kwargs.get("dst", args[0] if args else None)
    if isinstance(dst, Tile):
        rec.memset(dst)
        return dst
    shape = kwargs.get("shape", args[0] if args else None)
    t = rec.alloc(tuple(shape), kwargs.get("dtype", args[2] if len(args) > 2 else None), "sbuf",
                  rec.assigned_name("memset"))
    rec.memset(t)
    return t


def dma_copy(dst=None, src=None, **_):
    _rec().dma(dst, src)


def _isa() -> dict:
    return dict(nc_matmul=nc_matmul, nc_transpose=nc_transpose, activation=activation,
                activation_reduce=activation_reduce, tensor_reduce=tensor_reduce,
                tensor_tensor=tensor_tensor, tensor_scalar=tensor_scalar,
                scalar_tensor_tensor=scalar_tensor_tensor, tensor_copy=tensor_copy,
                reciprocal=reciprocal, memset=memset, dma_copy=dma_copy)


# ---------------------------------------------------------------------------------------------
# nki, nki.typing, nki.compiler


class Jit:
    """``@nki.jit`` (and baremetal/benchmark/...): keeps the function; ``kernel[grid]`` works."""

    def __init__(self, fn):
        self.fn = fn
        self.__name__ = getattr(fn, "__name__", "kernel")
        self.__wrapped__ = fn

    def __getitem__(self, grid):
        return self.fn

    def __call__(self, *a, **k):
        return self.fn(*a, **k)


def _decorator(fn=None, *a, **k):
    if callable(fn) and not a and not k:
        return Jit(fn)
    return lambda f: Jit(f)


def _passthrough(fn=None, *a, **k):
    if callable(fn) and not a and not k:
        return fn
    return lambda f: f


class _Typed:
    def __getitem__(self, _):
        return self


def _module(name: str, ns: dict) -> types.ModuleType:
    m = types.ModuleType(name, f"loopsim's recording stand-in for {name}")

    def missing(attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        return Unmodelled(f"{name}.{attr}")
    m.__dict__.update(ns)
    m.__getattr__ = missing
    m.__path__ = []  # a package, so that submodule imports resolve
    return m


def modules() -> dict[str, types.ModuleType]:
    """Fresh shim modules keyed by every import name they answer to."""
    lang = _module("nki.language", _language())
    isa = _module("nki.isa", _isa())
    typing = _module("nki.typing", {"tensor": _Typed(), "mutable_tensor": _Typed()})
    compiler = _module("nki.compiler", {n: _passthrough for n in (
        "skip_middle_end_transformations", "enable_stack_allocator", "force_auto_alloc")})
    nki = _module("nki", {"language": lang, "isa": isa, "typing": typing, "compiler": compiler,
                          "jit": _decorator, "baremetal": _decorator, "benchmark": _decorator,
                          "profile": _decorator, "trace": _decorator})
    nx = _module("neuronxcc", {"nki": nki})
    out = {"nki": nki, "nki.language": lang, "nki.isa": isa, "nki.typing": typing,
           "nki.compiler": compiler, "neuronxcc": nx}
    for k, v in list(out.items()):
        if k.startswith("nki"):
            out["neuronxcc." + k] = v
    return out


@contextlib.contextmanager
def installed(rec: Recorder):
    """The shim in ``sys.modules`` and ``rec`` active for the duration; restored on any exit."""
    mods = modules()
    saved = {k: sys.modules.get(k) for k in mods}
    sys.modules.update(mods)
    _active.append(rec)
    try:
        yield mods
    finally:
        _active.remove(rec)
        for k, v in saved.items():
            if v is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = v
