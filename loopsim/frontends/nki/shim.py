"""The recording stand-in for the NKI modules (``nki``, ``nki.language``, ``nki.isa``,
``nki.isa.constants``, ``nki.collectives``, ``nki.typing``, ``nki.compiler``,
``nki.experimental`` and the ``neuronxcc.nki...`` spellings); docs/nki.md tabulates what each
modelled call counts.

Each call records into the active :class:`loopsim.frontends.nki.record.Recorder`; nothing computes a value.
A name the shim does not model is an :class:`Unmodelled` placeholder: called on tiles whose output
shape is known it is costed as ASSUMED generic work on its engine (:mod:`.work`), else it stops the
trace with the call's name. :func:`installed` puts the modules in ``sys.modules`` for one trace and
restores whatever was there before, even when the trace fails.
"""

from __future__ import annotations

import builtins
import contextlib
import math
import numbers
import sys
import types

from loopsim.base.limits import check_int
from loopsim.frontends.nki import grids as grids_mod
from loopsim.frontends.nki import work as work_mod
from loopsim.frontends.nki.access import Index
from loopsim.frontends.nki.dtypes import NkiDType, all_dtypes
from loopsim.frontends.nki.errors import TraceError
from loopsim.frontends.nki.record import Recorder, user_frame
from loopsim.frontends.nki import registers as registers_mod
from loopsim.frontends.nki.registers import Register
from loopsim.frontends.nki.views import DS, HbmSplit, HbmTensor, HbmView, LoopReduce, ParDim, Tile, dtype_name
from loopsim.frontends.nki.events import LoopRec
from loopsim.frontends.nki.symbolic import IndexTile, NeedsConcrete, Sym

_active: list[Recorder] = []


def _rec() -> Recorder:
    if not _active:
        raise TraceError("an NKI call outside a loopsim trace")
    return _active[-1]


class Unmodelled:
    """A name of the NKI API that loopsim does not model.

    Called on tiles whose shapes are known (its ``dst=``, or an instruction documented to keep its
    input's shape), it is charged as generic work on its engine (:mod:`.work`, listed as ASSUMED
    with its FILE:LINE) and its output holds its first input's tile; called without a tile, or
    without a known output shape, it stops the trace naming the call."""

    def __init__(self, name: str):
        self._name = name

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        return Unmodelled(f"{self._name}.{attr}")

    def __call__(self, *a, **k):
        short = self._name.rsplit(".", 1)[-1]
        if short in work_mod.NO_WORK and _active:
            return None
        if _active and self._name.startswith(("nki.isa", "nki.language")):
            return _assumed(self._name, short, a, k)
        if self._name.startswith("nki.compiler.") and "." not in self._name[len("nki.compiler."):]:
            return Config(self._name, *a, **k)  # a compile option class the shim does not list
        raise TraceError(f"{self._name} is not modelled by loopsim's NKI shim")

    def _use(self, *_):
        raise TraceError(f"{self._name} is not modelled by loopsim's NKI shim")

    __iter__ = __bool__ = __int__ = __index__ = __getitem__ = __enter__ = _use

    def __repr__(self):
        return self._name


#: unmodelled instructions whose output has their first input's shape (NKI ISA reference)
_SAME_SHAPE = {"dropout", "exponential", "tensor_tensor_scan", "tensor_scalar_cumulative",
               "tensor_copy_predicated", "range_select", "gelu_apprx_sigmoid", "silu_dx", "erf_dx",
               "sign", "floor", "ceil", "trunc", "logical_not", "bitwise_not", "invert"}


#: unmodelled instructions whose output has N elements per partition of their data input (NKI
#: ISA reference: bn_stats "The output tile of the instruction has 6 elements per partition";
#: bn_aggr "an output tile with two elements per partition: a mean followed by a variance")
_PER_PARTITION = {"bn_stats": 6, "bn_aggr": 2}


#: keyword arguments of an instruction that it writes (never its data input)
_OUTPUTS = ("dst", "out", "reduce_res", "res")


def _holds_input(rec, dst: Tile, ins: list) -> None:
    """``dst`` of an unmodelled instruction holds its data input's tile (the first input of
    ``dst``'s shape, else the first input with ``dst``'s extent along the same dimensions): the
    dataflow goes on, so what is stored or multiplied later is counted; no input: a constant."""
    from loopsim.frontends.nki.events import TileRef

    same = next((x for x in ins if x.shape == dst.shape), None)
    if same is not None:
        rec.copy(dst, same)
        return
    for x in ins:
        ref, axes = rec.resolve(x, "input")
        kept = dst.box_shape()
        if ref.logical.kind == "const" or len(axes) != len(kept) or None in axes:
            continue
        sizes = list(ref.sizes)
        for i, d in enumerate(axes):
            sizes[d] = kept[i]
        rec.bind(dst, TileRef(ref.logical, ref.starts, tuple(sizes)), axes)
        return
    rec.memset(dst)


def _assumed(name: str, short: str, args, kwargs):
    rec = _rec()
    _no_grids(name, args, kwargs)
    dst = kwargs.get("dst")
    if dst is None and args and isinstance(args[0], Tile) and "dst" not in kwargs and \
            any(isinstance(x, Tile) for x in list(args[1:]) + list(kwargs.values())) and \
            short not in _SAME_SHAPE:
        dst = args[0]  # NKI 0.2 style: dst first, positionally
        args = args[1:]
    ins = [x for x in list(args) + [v for kk, v in kwargs.items() if not kk.startswith(_OUTPUTS)]
           if isinstance(x, Tile) and x.buf.binding is not None]
    if dst is None:
        if not ins:
            raise TraceError(f"{name} is not modelled by loopsim's NKI shim (and has no tile "
                             "argument to cost it by)")
        # nki.language calls without an axis= are elementwise (the language reference's math
        # functions): the output has the largest input's shape
        elementwise = name.startswith("nki.language.") and "axis" not in kwargs
        if short in _PER_PARTITION:  # [partitions, N] of the data tile, its dtype by default
            dst = rec.alloc((ins[0].shape[0], _PER_PARTITION[short]),
                            kwargs.get("dtype") or ins[0].dtype, "sbuf", rec.assigned_name(short))
        elif short not in _SAME_SHAPE and not elementwise:
            raise TraceError(f"{name} is not modelled by loopsim's NKI shim and its output shape is "
                             f"not known: pass dst= (an output tile) so it can be costed as generic "
                             "work, or rewrite it with modelled calls")
        else:
            big = max(ins, key=lambda t: t.size)
            dst = rec.alloc(big.shape, kwargs.get("dtype") or big.dtype, "sbuf",
                            rec.assigned_name(short))
    if not isinstance(dst, Tile):
        raise TraceError(f"{name} is not modelled by loopsim's NKI shim and writes {dst!r}, not an "
                         "on-chip tile: its cost is not known")
    _holds_input(rec, dst, [x for x in ins if x.buf is not dst.buf])
    for kk, v in kwargs.items():  # further outputs (dst_scale=, reduce_res=): written, not read
        if kk != "dst" and kk.startswith(_OUTPUTS) and isinstance(v, Tile) and v.buf.binding is None:
            rec.memset(v)
    passes, elements = 1, dst.size
    if short in _PER_PARTITION and ins:  # statistics over the data: one element-op per input element
        elements = ins[0].size
    st = kwargs.get("stationary")
    if short == "nc_matmul_mx" and isinstance(st, Tile):
        # a Tensor Engine matmul: per output element one multiply-add per contraction value; each
        # x4 element of the stationary packs 4 values of K along its partitions
        passes = 4 * st.shape[0]
    work_mod.charge(rec, name, work_mod.engine_of(short), elements, passes, assumed=True)
    return dst


def _opname(op) -> str:
    if op is None:
        return "copy"
    if isinstance(op, Unmodelled):
        return op._name.rsplit(".", 1)[-1]  # an operator the shim has no entry for: its name
    name = getattr(op, "__name__", None) or getattr(op, "name", None) or str(op)
    return {"amax": "max", "amin": "min", "identity": "copy", "bypass": "copy", "true_divide": "divide",
            "max_": "max", "min_": "min"}.get(name, name)


# ---------------------------------------------------------------------------------------------
# nki.language


def _range(kind):
    def r(start, stop=None, step=1, **_):
        if stop is None:
            start, stop = 0, start
        # numpy integers (bounds computed from a numpy array of the kernel's) are integers
        start, stop, step = (int(x) if isinstance(x, numbers.Integral) and not isinstance(x, (bool, int))
                             else x for x in (start, stop, step))
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
    """``range`` inside the kernel's modules: a loop while the kernel runs (any step, as
    Python's), else the builtin."""
    if _active and _active[-1].running and all(type(a) is int for a in args):
        r = builtins.range(*args)
        if len(r) == 0:
            return iter(())
        return _rec().loop(len(r), "range", r.start, r.step)
    return builtins.range(*args)


def par_dim(n):
    return ParDim(n)


def ds(start, size, step=None):
    """``nl.ds(start, size)``: ``size`` consecutive indices from ``start`` (a loop-index expression)."""
    if step not in (None, 1):
        raise TraceError(f"nl.ds({start}, {size}, step={step}): a strided slice is not modelled")
    return DS(start, size)


