"""``PATH.py::FUNCTION`` -> loopsim IR, by running the kernel against the recording shim.

SAFETY: reading a kernel reference EXECUTES the Python file (as ``python FILE.py`` would, with
the NKI modules replaced by loopsim's shim); a TOML spec is never executed. Only point loopsim at
kernel files you would run yourself.
"""

from __future__ import annotations

import ast
import importlib.util
import inspect
import itertools
import re
import sys
import traceback
from pathlib import Path
from typing import Mapping

from loopsim.base.errors import SpecError
from loopsim.ir.kernel import DTYPES
from loopsim.frontends.nki.errors import TraceError
from loopsim.frontends.nki.record import Recorder
from loopsim.frontends.nki.views import DTYPE_OF, NKI_OF
from loopsim.frontends.nki.shim import Jit, installed, py_range

_counter = itertools.count()


def is_reference(ref: str) -> bool:
    """Whether ``ref`` names a kernel function in a Python file (``PATH.py::FUNCTION``)."""
    return isinstance(ref, str) and "::" in ref and ref.split("::", 1)[0].endswith(".py")


def split_reference(ref: str) -> tuple[str, str]:
    path, sep, func = ref.partition("::")
    if not sep or not path.endswith(".py") or not func.isidentifier():
        raise SpecError(f"kernel reference {ref!r} must be PATH.py::FUNCTION")
    return path, func


_DIM = r"(?:\d+|[A-Za-wyzA-Z_][A-Za-wyzA-Z_0-9]*)"


def parse_arg(text: str) -> tuple[str, tuple[tuple[int | str, ...], str]]:
    """``NAME=D0xD1[xD2...][:dtype]`` -> (name, (shape, dtype)); dtype defaults to bf16. A
    dimension is an integer or a name (without the letter x) bound by ``--set NAME=INT``."""
    m = re.fullmatch(rf"\s*([A-Za-z_]\w*)\s*=\s*({_DIM}(?:\s*x\s*{_DIM})*)\s*(?::\s*(\w+))?\s*",
                     text or "")
    if not m:
        raise SpecError(f"--arg {text!r} must look like NAME=D0xD1[:dtype], e.g. lhsT=1024x4096:bf16 "
                        "or lhsT=KxM with --set K=1024 --set M=4096")
    shape = tuple(int(d) if d.strip().isdigit() else d.strip() for d in m.group(2).split("x"))
    if any(isinstance(d, int) and d <= 0 for d in shape):
        raise SpecError(f"--arg {text!r}: every dimension must be > 0")
    dt = m.group(3) or "bf16"
    if dt in DTYPE_OF:  # an NKI name: loopsim's when it round-trips, else kept for the kernel
        dt = DTYPE_OF[dt] if NKI_OF.get(DTYPE_OF[dt]) == dt else dt
    elif dt not in DTYPES:
        raise SpecError(f"--arg {text!r}: dtype {m.group(3)!r} is not known; known: {', '.join(DTYPES)}")
    return m.group(1), (shape, dt)


def parse_kwarg(text: str) -> tuple[str, object]:
    """``NAME=VALUE`` with VALUE a Python literal (ast.literal_eval: never executed)."""
    name, eq, value = (text or "").partition("=")
    name = name.strip()
    if not eq or not name.isidentifier():
        raise SpecError(f"--kwarg {text!r} must look like NAME=VALUE (a Python literal)")
    try:
        return name, ast.literal_eval(value.strip())
    except (ValueError, SyntaxError):
        raise SpecError(f"--kwarg {text!r}: {value.strip()!r} is not a Python literal (int, float, "
                        "string, tuple, ...)") from None


def parse_grid(text: str) -> tuple[int, ...]:
    """``G0[xG1...]`` -> the SPMD launch grid."""
    if not re.fullmatch(r"\s*\d+(\s*x\s*\d+)*\s*", text or "") or any(
            int(g) <= 0 for g in text.split("x")):
        raise SpecError(f"--grid {text!r} must look like G0[xG1...], positive integers, e.g. 4x2")
    return tuple(int(g) for g in text.split("x"))


def parse_options(args=(), kwargs=(), grid=None) -> dict:
    """The CLI's repeatable ``--arg``/``--kwarg`` strings and ``--grid`` -> load_kernel keywords."""
    a, k = {}, {}
    for text in args or ():
        n, v = parse_arg(text)
        if n in a:
            raise SpecError(f"--arg {n} is given twice")
        a[n] = v
    for text in kwargs or ():
        n, v = parse_kwarg(text)
        if n in k or n in a:
            raise SpecError(f"--kwarg {n} is given twice (or also as --arg)")
        k[n] = v
    return {"args": a, "kwargs": k, "grid": parse_grid(grid) if grid else ()}


def load_reference(ref: str, **options):
    """``load_kernel`` of a ``PATH.py::FUNCTION`` string."""
    path, func = split_reference(ref)
    return load_kernel(path, func, **options)


def load_kernel(path: str, func: str, *, args: Mapping[str, tuple] | None = None,
                kwargs: Mapping[str, object] | None = None, grid: tuple[int, ...] = (),
                sets: Mapping[str, int] | None = None):
    """Trace ``func`` of the Python file ``path`` and return its IR (ir.Kernel or Program).

    ``args``: HBM tensor arguments, name -> (shape, dtype), a dimension an int or a name;
    ``kwargs``: other arguments (Python values); ``grid``: the SPMD launch grid
    (``kernel[grid]``); ``sets``: integers overriding a keyword argument of the kernel or binding
    a dimension name of ``args`` (``--set``). EXECUTES the file.
    """
    from loopsim.frontends.nki.lower import lower

    args, kwargs, dims = _bind_sets(path, func, dict(args or {}), dict(kwargs or {}), dict(sets or {}))
    p = Path(path)
    if not p.is_file():
        raise SpecError(f"{path}: no such kernel file")
    src = str(p.resolve())
    rec = Recorder(src, func)
    shown = rec.shown = path
    try:
        with installed(rec):
            fn = _import(src, func, shown)
            call_args = _arguments(fn, args, kwargs, shown, func, rec)
            for axis, g in enumerate(grid):
                rec.grid_var(axis, int(g))
            rec.running = True
            try:
                fn(**call_args)
            finally:
                rec.running = False
            if rec.stack:
                raise TraceError(f"loop {rec.stack[-1].var.name} was never closed (break or return "
                                 "inside a loop): not modelled")
        params = tuple(dims.items()) + tuple(
            (k, v) for k, v in kwargs.items() if isinstance(v, int) and not isinstance(v, bool))
        return lower(rec, params)
    except TraceError as e:
        raise SpecError(_locate(e, rec, shown)) from None
    except SpecError:
        raise
    except RecursionError:
        raise SpecError(f"{shown}: kernel {func}: recursion too deep while tracing") from None
    except Exception as e:  # the kernel's own code failed under the shim: one line, no traceback
        raise SpecError(_locate(e, rec, shown, f"{type(e).__name__}: {e}")) from None


def _bind_sets(path, func, args, kwargs, sets):
    """Resolve named dimensions of ``args`` and apply ``sets``: a name of a dimension binds it,
    any other name overrides a keyword argument (checked against the signature later)."""
    named = {d for shape, _ in args.values() for d in shape if isinstance(d, str)}
    dims = {n: v for n, v in sets.items() if n in named}
    for n in named:
        if n not in dims and isinstance(kwargs.get(n), int):
            dims[n] = kwargs[n]
    missing = sorted(named - set(dims))
    if missing:
        raise SpecError(f"{path}::{func}: dimension {missing[0]} of an --arg has no value; give "
                        f"--set {missing[0]}=INT")
    for n, v in dims.items():
        if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
            raise SpecError(f"--set {n}={v!r}: a dimension must be a positive integer")
    kwargs.update({n: v for n, v in sets.items() if n not in named})
    args = {n: (tuple(dims[d] if isinstance(d, str) else d for d in shape), dt)
            for n, (shape, dt) in args.items()}
    return args, kwargs, dims


def _locate(e: BaseException, rec: Recorder, shown: str, msg: str | None = None) -> str:
    msg = msg or str(e)
    if msg.startswith(rec.path):
        return shown + msg[len(rec.path):]
    line = 0
    for fr in traceback.extract_tb(e.__traceback__):
        if fr.filename == rec.path:
            line = fr.lineno
    return f"{shown}:{line}: kernel {rec.func}: {msg}" if line else f"{shown}: kernel {rec.func}: {msg}"


def _import(src: str, func: str, shown: str):
    name = f"_loopsim_nki_kernel_{next(_counter)}"
    spec = importlib.util.spec_from_file_location(name, src)
    if spec is None or spec.loader is None:
        raise SpecError(f"{shown}: cannot be imported as Python")
    mod = importlib.util.module_from_spec(spec)
    mod.__dict__["range"] = py_range  # a plain range() loop in the kernel is a loop too
    sys.modules[name] = mod
    try:
        spec.loader.exec_module(mod)
    except SyntaxError as e:
        raise SpecError(f"{shown}:{e.lineno}: syntax error: {e.msg}") from None
    finally:
        sys.modules.pop(name, None)
    fn = getattr(mod, func, None)
    if fn is None:
        known = sorted(n for n, v in vars(mod).items() if isinstance(v, Jit) or inspect.isfunction(v)
                       and v.__module__ == name)
        raise SpecError(f"{shown}: no function {func}; functions here: {', '.join(known) or 'none'}")
    if isinstance(fn, Jit):
        fn = fn.fn
    if not callable(fn):
        raise SpecError(f"{shown}::{func} is not a function")
    return fn


def _arguments(fn, args, kwargs, shown, func, rec: Recorder) -> dict:
    sig = inspect.signature(fn)
    params = sig.parameters
    for n in list(args) + list(kwargs):
        if n not in params:
            raise SpecError(f"{shown}::{func} has no parameter {n}; parameters: {', '.join(params)}")
    out = {}
    for n, prm in params.items():
        if n in args:
            shape, dt = args[n]
            out[n] = rec.hbm(n, shape, dt)
        elif n in kwargs:
            out[n] = kwargs[n]
        elif prm.default is inspect.Parameter.empty:
            raise SpecError(f"{shown}::{func} needs parameter {n}: give --arg {n}=D0xD1[:dtype] "
                            f"for a tensor or --kwarg {n}=VALUE")
    return out