def arange(*args):
    """``nl.arange([start,] stop[, step])``: an index tile; ``* s`` and ``+`` of other index
    tiles (strides, sliding windows) are affine index expressions (:class:`.access.Index`)."""
    if len(args) == 1:
        lo, hi, st = 0, args[0], 1
    else:
        lo, hi, st = args[0], args[1], (args[2] if len(args) > 2 else 1)
    if isinstance(st, bool) or not isinstance(st, int) or st <= 0:
        raise TraceError(f"nl.arange step {st!r} must be a positive integer")
    n = -(-(hi - lo) // st)
    if n <= 0:
        raise TraceError(f"nl.arange({lo}, {hi}, {st}) is empty")
    return Index(Sym.of(lo), ((None, st, n),))


class _MGrid:
    def __getitem__(self, key):
        key = key if isinstance(key, tuple) else (key,)
        out = []
        for i, k in enumerate(key):
            lo = k.start or 0
            step = k.step or 1
            out.append(Index(Sym.of(lo), ((i, step, -(-(k.stop - lo) // step)),)))
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

    @property
    def z(self):
        return self[3]


mgrid = _MGrid()


def program_id(axis=0, axes=None):
    """``nl.program_id(axis)``: the launch-grid index (a loop index of the grid loops). A kernel
    launched without a grid axis is its one program: index 0 (as the library's kernels assume,
    ``lnc_id = nl.program_id(0) if nl.num_programs(axes=0) > 1 else 0``)."""
    rec = _rec()
    axis = axis if axes is None else axes
    if rec.pids is not None and axis < len(rec.pids):  # the grid runs program by program
        return rec.pids[axis]
    if axis >= len(rec.grid):
        return 0
    return Sym({rec.grid[axis]: 1}, 0)


def num_programs(axis=None, axes=None):
    """``nl.num_programs(axes=0)`` (also ``axis=``, or none: the whole grid) from ``--grid``."""
    rec = _rec()
    axis = axes if axis is None else axis
    if isinstance(axis, (tuple, list)):
        n = 1
        for a in axis:
            n *= num_programs(a)
        return n
    if axis is None:
        n = 1
        for g in rec.grid:
            n *= g.trips
        return n
    if axis >= len(rec.grid):
        return 1  # no grid along this axis: one program (give --grid to launch more)
    return rec.grid[axis].trips


def program_ndim():
    return len(_rec().grid)


_HBM = ("hbm", "shared_hbm", "private_hbm")


def ndarray(shape, dtype=None, buffer=None, name="", **_):
    rec = _rec()
    space = buffer if isinstance(buffer, str) else "sbuf"
    if space in _HBM:
        loops = [r.var for r in rec.stack if isinstance(r, LoopRec) and r.var.site is not None]
        if loops and rec.running:
            # a tensor allocated in each iteration of a loop (a block's scratch): one tensor per
            # iteration, which a loop run iteration by iteration makes
            raise NeedsConcrete(f"an HBM tensor allocated in loop {loops[-1].name}: one per "
                                "iteration", {v.site for v in loops})
        return rec.hbm(name or rec.assigned_name("out"), shape, dtype, buffer=space)
    return rec.alloc(shape, dtype, space, name or None)


def shared_constant(constant, dtype=None, **_):
    """``nl.shared_constant(array, dtype)``: a constant the compiler places in shared HBM; the
    kernel loads it like any input (its bytes are read from HBM)."""
    import numpy as np

    rec = _rec()
    shape = tuple(int(d) for d in np.shape(constant))
    if not shape:
        raise TraceError("nl.shared_constant of a scalar is not modelled (a tensor is)")
    t = rec.hbm(rec.assigned_name("constant"), shape, dtype or str(np.asarray(constant).dtype),
                buffer="shared_hbm")
    a = np.asarray(constant)
    t.logical.identity = a.ndim == 2 and a.shape[0] == a.shape[1] and \
        bool(np.array_equal(a, np.identity(a.shape[0], dtype=a.dtype)))
    return t


def shared_identity_matrix(n, dtype=None, dst=None, **_):
    """``nl.shared_identity_matrix(n, dtype)``: an n x n identity in SBUF
    (https://awsdocs-neuron.readthedocs-hosted.com/en/v2.30.0/nki/api/generated/nki.language.shared_identity_matrix.html:
    "the same behavior to nki.language.shared_constant"): a constant in shared HBM loaded once,
    its n x n elements' bytes read (ASSUMED: the compiler shares one per dtype)."""
    rec = _rec()
    dtype = dtype if dtype is not None else "uint8"
    hbm = rec.hbm(rec.assigned_name("identity"), (int(n), int(n)), dtype, buffer="shared_hbm")
    hbm.logical.identity = True
    t = dst if isinstance(dst, Tile) else rec.alloc((int(n), int(n)), dtype, "sbuf",
                                                      hbm.logical.name + "_sb")
    rec.dma(t, hbm)
    return t


def loop_reduce(x, op=None, loop_indices=(), dtype=None, mask=None, **_):
    """``dst[...] = nl.loop_reduce(x, op=np.add, loop_indices=[k])``: ``dst op= x`` over loop
    ``k``, a Vector Engine op per iteration; an add of a matmul's PSUM tile is an SBUF
    accumulation (``acc``). https://awsdocs-neuron.readthedocs-hosted.com/en/v2.26.1/general/nki/api/generated/nki.language.loop_reduce.html"""
    _tile(x, "nl.loop_reduce")
    return LoopReduce(x, _opname(op) if op is not None else "add")


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


class NKIObject:
    """``nl.NKIObject``: the base class of kernel dataclasses and configuration objects
    (https://awsdocs-neuron.readthedocs-hosted.com/en/v2.30.0/_modules/nki/language.html). A plain
    Python class here; keyword arguments become attributes. A subclass whose ``__init__`` is called
    wrongly fails with its class name and the line it is defined at."""

    def __init__(self, **kwargs):
        for k, v in kwargs.items():
            setattr(self, k, v)

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        # class attributes without annotations are fields too (``@dataclass class
        # P(nl.NKIObject): idx = None`` is called as ``P(idx=3)``): annotate them before the
        # decorator runs
        ann = dict(cls.__dict__.get("__annotations__", {}))
        for k, v in list(cls.__dict__.items()):
            if not k.startswith("_") and k not in ann and (v is None or type(v) in (
                    int, float, str, bool, tuple)):
                ann[k] = "typing.Any"
        cls.__annotations__ = ann
        init = cls.__dict__.get("__init__")
        if init is None or getattr(init, "_loopsim_wrapped", False):
            return

        def wrapped(self, *a, _init=init, **k):
            try:
                return _init(self, *a, **k)
            except TypeError as e:
                if "positional argument" in str(e) or "keyword argument" in str(e) or \
                        "missing" in str(e):
                    raise TraceError(f"{cls.__name__}(nl.NKIObject, defined at "
                                     f"{_defined_at(cls, _init)}): {e}") from None
                raise
        wrapped._loopsim_wrapped = True
        wrapped.__wrapped__ = init
        cls.__init__ = wrapped


def _defined_at(cls, init) -> str:
    """FILE:LINE of ``class NAME`` (the line of its ``__init__`` when the class line is not found)."""
    import linecache
    import os

    code = init.__code__
    path, line = code.co_filename, code.co_firstlineno
    for n in range(line, 0, -1):
        text = linecache.getline(path, n).lstrip()
        if text.startswith(f"class {cls.__name__}") and text[len(cls.__name__) + 6:][:1] in "(:":
            line = n
            break
    try:
        shown = os.path.relpath(path)
    except ValueError:
        shown = path
    return f"{shown if not shown.startswith('..') else path}:{line}"


def load(src, mask=None, dtype=None, **_):
    if isinstance(src, Tile):  # already on chip (an SBUF constant such as an identity): a copy
        return copy(src, dtype=dtype)
    if isinstance(src, HbmSplit):  # overlapping windows: one DMA per window
        rec = _rec()
        t = rec.alloc(src.shape, dtype or src.dtype, "sbuf", rec.assigned_name(_hbm_name(src)))
        _split_dma(t, src, src)
        return t
    if not isinstance(src, (HbmView, HbmTensor)):
        raise TraceError(f"nl.load of {src!r}: expected an HBM tensor or a slice of one")
    rec = _rec()
    t = rec.alloc(src.shape, dtype or src.dtype, "sbuf", rec.assigned_name(_hbm_name(src)))
    d, s2 = _squeezed(t, src)
    t.buf.fresh_load = (rec.dma(d, s2), src)
    return t


def load_transpose2d(src, mask=None, dtype=None, **_):
    """``nl.load_transpose2d``: "Load a tensor from device memory (HBM) and 2D-transpose the data
    before storing into on-chip memory (SBUF)", an HBM [F, P] access landing as a [P, F] tile
    (https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/generated/nki.language.load_transpose2d.html):
    the DMA transpose :func:`dma_transpose` models."""
    if isinstance(src, HbmSplit) and len(src.shape) == 2:
        # an access pattern that is no box (rows of a 1-D tensor by an index expression): its
        # pieces' DMAs land as the pattern's shape, then the tile is transposed on landing
        rec = _rec()
        landed = rec.alloc(src.shape, src.dtype, "sbuf", rec.assigned_name("dma_landed"))
        _split_dma(landed, src, src)
        out = rec.alloc(tuple(src.shape[::-1]), dtype or src.dtype, "sbuf", rec.assigned_name("transposed"))
        rec.copy(out, landed, transpose=True, engine_work=False)
        rec.notes.append(f"{work_mod.call_site(rec)}: nl.load_transpose2d of an access pattern "
                         "split into DMAs: costed as those DMAs, not at the DMA transpose rate (ASSUMED)")
        return out
    if not isinstance(src, (HbmView, HbmTensor)):
        raise TraceError(f"nl.load_transpose2d of {src!r}: expected an HBM tensor or a slice of one")
    if isinstance(src, HbmView) and src.order is not None and not isinstance(src.order[0], tuple) \
            and src.indirect is None and src._shape is None:
        # index tiles that name the tile's axes (x[i_f, i_p], the tensor's [F, P] block): the
        # view is the landed tile's layout, its block in the tensor's order is what is transposed
        block = HbmView(src.tensor, src.dims)
        if tuple(block.shape[::-1]) == tuple(src.shape):
            return dma_transpose(block, dtype=dtype)
    return dma_transpose(src, dtype=dtype)


def _hbm_name(x) -> str:
    t = x.tensor if isinstance(x, (HbmView, HbmSplit)) else x
    return f"{t.logical.name}_tile"


def store(dst, value, mask=None, **_):
    if not isinstance(dst, (HbmView, HbmTensor)) or not isinstance(value, Tile):
        raise TraceError(f"nl.store({dst!r}, {value!r}): expected an HBM slice and a tile")
    _rec().dma(dst, value)


def copy(src, dtype=None, **_):
    rec = _rec()
    _tile(src, "nl.copy")
    t = rec.alloc(src.box_shape(), dtype or src.dtype, "sbuf", rec.assigned_name("copy"))
    rec.copy(t, src)
    return t.as_view_of(src)


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


def _static_cast(x, dtype=None, **_):
    """``nl.static_cast(t, dtype)``: a copy of the tile in another dtype."""
    return copy(x, dtype=dtype)


def dynamic_range(*args, **kw):
    """``nl.dynamic_range(start, stop, step)``: a hardware loop. With integer bounds it is a loop
    like any other
    (https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/deep-dives/nki-dynamic-loops.html:
    start/stop "Can be Python int literals or VirtualRegister objects"). A bound in a register
    takes the register's value: moved in (exact), or read at run time and stated by the user
    (``--register-value``, :mod:`.registers`: the trip count noted ASSUMED), else refused."""
    kind = kw.pop("kind", "dynamic_range")
    if not kw and all(isinstance(a, int) and not isinstance(a, bool) for a in args):
        return _range(kind)(*args)
    names = ("start", "stop", "step")
    given = dict(zip(names, args), **{k: v for k, v in kw.items() if k in names})
    if "stop" not in given:
        given = {"start": 0, "stop": given.get("start"), "step": given.get("step", 1)}
    bounds = {"start": 0, "step": 1, **given}
    rec = _rec()
    call = f"nl.{kind}(" + ", ".join(
        "<register>" if isinstance(bounds[n], Register) else repr(bounds[n]) for n in names) + ")"
    stated = []
    for n in names:
        if isinstance(bounds[n], Register):
            reg = bounds[n]
            bounds[n] = reg.resolve(f"{call}: its {n}")
            if reg.stated is not None:
                stated.append(f"its {n} is {reg.describe()}, {bounds[n]} (ASSUMED: the register's "
                              f"value given by the user, {reg.stated.text})")
    loop = _range(kind)(bounds["start"], bounds["stop"], bounds["step"])
    if stated:
        trips = len(builtins.range(bounds["start"], bounds["stop"], bounds["step"]))
        rec.notes.append(f"{work_mod.call_site(rec)}: nl.{kind} runs {trips} iteration"
                         f"{'s' * (trips != 1)}: " + ", ".join(stated))
    return loop


def fori_loop(lower, upper, body_fun, step=1, unroll=False, **_):
    """``nl.fori_loop(lower, upper, body_fun, step=1)``: ``body_fun(i)`` for ``i`` in
    ``range(lower, upper, step)``, a compiled loop
    (https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/generated/nki.language.fori_loop.html).
    Integer bounds trace as a loop like ``nl.affine_range`` (``unroll=True`` changes where the
    compiler unrolls it, not what it moves); a bound in a register takes the register's value as
    :func:`dynamic_range` does (moved in, or stated with ``--register-value``, else refused)."""
    if not callable(body_fun):
        raise TraceError(f"nl.fori_loop: body_fun {body_fun!r} is not a function (i) -> None")
    if isinstance(step, bool) or not isinstance(step, int) or step <= 0:
        raise TraceError(f"nl.fori_loop: step={step!r} must be a compile-time positive integer")
    for i in dynamic_range(lower, upper, step, kind="fori_loop"):
        body_fun(i)
    return None


def while_loop(init, body_fun=None, **_):
    """``nl.while_loop(init, body_fun)``: ``r = init; while r != 0: r = body_fun(r)``
    (https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/generated/nki.language.while_loop.html),
    run as Python runs it, the condition a register's known value or the one stated for the line
    that read it (``--register-value FILE:LINE=N``, noted ASSUMED), else refused naming the
    option. A condition true twice running with the value read at the same line never ends, and
    is refused."""
    if not callable(body_fun):
        raise TraceError(f"nl.while_loop: body_fun {body_fun!r} is not a function (r) -> register")
    r, last = init, None
    while True:
        if isinstance(r, Register):
            value = r.resolve("nl.while_loop: its condition")
            if r.stated is not None:
                _rec().notes.append(f"{_site()[2]}: nl.while_loop tests {r.describe()}, {value}: "
                                    f"{'true' if value else 'false'} (ASSUMED: the register's value "
                                    f"given by the user, {r.stated.text})")
            origin = (r.read_at or r.site, value)
        elif isinstance(r, int) and not isinstance(r, bool):
            value, origin = r, ("constant", r)
        else:
            raise TraceError(f"nl.while_loop: the condition {r!r} is not a register "
                             "(nisa.register_alloc) or an integer")
        if not value:
            return None
        if origin == last:
            raise TraceError(f"nl.while_loop: its condition is {value} again from the same line: "
                             "with the values stated it never ends; give the line that reads the "
                             f"next condition in the body its own {registers_mod.OPTION} "
                             "FILE:LINE=0")
        last = origin
        r = body_fun(r)


def if_else(cond, then_fn=None, else_fn=None, **_):
    """``nl.if_else(cond, then_fn, else_fn=None)``: a Python bool or int chooses at trace time
    (as NKI does); a register's value is its known or stated value (``--register-value``, noted
    ASSUMED), else the trace stops naming it
    (https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/generated/nki.language.if_else.html)."""
    fn = then_fn if cond else else_fn
    if fn is not None:
        fn()
    return None


def softmax(x, axis=-1, dtype=None, **_):
    _tile(x, "nl.softmax")
    return _rec().elementwise("softmax", [x], dtype)


# -- tile grids, block grids, stream buffers (loopsim.frontends.nki.grids) ----------------


def _new_tensor(shape, dtype, buffer, name=""):
    return ndarray(shape, dtype, buffer=str(buffer) if buffer is not None else "sbuf", name=name)


def tiles(src, tile_shape=None, **_):
    """``nl.tiles(src, tile_shape=...)``: ``src`` in tile coordinates (:mod:`.grids`)."""
    return grids_mod.grid(src, tile_shape)


def blocks(src, tile_shape=None, block_shape=None, **_):
    """``nl.blocks(src, tile_shape=..., block_shape=...)``: tiles grouped into blocks."""
    if block_shape is None:
        raise TraceError("nl.blocks: block_shape= (tiles per block) is required")
    return grids_mod.grid(src, tile_shape, block_shape)


def alloc_tiles(tile_shape=None, element_shape=None, buffer="sbuf", dtype=None, name="", **_):
    """``nl.alloc_tiles(tile_shape=, element_shape=, buffer=, dtype=)``: new storage as a grid."""
    return grids_mod.alloc_grid(_new_tensor, tile_shape, element_shape, buffer, dtype, name)


def alloc_blocks(tile_shape=None, block_shape=None, element_shape=None, buffer="sbuf", dtype=None,
                 name="", **_):
    """``nl.alloc_blocks(...)``: new storage as a block grid."""
    return grids_mod.alloc_grid(_new_tensor, tile_shape, element_shape, buffer, dtype, name,
                                block_shape)


def empty_like(x, dtype=None, buffer=None, name="", **_):
    """``nl.empty_like(x, buffer=, dtype=)``: storage of ``x``'s geometry (a grid stays a grid)."""
    return grids_mod.like(_new_tensor, x, dtype, buffer, name)


def zeros_like(x, dtype=None, buffer=None, name="", **_):
    """``nl.zeros_like(x)``: as :func:`empty_like`, filled with zeros (a memset, no HBM bytes)."""
    t = empty_like(x, dtype, buffer, name)
    data = t.data if isinstance(t, grids_mod.NkiGrid) else t
    if not isinstance(data, Tile):
        raise TraceError("nl.zeros_like in HBM is not modelled (on chip it is)")
    _rec().memset(data)
    return t


def alloc_stream_buffers(view, buffer="sbuf", dim=0, num_slots=2, dtype=None, transpose_axes=None,
                         name="", **_):
    """``nl.alloc_stream_buffers(view, buffer=, dim=, num_slots=)``: ``num_slots`` rotating
    on-chip slots of one step of ``view`` along ``dim``
    (https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/generated/nki.language.alloc_stream_buffers.html).
    The slot count reaches the timeline as the buffers the source tensor's loads rotate through
    (:class:`.grids.NkiStreamBuffers`)."""
    rec = _rec()
    pool = grids_mod.stream_buffers(_new_tensor, view, str(buffer), dim, num_slots, dtype,
                                    transpose_axes, name)
    site = work_mod.call_site(rec)
    if pool.source_name is None:
        rec.note(f"{site}: nl.alloc_stream_buffers over an on-chip view: its {num_slots} slots "
                 "are not a load rotation (ASSUMED: the timeline rotates its loads only)")
    else:
        slots = rec.__dict__.setdefault("stream_slots", {})
        slots[pool.source_name] = max(num_slots, slots.get(pool.source_name, 0))
        rec.note(f"{site}: stream buffers of {pool.source_name}: loads of it rotate through "
                 f"{slots[pool.source_name]} slot{'s' * (slots[pool.source_name] != 1)} "
                 "(execution j fills slot j mod that and waits for the readers of j minus it)")
    return pool


def broadcast_to(x, shape, **_):
    """``nl.broadcast_to(t, shape)``: ``t.broadcast_to(shape)``."""
    if not hasattr(x, "broadcast_to"):
        raise TraceError(f"nl.broadcast_to of {x!r}: expected a tensor")
    return x.broadcast_to(shape)


def expand_dims(x, axis, **_):
    """``nl.expand_dims(t, axis)``: a size-1 dimension inserted at ``axis`` (numpy's meaning)."""
    if not hasattr(x, "expand_dim"):
        raise TraceError(f"nl.expand_dims of {x!r}: expected a tensor")
    return x.expand_dim(axis)


class MemoryRegion:
    """``nl.MemoryRegion``: the memory names ``nl.ndarray(buffer=...)`` takes."""
    sbuf, psum, hbm, private_hbm, shared_hbm = "sbuf", "psum", "hbm", "private_hbm", "shared_hbm"


class _TileSize:
    """``nl.tile_size`` for NeuronCore-v3 (Trainium2)
    (https://awsdocs-neuron.readthedocs-hosted.com/en/v2.33.0/nki/api/nki.language.tile_size.html):
    ``psum_fmax`` is per PSUM bank per partition in FP32 elements (2 KiB / 4 B = 512)."""
    pmax = 128
    gemm_stationary_fmax = 128
    gemm_moving_fmax = 512
    psum_fmax = psum_bank_fmax = 512
    psum_fmax_bytes = psum_bank_fmax_bytes = 2048
    psum_num_banks = 8
    psum_partition_bytes = 16384
    total_available_sbuf_size = 192 * 1024  # usable per partition: ASSUMED (224 KiB less reserved)
    sbuf_size_bytes = 128 * 224 * 1024  # 28 MiB (hardware/trn2-core.toml sbuf.bytes, source S2)
    sbuf_fmax_bytes = 224 * 1024
    sbuf_fmax = 224 * 1024 // 4
    bn_stats_fmax = 512  # ASSUMED: not stated in the page above


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
    ns.update(all_dtypes())
    ns.update(shared_constant=shared_constant, shared_identity_matrix=shared_identity_matrix,
              loop_reduce=loop_reduce, NKIObject=NKIObject, NkiTensor=Tile,
              static_cast=_static_cast, dynamic_range=dynamic_range,
              range=_range("range"), finfo=finfo, fori_loop=fori_loop, while_loop=while_loop, if_else=if_else,
              tiles=tiles, blocks=blocks, alloc_tiles=alloc_tiles, alloc_blocks=alloc_blocks,
              empty_like=empty_like, zeros_like=zeros_like,
              alloc_stream_buffers=alloc_stream_buffers, MemoryRegion=MemoryRegion,
              load_transpose2d=load_transpose2d, broadcast_to=broadcast_to,
              expand_dims=expand_dims,
              NkiGrid=grids_mod.NkiGrid, NkiTileGrid=grids_mod.NkiTileGrid,
              NkiBlockGrid=grids_mod.NkiBlockGrid, NkiStreamBuffers=grids_mod.NkiStreamBuffers)
    ns["identity"] = _named("copy")
    ns["copy_op"] = ns["identity"]
    return ns


#: the largest finite value of each float format, from its bits: (2 - 2^-m) x 2^E for m mantissa
#: bits and largest exponent E (IEEE fp32, bfloat16 and fp16); the OCP fp8 formats as NKI names
#: them: e4m3 1.75 x 2^8 = 448 (no infinities), e5m2 1.75 x 2^15 = 57,344
_FLOAT_MAX = {"float32": (2 - 2 ** -23) * 2.0 ** 127, "tfloat32": (2 - 2 ** -23) * 2.0 ** 127,
              "bfloat16": (2 - 2 ** -7) * 2.0 ** 127, "float16": (2 - 2 ** -10) * 2.0 ** 15,
              "float8_e4m3": 448.0, "float8_e4m3fn": 448.0, "float8_e5m2": 57344.0}


class finfo:
    """``nl.finfo(dtype)``: ``max`` and ``min`` (= -max) of a float dtype, as numpy's finfo (a
    fill value: nothing loopsim counts depends on it)."""

    def __init__(self, dtype):
        name = str(getattr(dtype, "name", None) or getattr(dtype, "__name__", None) or dtype)
        if name not in _FLOAT_MAX:
            raise TraceError(f"nl.finfo({name}): not a float dtype loopsim knows the range of")
        self.dtype, self.max, self.min = name, _FLOAT_MAX[name], -_FLOAT_MAX[name]


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
            _no_grids(f"nisa.{impl.__name__}", args, kwargs)
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


def _no_grids(what: str, args, kwargs) -> None:
    """An instruction given a tile grid itself (not its ``.data``) is refused, naming the fix
    (NKI's instructions take tensors: "NkiGrid.data exposes the exact NkiTensor operand")."""
    for v in list(args) + list(kwargs.values()):
        if isinstance(v, grids_mod.NkiGrid):
            raise TraceError(f"{what} given {v!r}: instructions take tensors; pass its .data")


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
def nc_matmul(stationary, moving, dst=None, is_transpose=False, **_):
    """``dst = stationary.T @ moving`` on the Tensor Engine; ``is_transpose=True``, or a moving
    operand that is an identity constant (``nl.shared_constant(np.identity(n))``,
    ``nl.shared_identity_matrix``), is the PE array's transpose of ``stationary``: as
    ``nc_transpose``."""
    if is_transpose or _is_identity(moving):
        return _pe_transpose(stationary, dst)
    rec = _rec()
    out, fresh = _result(dst, (stationary.shape[1], moving.shape[1]), "float32", "psum", "matmul")
    ev = rec.matmul(out, stationary, moving)
    if fresh:
        out.buf.fresh_matmul = ev
    return out


def _is_identity(t) -> bool:
    """Whether tile ``t`` holds a square block on the diagonal of an identity constant."""
    if not isinstance(t, Tile) or t.buf.binding is None:
        return False
    ref, axes = _rec().resolve(t, "matmul moving operand")
    if ref is None or not ref.logical.find().identity or len(axes) != 2 or None in axes:
        return False
    (a, b) = (ref.starts[d] for d in axes)
    return not a.terms and not b.terms and a.const == b.const and \
        ref.sizes[axes[0]] == ref.sizes[axes[1]]


def _pe_transpose(data, dst):
    """A transpose of ``data`` on the Tensor Engine into PSUM: "a matrix multiplication between
    data as the stationary tensor and an identity matrix as the moving tensor" (NKI ISA
    reference, nki.isa.nc_transpose). Its work is that matmul's, charged exactly: K = the data's
    partitions, M = its free size, N = K (the identity is K x K), so M x N outputs of K
    multiply-adds each; no FLOPs of the kernel's W and no HBM bytes: the result is the data's
    value, transposed."""
    rec = _rec()
    k = data.shape[0] if data.shape else 1
    m = math.prod(data.shape[1:]) if len(data.shape) > 1 else 1
    work_mod.charge(rec, "nc_transpose (Tensor Engine: a matmul with an identity)", "tensor", m * k, k,
                    transpose=True)
    out, _ = _result(dst, data.shape[::-1], data.dtype, "psum", "transposed")
    rec.copy(out, data, transpose=True)
    return out


@_styled(("data",), ("data",))
def nc_transpose(data, dst=None, engine=None, **_):
    """A partition <-> free transpose: on the Tensor Engine (:func:`_pe_transpose`) unless
    ``engine=nisa.vector_engine`` (a tile of 32 x 32 or less: an on-chip copy, no engine work
    charged, as ``tensor_copy``)."""
    if engine is not None and str(engine).endswith("vector"):
        rec = _rec()
        out, _ = _result(dst, data.shape[::-1], data.dtype, "sbuf", "transposed")
        rec.copy(out, data, transpose=True)
        return out
    return _pe_transpose(data, dst)


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
def tensor_reduce(op, data, axis=None, dst=None, negate=False, keepdims=False, dtype=None, **_):
    """Vector Engine reduction over free axes; without ``dst`` the reduced axes are dropped
    unless ``keepdims`` (https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/generated/nki.isa.tensor_reduce.html)."""
    rec = _rec()
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    axes = tuple(a % len(data.shape) for a in axes)
    shape = tuple((1 if i in axes else s) for i, s in enumerate(data.shape))
    if not keepdims:
        shape = tuple(s for i, s in enumerate(shape) if i not in axes) or (1,)
    out, _ = _result(dst, shape, dtype or data.dtype, "sbuf", "reduced")
    rec.op(_opname(op), "vector", out, [data], reduce=True)
    return out


@_styled(("data", "op0", "operand0", "reduce_op", "reduce_res"), ("data",))
def tensor_scalar_reduce(data, op0, operand0, reduce_op=None, reduce_res=None, dst=None,
                         reverse0=False, dtype=None, **_):
    """``tensor_scalar`` with one operator, then a reduction of its result along the free axes into
    ``reduce_res`` (one element per partition), on the Vector Engine
    (https://awsdocs-neuron.readthedocs-hosted.com/en/v2.33.0/nki/api/generated/nki.isa.tensor_scalar_reduce.html):
    the elementwise result is a Vector op like ``tensor_scalar``'s; the reduction is its statistic."""
    rec = _rec()
    out, _ = _result(dst, data.shape, dtype or data.dtype, "sbuf", "tsr")
    rec.op(_opname(op0), "vector", out, [data] + _operands(operand0))
    if reduce_res is not None:
        _tile(reduce_res, "nisa.tensor_scalar_reduce reduce_res")
        rec.op(_opname(reduce_op) if reduce_op is not None else "add", "vector", reduce_res, [out],
               reduce=True)
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


def nc_stream_shuffle(*args, **kwargs):
    """Cross-partition movement within each quadrant of 32 partitions on the Vector Engine: output
    partition i of a quadrant copies input partition ``shuffle_mask[i]`` (255: left as it was)
    (NKI ISA reference, nki.isa.nc_stream_shuffle). A mask of one partition c (the library's
    ``stream_shuffle_broadcast``: ``src[0:1, :]`` onto 32 partitions) broadcasts that row: ``dst``
    holds src's partition c on every partition; the identity mask copies. Any other mask, or
    positional arguments, is costed as generic work holding its input. Either way it is charged
    as dst's elements x 1 pass on the Vector Engine (ASSUMED: one pass per element)."""
    src, dst, mask = kwargs.get("src"), kwargs.get("dst"), kwargs.get("shuffle_mask")
    if args or not isinstance(src, Tile) or not isinstance(dst, Tile) or \
            not isinstance(mask, (list, tuple)) or src.buf.binding is None or \
            len(src.shape) < 2 or len(dst.shape) < 2:
        return _assumed("nki.isa.nc_stream_shuffle", "nc_stream_shuffle", args, kwargs)
    rec = _rec()
    mask = [int(m) for m in mask]
    npar = src.shape[0]
    if len(set(mask)) == 1 and mask[0] != 255 and mask[0] < npar <= 32 and \
            src.shape[1:] == dst.shape[1:]:
        c = mask[0]
        row = src if npar == 1 else src[(slice(c, c + 1),) + (slice(None),) * (len(src.shape) - 1)]
        ref, axes = rec.resolve(row, "nc_stream_shuffle's src")
        rec.bind(dst, ref, [None] + list(axes[1:]))  # every partition of dst: src's row c
    elif mask == list(range(32)) and src.shape == dst.shape:
        rec.copy(dst, src)
    else:
        return _assumed("nki.isa.nc_stream_shuffle", "nc_stream_shuffle", args, kwargs)
    work_mod.charge(rec, "nki.isa.nc_stream_shuffle", "vector", dst.size, 1, assumed=True)
    return dst


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
    """A DMA between HBM and an on-chip tile (or on chip); shapes equal up to size-1 dimensions
    (``(128, 8)`` into ``(128, 1, 8)``), as the DMA moves the same elements. A strided or
    overlapping HBM access pattern (:class:`loopsim.frontends.nki.views.HbmSplit`) runs as one
    DMA per element of its split entry, each into or out of that slice of the tile."""
    _no_grids("nisa.dma_copy", (), {"dst": dst, "src": src})
    split = src if isinstance(src, HbmSplit) else dst if isinstance(dst, HbmSplit) else None
    if split is not None:
        return _split_dma(dst, src, split)
    rec = _rec()
    if isinstance(dst, (HbmTensor, HbmView)) and isinstance(src, (HbmTensor, HbmView)):
        return _hbm_to_hbm(rec, dst, src)
    dst, src = _squeezed(dst, src)
    rec.dma(dst, src)


def _hbm_to_hbm(rec, dst, src) -> None:
    """An HBM -> HBM DMA (a fence: ``dma_copy(dst=out, src=out)``) reads src's bytes and writes
    dst's: staged through a tile of up to 128 rows of the first dimension, a loop over them, so
    both count and the stand-in tile stays one partition block of SBUF."""
    shape = tuple(src.shape)
    if not shape or tuple(dst.shape) != shape:
        staged = rec.alloc(shape, src.dtype, "sbuf", rec.assigned_name("hbm_to_hbm"))
        rec.dma(*_squeezed(staged, src))
        rec.dma(*_squeezed(dst, staged))
    else:
        rows = min(shape[0], 128)
        staged = rec.alloc((rows,) + shape[1:], src.dtype, "sbuf", rec.assigned_name("hbm_to_hbm"))
        rest = (slice(None),) * (len(shape) - 1)
        for i in _range("range")(-(-shape[0] // rows)):
            rec.dma(staged, src[(DS(i * rows, rows),) + rest])
            rec.dma(dst[(DS(i * rows, rows),) + rest], staged)
    rec.notes.append(f"{work_mod.call_site(rec)}: an HBM -> HBM DMA ({src!r} to {dst!r}) counts "
                     "its bytes read and written, staged through an on-chip tile of up to 128 rows "
                     "that the SBUF residency counts (ASSUMED: the DMA queues need no SBUF for it)")


def _split_dma(dst, src, split) -> None:
    other = dst if split is src else src
    if not isinstance(other, Tile) or len(other.shape) != len(split.shape):
        raise TraceError(f"{split.why} (into or out of {other!r}, of another rank, it is not split)")
    from loopsim.frontends.nki import work

    rec = _rec()
    n = len(split.parts)
    piece = [1 if j == split.axis else m for j, m in enumerate(split.shape)]
    rec.notes.append(f"{work.call_site(rec)}: an access pattern {list(split.shape)} of HBM "
                     f"{split.tensor.logical.name} that is no box (strided, repeated or overlapping) "
                     f"runs as {n} DMAs of {piece}: each element it names is moved, a repeated one again")
    for k, part in enumerate(split.parts):
        key = tuple(slice(k, k + 1) if j == split.axis else slice(None) for j in range(len(split.shape)))
        tile = other[key]
        dma_copy(dst=tile if split is src else part, src=part if split is src else tile)


def dma_compute(dst=None, srcs=(), reduce_op=None, **_):
    """A DMA that reads several sources and combines them with ``reduce_op`` into ``dst``
    (https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/nki.isa.html, dma_compute): each
    HBM source's bytes are read (a load), the combination is a Vector op into ``dst``; an HBM
    ``dst`` is written from it (a store)."""
    rec = _rec()
    srcs = list(srcs) if isinstance(srcs, (list, tuple)) else [srcs]
    if isinstance(dst, (HbmTensor, HbmView)) and srcs:
        # HBM -> HBM: the sources read, combined, the result written to dst (a store)
        staged = rec.alloc(tuple(dst.shape), dst.dtype, "sbuf", rec.assigned_name("dma_result"))
        dma_compute(dst=staged, srcs=srcs, reduce_op=reduce_op)
        d, s2 = _squeezed(dst, staged)
        rec.dma(d, s2)
        return dst
    if not isinstance(dst, Tile) or not srcs:
        raise TraceError("nisa.dma_compute: expected dst= an on-chip tile or an HBM tensor and "
                         "srcs= a list of tensors")
    tiles = []
    for x in srcs:
        if isinstance(x, (HbmTensor, HbmView)):
            if len(srcs) == 1:
                d, x2 = _squeezed(dst, x)
                rec.dma(d, x2)
                return dst
            landed = rec.alloc(dst.shape, x.dtype, "sbuf", rec.assigned_name("dma_landed"))
            d, x2 = _squeezed(landed, x)
            rec.dma(d, x2)
            tiles.append(landed)
        elif isinstance(x, Tile):
            tiles.append(x)
        else:
            raise TraceError(f"nisa.dma_compute: source {x!r} is not a tensor")
    if dst.buf.binding is None:
        rec.memset(dst)
    rec.op(_opname(reduce_op) if reduce_op is not None else "add", "vector", dst, tiles)
    return dst


def _site():
    """(path, line, FILE:LINE as shown) of the kernel code making the current call."""
    f = user_frame()
    return (f.f_code.co_filename, f.f_lineno, work_mod.call_site(_rec())) if f is not None \
        else ("", 0, _rec().shown)


class TracedRegister(Register):
    """A register of the trace: ``while reg:`` (or ``if reg:``) tests its value, known or stated
    (noted ASSUMED); a while loop whose register is true twice running with the value read at the
    same line never ends, and is refused."""

    def __bool__(self):
        rec = _rec()
        path, line, shown = _site()
        value = self.resolve("a test of a register (while reg: or if reg:): it")
        origin = (id(self), self.read_at or self.site, value)
        tests = rec.__dict__.setdefault("register_tests", {})
        if self.stated is not None:
            rec.notes.append(f"{shown}: a test of {self.describe()}, {value}: "
                             f"{'true' if value else 'false'} (ASSUMED: the register's value given "
                             f"by the user, {self.stated.text})")
        if not value:
            tests.pop((path, line), None)
            return False
        if tests.get((path, line)) == origin:
            raise TraceError(f"a while loop on {self.describe()}: with the value stated ({value}) "
                             "it never ends (the register holds it each time the loop tests it); "
                             "give the line that reloads the register in the loop its own "
                             f"{registers_mod.OPTION} FILE:LINE=0")
        tests[(path, line)] = origin
        return True


def _compare(op: str):
    import operator

    fn = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
          "==": operator.eq, "!=": operator.ne}[op]

    def cmp(self, other):
        """``reg > 0`` (a scalar comparison, the condition ``nl.if_else`` takes): a register of
        the result, from the register's known or stated value (noted ASSUMED when stated)."""
        if isinstance(other, Register):
            b = other.resolve(f"a comparison ({op}) of registers: its right side")
        elif isinstance(other, int) and not isinstance(other, bool):
            b = other
        else:
            raise TraceError(f"a comparison of {self.describe()} with {other!r}: an integer or a "
                             "register is modelled")
        a = self.resolve(f"a comparison ({op} {b}): its left side")
        rec = _rec()
        if self.stated is not None:
            rec.note(f"{_site()[2]}: {self.describe()} {op} {b} is {fn(a, b)} with its value {a} "
                     f"(ASSUMED: the register's value given by the user, {self.stated.text})")
        return TracedRegister(_site()[2], int(fn(a, b)))
    return cmp


for _op, _name in (("<", "__lt__"), ("<=", "__le__"), (">", "__gt__"), (">=", "__ge__")):
    setattr(TracedRegister, _name, _compare(_op))


def _equality(op: str):
    cmp = _compare(op)

    def eq(self, other):  # with an integer: a register of the result; else identity, as Python's
        if isinstance(other, int) and not isinstance(other, bool):
            return cmp(self, other)
        return NotImplemented
    return eq


TracedRegister.__eq__, TracedRegister.__ne__ = _equality("=="), _equality("!=")
TracedRegister.__hash__ = object.__hash__


def scalar_load(src=None, *a, **_):
    """``nisa.scalar_load(t)``: a scalar read from a tensor at run time (an ``NkiScalar``), as a
    register read there: its value stated with ``--register-value FILE:LINE=N`` (noted ASSUMED),
    else a use that needs it is refused naming the option
    (https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/generated/nki.language.if_else.html
    compares one to choose a branch). The on-chip read moves no HBM bytes."""
    return _read()


def _read() -> Register:
    """A register holding a value read from memory at run time, here: its stated value if any."""
    path, line, shown = _site()
    s = _rec().registers.at(path, line)
    return TracedRegister(shown, None if s is None else s.value, s, read_at=shown)


def _register(dst, what: str) -> Register:
    if not isinstance(dst, Register):
        raise TraceError(f"{what}: dst {dst!r} is not a register (nisa.register_alloc())")
    return dst


def register_alloc(x=None, **_):
    """``nisa.register_alloc(x=None)``: a register, holding ``x`` (an int), or a value read from
    the one-element tensor ``x`` at run time, or nothing yet."""
    if x is None or (isinstance(x, int) and not isinstance(x, bool)):
        return TracedRegister(_site()[2], x)
    if isinstance(x, Register):
        r = TracedRegister(x.site)
        r.set(x)
        return r
    return _read()


def register_load(dst, src=None, **_):
    """``nisa.register_load(dst, src)``: ``dst`` holds the scalar read from ``src`` at run time."""
    _register(dst, "nisa.register_load").set(_read())


def register_move(dst, src=None, imm=None, **_):
    """``nisa.register_move(dst, src)``: ``dst`` holds the constant ``src`` (or ``imm=``), or
    another register's value."""
    src = imm if src is None else src
    d = _register(dst, "nisa.register_move")
    if isinstance(src, Register):
        d.set(src)
    elif isinstance(src, int) and not isinstance(src, bool):
        d.set(TracedRegister(_site()[2], src))
    else:
        raise TraceError(f"nisa.register_move: source {src!r} is neither an integer nor a register")


def _squeezed(dst, src):
    """``dst`` and ``src`` without their size-1 dimensions when that is all they differ by; a
    whole HBM tensor not yet accessed, moved to or from a whole tile of as many elements, takes
    the tile's shape (a DMA of a flat vector into a [P, F] tile: the same elements)."""
    dst, src = _flat_reshaped(dst, src)
    shapes = [getattr(x, "shape", None) for x in (dst, src)]
    if None in shapes or shapes[0] == shapes[1] or \
            [n for n in shapes[0] if n != 1] != [n for n in shapes[1] if n != 1]:
        return dst, src
    return _squeeze(dst), _squeeze(src)


def _flat_reshaped(dst, src):
    for a, b, swap in ((src, dst, False), (dst, src, True)):
        t = a.tensor if isinstance(a, HbmView) and a.order is None and a._shape is None and all(
            k and st.is_const() and st.const == 0 and n == m for (st, n, k), m in
            zip(a.dims, a.tensor.shape)) else a
        if isinstance(t, HbmTensor) and isinstance(b, Tile) and b.view_shape is None and \
                t.size == b.size and [n for n in t.shape if n != 1] != \
                [n for n in b.shape if n != 1] and not (t.logical.loaded or t.logical.output):
            r = t.reshape(b.shape).full()
            return (b, r) if not swap else (r, b)
    # a run along one dimension of an HBM tensor into a whole tile of as many elements: the
    # tile's axes walk that dimension in pieces (row-major)
    if isinstance(src, HbmTensor):
        src = src.full()
    if isinstance(src, HbmView) and src.order is None and src._shape is None and \
            isinstance(dst, Tile) and dst.view_shape is None and len(dst.shape) > 1:
        kept = [d for d, (_, n, k) in enumerate(src.dims) if k and n != 1]
        if len(kept) == 1 and src.dims[kept[0]][1] == dst.size and dst.shape != src.shape:
            import math as _m
            order = [(kept[0], _m.prod(dst.shape[i + 1:])) for i in range(len(dst.shape))]
            return dst, src.like(src.dims, order, tuple(dst.shape))
    return dst, src


def _squeeze(x):
    if isinstance(x, HbmTensor):
        x = x.full()
    if isinstance(x, HbmView) and x.order is None:
        return x.like([(a, n, k and n != 1) for a, n, k in x.dims])
    if isinstance(x, Tile) and x.view_shape is None:
        return Tile(x.buf, x.offsets, x.sizes, [k and n != 1 for n, k in zip(x.sizes, x.kept)])
    return x


@_styled(("src",), ())
def dma_transpose(src, dst=None, axes=None, dtype=None, **_):
    """A DMA that swaps the two axes of a 2-D access (HBM -> SBUF or SBUF -> SBUF): the bytes of
    ``src`` move once; the tile lands transposed. Size-1 dimensions do not count: a [n, 1]
    access landing as [1, n] is a plain DMA of its n elements
    (https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/nki.isa.html, dma_transpose)."""
    rec = _rec()
    if not isinstance(src, (Tile, HbmView, HbmTensor)):
        raise TraceError(f"nisa.dma_transpose of {src!r}: expected an HBM tensor or a tile")
    wide = [n for n in src.shape if n != 1]
    if len(wide) > 2 or (axes is not None and len(wide) == 2 and tuple(axes) not in ((1, 0),)):
        raise TraceError(f"nisa.dma_transpose of a {len(wide)}-D access (axes={axes}) is not "
                         "modelled; a 2-D transpose is")
    if len(wide) <= 1:  # a vector changing orientation: the same elements, one DMA
        out, _ = _result(dst, tuple(src.shape[::-1]), dtype or src.dtype, "sbuf", "transposed")
        d, s2 = _squeezed(out, src)
        rec.dma(d, s2)
        return out
    out, _ = _result(dst, tuple(wide[::-1]), dtype or src.dtype, "sbuf", "transposed")
    d, _unused = _squeezed(out, _Shape(tuple(wide[::-1])))
    s2, _unused = _squeezed(src, _Shape(tuple(wide)))
    if isinstance(s2, Tile):
        rec.copy(d, s2, transpose=True)
        return out
    landed = rec.alloc(tuple(wide), src.dtype, "sbuf", rec.assigned_name("dma_landed"))
    ev = rec.dma(landed, s2)
    if ev is not None:  # HBM -> SBUF: the DMA engines transpose at their transpose rate
        ev.transpose = True
        from loopsim.frontends.nki import dtypes

        if dtypes.itemsize(src.dtype) != 2:
            rec.notes.append(f"{work_mod.call_site(rec)}: nisa.dma_transpose of a "
                             f"{dtypes.itemsize(src.dtype)}-byte dtype: the reference documents DMA "
                             "transposes of 2-byte dtypes only (\"src.dtype is 2 bytes\"); costed at "
                             "the 2-byte transpose rate (ASSUMED)")
    rec.copy(d, landed, transpose=True, engine_work=False)
    return out


class _Shape:
    """A stand-in with only a shape (to squeeze a view to it)."""

    def __init__(self, shape):
        self.shape = shape


def iota(*args, dst=None, expr=None, pattern=None, offset=0, dtype=None, channel_multiplier=0, **k):
    """Index values generated on the GpSimd Engine into an SBUF tile (a constant: no HBM bytes),
    one element-op per output element
    (https://awsdocs-neuron.readthedocs-hosted.com/en/v2.26.1/nki/api/generated/nki.isa.iota.html:
    "Build a constant literal in SBUF using GpSimd Engine")."""
    rec = _rec()
    if args and isinstance(args[0], Tile):
        dst = args[0]
    elif args and expr is None:
        expr = args[0]
        dtype = dtype or (args[1] if len(args) > 1 else None)
    if dst is None:
        if not isinstance(expr, IndexTile):
            raise TraceError("nisa.iota without dst= needs an nl.arange/mgrid expression (its shape)")
        shape = _index_shape(expr)
        dst = rec.alloc(shape, dtype or "int32", "sbuf", rec.assigned_name("iota"))
    _tile(dst, "nisa.iota dst")
    rec.memset(dst)
    work_mod.charge(rec, "nki.isa.iota", "gpsimd", dst.size)
    return dst


def _index_shape(expr) -> tuple[int, ...]:
    if isinstance(expr, Index):
        axes = {}
        for a, _, n in expr.terms:
            axes[a if a is not None else 0] = n
        top = max(axes)
        return tuple(axes.get(i, 1) for i in range(top + 1))
    return (expr.size,)


def affine_select(*args, dst=None, pred=None, on_true_tile=None, on_false_value=None, **k):
    """A predicated copy on the GpSimd Engine: ``dst`` holds ``on_true_tile`` where an affine
    predicate of the indices holds, a constant elsewhere; one element-op per element
    (https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/generated/nki.isa.affine_select.html)."""
    rec = _rec()
    tiles = [a for a in args if isinstance(a, Tile)]
    if dst is None and on_true_tile is not None and len(tiles) >= 1:
        dst = tiles[0]
    if on_true_tile is None:
        rest = [t for t in tiles if t is not dst]
        on_true_tile = rest[-1] if rest else None
    _tile(on_true_tile, "nisa.affine_select on_true_tile")
    if dst is None:
        dst = rec.alloc(on_true_tile.shape, k.get("dtype") or on_true_tile.dtype, "sbuf",
                        rec.assigned_name("selected"))
    rec.copy(dst, on_true_tile)
    work_mod.charge(rec, "nki.isa.affine_select", "gpsimd", dst.size)
    return dst


def _bytes(t) -> int:
    return t.size * t.dtype.itemsize


def sendrecv(src=None, dst=None, send_to_rank=None, recv_from_rank=None, **_):
    """Send ``src`` to another core and receive ``dst`` from one: ``src``'s bytes cross the link
    (https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/nki.isa.html, sendrecv). The
    received tile is the peer's version of ``src`` (same tile of the same tensor)."""
    rec = _rec()
    _tile(src, "nisa.sendrecv src")
    _tile(dst, "nisa.sendrecv dst")
    rec.copy(dst, src)
    work_mod.charge(rec, "nki.isa.sendrecv", "link", 0, 0, link_bytes=_bytes(src))


def _isa() -> dict:
    return dict(nc_matmul=nc_matmul, nc_transpose=nc_transpose, activation=activation,
                activation_reduce=activation_reduce, tensor_reduce=tensor_reduce,
                tensor_tensor=tensor_tensor, tensor_scalar=tensor_scalar,
                scalar_tensor_tensor=scalar_tensor_tensor, tensor_copy=tensor_copy,
                reciprocal=reciprocal, memset=memset, dma_copy=dma_copy,
                nc_stream_shuffle=nc_stream_shuffle,
                tensor_scalar_reduce=tensor_scalar_reduce, dma_transpose=dma_transpose, iota=iota,
                affine_select=affine_select, sendrecv=sendrecv, get_nc_version=get_nc_version,
                dma_compute=dma_compute, register_alloc=register_alloc, register_load=register_load,
                register_move=register_move, scalar_load=scalar_load,
                VirtualRegister=TracedRegister,
                nc_version=NcVersion, constants=_constants_module(), **_ENGINES, **_ENUMS)


class NcVersion(int):
    """``nisa.nc_version.gen2/gen3/gen4``: NeuronCore generations, comparable as integers."""

    def __repr__(self):
        return f"nc_version.gen{int(self)}"


for _g in (2, 3, 4):
    setattr(NcVersion, f"gen{_g}", NcVersion(_g))

#: the NeuronCore generation ``nisa.get_nc_version()`` answers: gen3 (NeuronCore-v3, Trainium2),
#: the core of loopsim's trn2 sheets. ASSUMED when the kernel is traced for another sheet.
NC_VERSION = 3


def get_nc_version():
    """``nisa.get_nc_version()``: NeuronCore-v3 (Trainium2), :data:`NC_VERSION` (ASSUMED)."""
    return NcVersion(NC_VERSION)


class _Enum:
    """A config enum of ``nki.isa`` (``engine``, ``dge_mode``, ``oob_mode``, ...): each member a
    distinct named value (https://awsdocs-neuron.readthedocs-hosted.com/en/v2.29.1/_sources/nki/api/nki.isa.rst,
    "NKI ISA Config Enums")."""

    def __init__(self, name):
        self._name = name

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        v = _EnumValue(f"{self._name}.{attr}")
        setattr(self, attr, v)
        return v


class _EnumValue(str):
    pass


_ENUMS = {n: _Enum(n) for n in ("engine", "dma_engine", "reduce_cmd", "dge_mode", "oob_mode",
                               "matmul_perf_mode", "activation_function")}
_ENGINES = {"vector_engine": _ENUMS["engine"].vector, "scalar_engine": _ENUMS["engine"].scalar,
            "gpsimd_engine": _ENUMS["engine"].gpsimd, "tensor_engine": _ENUMS["engine"].tensor,
            "unknown_engine": _ENUMS["engine"].unknown}


def _constants_module():
    return _module("nki.isa.constants", dict(_ENUMS))


# ---------------------------------------------------------------------------------------------
# nki.collectives: bytes over the link


class ReplicaGroup:
    """``nki.collectives.ReplicaGroup(groups)``: the ranks taking part (lists of rank ids)."""

    def __init__(self, groups=None, *a, **k):
        self.groups = groups if groups is not None else (a[0] if a else [[0]])

    @property
    def size(self) -> int:
        g = self.groups
        return len(g[0]) if g and isinstance(g[0], (list, tuple)) else len(g)


def _pairs(dsts, srcs, what):
    dsts = list(dsts) if isinstance(dsts, (list, tuple)) else [dsts]
    srcs = list(srcs) if isinstance(srcs, (list, tuple)) else [srcs]
    if len(dsts) != len(srcs):
        raise TraceError(f"{what}: {len(srcs)} sources for {len(dsts)} destinations")
    for t in dsts + srcs:
        if not isinstance(t, (Tile, HbmTensor, HbmView)):
            raise TraceError(f"{what}: {t!r} is not a tensor")
    return list(zip(dsts, srcs))


def _arrived(dst, src=None) -> None:
    """A collective's destination holds the other ranks' versions of ``src`` (the same tiles of
    the same tensor, gathered: ``src``'s tile extended to ``dst``'s extent), so a matmul or a
    store reading it goes on; an HBM destination is written (by the link)."""
    if isinstance(dst, Tile):
        ins = [src] if isinstance(src, Tile) and src.buf.binding is not None else []
        _holds_input(_rec(), dst, ins)
    else:
        t = dst.tensor if isinstance(dst, HbmView) else dst
        t.logical.output = True


def all_gather(srcs=None, dsts=None, replica_group=None, collective_dim=0, **_):
    """Each rank receives every other rank's shard: (C - 1) x its source's bytes over the link,
    C = destination elements / source elements (ring all-gather)."""
    rec = _rec()
    for dst, src in _pairs(dsts, srcs, "ncc.all_gather"):
        c = dst.size // max(1, src.size)
        work_mod.charge(rec, "nki.collectives.all_gather", "link", 0, 0,
                        link_bytes=(c - 1) * _bytes(src))
        _arrived(dst, src)


def all_reduce(srcs=None, dsts=None, replica_group=None, op=None, **_):
    """Ring all-reduce over C ranks (C from ``replica_group``): 2 (C - 1) / C x the buffer's
    bytes over the link per rank."""
    rec = _rec()
    c = _ranks(replica_group, "ncc.all_reduce")
    for dst, src in _pairs(dsts, srcs, "ncc.all_reduce"):
        work_mod.charge(rec, "nki.collectives.all_reduce", "link", 0, 0,
                        link_bytes=-(-2 * (c - 1) * _bytes(src) // c))
        _arrived(dst, src)


def _ranks(replica_group, what: str) -> int:
    c = replica_group.size if isinstance(replica_group, ReplicaGroup) else None
    if not c:
        raise TraceError(f"{what} needs replica_group=ReplicaGroup([[ranks...]]) to know how many "
                         "ranks take part")
    return c


def reduce_scatter(srcs=None, dsts=None, replica_group=None, collective_dim=0, op=None, **_):
    """``ncc.reduce_scatter(srcs, dsts, replica_group, collective_dim, op)``
    (https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/generated/nki.collectives.reduce_scatter.html):
    a ring reduce-scatter over C ranks, the first half of the ring all-reduce above: (C - 1) / C x
    the source's bytes over the link per rank (ASSUMED: the ring algorithm, as all_reduce)."""
    _ring_share("reduce_scatter", srcs, dsts, replica_group)


def all_to_all(srcs=None, dsts=None, replica_group=None, collective_dim=0, **_):
    """``ncc.all_to_all(srcs, dsts, replica_group, ...)``: each rank keeps 1/C of its source and
    sends the other (C - 1) / C, one block to each other rank: (C - 1) / C x the source's bytes
    over the link per rank
    (https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/nki.collectives.html)."""
    _ring_share("all_to_all", srcs, dsts, replica_group)


def _ring_share(name: str, srcs, dsts, replica_group) -> None:
    """Charge ``ncc.<name>``: (C - 1) / C of each source's bytes over the link per rank, C the
    replica group's ranks, each destination arriving from its source."""
    rec = _rec()
    c = _ranks(replica_group, f"ncc.{name}")
    for dst, src in _pairs(dsts, srcs, f"ncc.{name}"):
        work_mod.charge(rec, f"nki.collectives.{name}", "link", 0, 0,
                        link_bytes=-(-(c - 1) * _bytes(src) // c))
        _arrived(dst, src)


def collective_permute_implicit(srcs_by_channel=(), dsts_by_channel=(), replica_group=None, **_):
    """Each rank sends its sources to the next rank of the ring and receives its destinations:
    every source's bytes over the link once."""
    rec = _rec()
    for srcs, dsts in zip(srcs_by_channel, dsts_by_channel):
        for dst, src in _pairs(dsts, srcs, "ncc.collective_permute_implicit"):
            work_mod.charge(rec, "nki.collectives.collective_permute_implicit", "link", 0, 0,
                            link_bytes=_bytes(src))
            _arrived(dst, src)


def rank_id(*a, **k):
    """``ncc.rank_id()`` (and the rank a permute step processes): loopsim counts one rank, rank
    0 (ASSUMED: which rank's slice is read changes offsets, not bytes)."""
    return 0


def _collectives() -> dict:
    return dict(all_gather=all_gather, all_reduce=all_reduce, ReplicaGroup=ReplicaGroup,
                reduce_scatter=reduce_scatter, all_to_all=all_to_all,
                collective_permute_implicit=collective_permute_implicit, rank_id=rank_id,
                collective_permute_implicit_current_processing_rank_id=rank_id)


# ---------------------------------------------------------------------------------------------
# nki, nki.typing, nki.compiler


class Jit:
    """``@nki.jit`` (and baremetal/benchmark/...): keeps the function; ``kernel[grid]`` works;
    ``options``: the decorator's keyword arguments (``compile_config=``, ...)."""

    def __init__(self, fn, options=None):
        self.fn = fn
        self.options = dict(options or {})
        self.__name__ = getattr(fn, "__name__", "kernel")
        self.__wrapped__ = fn

    def __getitem__(self, grid):
        return self.fn

    def __call__(self, *a, **k):
        return self.fn(*a, **k)


def _decorator(fn=None, *a, **k):
    if callable(fn) and not a and not k:
        return Jit(fn)
    return lambda f: Jit(f, k)


class Config:
    """``nki.compiler.CompileConfig(...)`` / ``SpecializationConfig(...)`` (and any other
    ``nki.compiler`` class called): its options kept as attributes
    (https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/generated/nki.compiler.CompileConfig.html).
    They choose how the compiler allocates and schedules, not what the kernel computes or moves:
    W and Q are unchanged; the timeline keeps the buffers the kernel writes (ASSUMED, see
    :func:`config_note`)."""

    def __init__(self, _name="nki.compiler.CompileConfig", *a, **options):
        self._name, self.options = _name, dict(options)
        for k, v in options.items():
            setattr(self, k, v)

    def __getattr__(self, attr):
        if attr.startswith("_"):
            raise AttributeError(attr)
        return None  # an option not given: its default

    def __repr__(self):
        return f"{self._name.rsplit('.', 1)[-1]}(" + ", ".join(
            f"{k}={v}" for k, v in self.options.items()) + ")"


def _config_class(name):
    def make(*a, **k):
        return Config(f"nki.compiler.{name}", *a, **k)
    make.__name__ = name
    return make


def config_note(jit: "Jit") -> str | None:
    """The note a kernel compiled with ``@nki.jit(compile_config=...)`` gets: its options, and
    that the timeline does not follow them. The Neuron docs say what they change qualitatively
    (AllocationMode.RING: "a DMA into a new tile seldom waits for compute that reads an earlier
    tile"; prefetch_auto: "reserves a fixed prefetch ring + slack band in SBUF",
    https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/generated/nki.compiler.AllocationMode.html),
    not how many buffers a load gets, so the loads rotate through the buffers the kernel writes
    (stream buffers' slots, else one; ``--buffers`` to try others)."""
    cfgs = [v for v in jit.options.values() if isinstance(v, Config)]
    if not cfgs:
        return None
    return (f"@nki.jit({', '.join(map(repr, cfgs))}): compiler allocation and scheduling options; "
            "W and Q do not depend on them; the timeline keeps the buffers the kernel writes "
            "(ASSUMED: the docs do not say how many buffers these options give a load; try "
            "--buffers N)")


def _passthrough(fn=None, *a, **k):
    if callable(fn) and not a and not k:
        return fn
    return lambda f: f


class _Allocs:
    """``nki.compiler.sbuf`` / ``psum``: explicit allocators (``mod_alloc(base_addr=...)``,
    ``alloc(...)``). Where a buffer lives decides nothing loopsim counts but its memory: each
    returns the memory's name, what ``nl.ndarray(buffer=...)`` needs."""

    def __init__(self, space: str):
        self.space = space

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        return lambda *a, **k: self.space

    def __str__(self):
        return self.space


class _Directive:
    """A scheduling directive (``nki.compiler.no_reorder()``): no effect on what is counted."""

    def __init__(self, *a, **k):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


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
    compiler = _module("nki.compiler", {**{n: _passthrough for n in (
        "skip_middle_end_transformations", "enable_stack_allocator", "force_auto_alloc")},
        "sbuf": _Allocs("sbuf"), "psum": _Allocs("psum"), "no_reorder": _Directive,
        # a loop's directives= (neuronxcc: multi_buffer(n) buffers a loop's tiles n ways)
        "multi_buffer": _Directive,
        **{n: _config_class(n) for n in ("CompileConfig", "SpecializationConfig")},
        **{n: _Enum(n) for n in (
            "Allocation", "AllocationMode", "OptLevel", "SchedulingHeuristic", "AddressRotation")}})
    nki = _module("nki", {"language": lang, "isa": isa, "typing": typing, "compiler": compiler,
                          "jit": _decorator, "baremetal": _decorator, "benchmark": _decorator,
                          "profile": _decorator, "trace": _decorator})
    # neuronxcc's nki.language.constants: sizeinbytes(dtype), the bytes of one element
    from loopsim.frontends.nki import dtypes

    lang.__dict__["constants"] = _module("nki.language.constants", {"sizeinbytes": dtypes.itemsize})
    coll = _module("nki.collectives", _collectives())
    nki.__dict__["collectives"] = coll
    # nki.experimental.while_loop: the tracer front end's data-dependent loop
    # (https://awsdocs-neuron.readthedocs-hosted.com/en/v2.32.0/nki/api/generated/nki.isa.VirtualRegister.html)
    experimental = _module("nki.experimental", {"while_loop": while_loop})
    nki.__dict__["experimental"] = experimental
    nx = _module("neuronxcc", {"nki": nki})
    out = {"nki": nki, "nki.language": lang, "nki.isa": isa, "nki.typing": typing,
           "nki.compiler": compiler, "nki.isa.constants": isa.constants,
           "nki.language.constants": lang.constants,
           "nki.collectives": coll, "nki.experimental": experimental, "neuronxcc": nx}
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
