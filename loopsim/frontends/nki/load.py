"""``PATH.py::FUNCTION`` -> loopsim IR, by running the kernel against the recording shim.

SAFETY: reading a kernel reference EXECUTES the Python file (as ``python FILE.py`` would, with
the NKI modules replaced by loopsim's shim); a TOML spec is never executed. Only point loopsim at
kernel files you would run yourself.

Imports go as Python's do: the kernel file's folder is on ``sys.path``; a file inside a package
(an ``__init__.py`` chain) is imported as a module of that package, so its relative imports work;
``paths`` (``--path DIR``) adds more roots. Every module found under those roots gets loopsim's
``range`` (a loop while the kernel runs). A module-level import of a package that is not
installed (torch, jax) gets a stub and a note; the kernel calling into it stops the trace.

Loops are traced symbolically; a loop whose index the kernel uses as a Python value is traced
again iteration by iteration (:class:`loopsim.frontends.nki.symbolic.NeedsConcrete`) and
re-rolled (:mod:`loopsim.frontends.nki.reroll`); when the kernel fails in a way a one-pass loop
can cause (a list indexed past its one element), every loop seen is traced concretely.
"""

from __future__ import annotations

import ast
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import inspect
import itertools
import math
import os
import re
import sys
import traceback
import types
from pathlib import Path
from typing import Mapping

from loopsim.base import limits
from loopsim.base.errors import SpecError
from loopsim.ir.kernel import DTYPES
from loopsim.frontends.nki import guard
from loopsim.frontends.nki import registers as registers_mod
from loopsim.frontends.nki.errors import TraceError
from loopsim.frontends.nki.record import Recorder, user_frame
from loopsim.frontends.nki.symbolic import NeedsConcrete
from loopsim.frontends.nki.views import DTYPE_OF, NKI_OF
from loopsim.frontends.nki.shim import Jit, config_note, installed, py_range

#: traces of one kernel at most (each retry makes more loops concrete)
MAX_TRACES = 48

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
        raise SpecError(f"--arg {limits.short_text(text)!r} must look like NAME=D0xD1[:dtype], e.g. lhsT=1024x4096:bf16 "
                        "or lhsT=KxM with --set K=1024 --set M=4096")
    shape = tuple(limits.flag_int(d.strip(), f"--arg {m.group(1)}", SpecError) if d.strip().isdigit()
                  else d.strip() for d in m.group(2).split("x"))
    if any(isinstance(d, int) and d <= 0 for d in shape):
        raise SpecError(f"--arg {text!r}: every dimension must be > 0")
    if len(shape) > limits.MAX_TENSOR_DIMS:
        raise SpecError(f"--arg {m.group(1)}: {len(shape)} dimensions; loopsim takes at most "
                        f"{limits.MAX_TENSOR_DIMS} (see docs/errors.md)")
    dt = m.group(3) or "bf16"
    if dt in DTYPE_OF:  # an NKI name: loopsim's when it round-trips, else kept for the kernel
        dt = DTYPE_OF[dt] if NKI_OF.get(DTYPE_OF[dt]) == dt else dt
    elif dt not in DTYPES:
        raise SpecError(f"--arg {text!r}: dtype {m.group(3)!r} is not known; known: {', '.join(DTYPES)}")
    return m.group(1), (shape, dt)


class DTypeName(str):
    """An NKI dtype named in ``--kwarg NAME=bfloat16`` (or ``nl.bfloat16``): the shim's dtype
    object of that name is passed to the kernel."""


def nki_dtype_names() -> set[str]:
    """The dtype names the shim's ``nki.language`` defines (and loopsim's dtype table)."""
    from loopsim.frontends.nki.shim import modules

    lang = modules()["nki.language"]
    return set(DTYPE_OF) | {n for n, v in vars(lang).items()
                            if not n.startswith("_") and "dtype" in type(v).__name__.lower()}


def parse_kwarg(text: str) -> tuple[str, object]:
    """``NAME=VALUE`` with VALUE a Python literal (ast.literal_eval: never executed) or an NKI
    dtype name, bare or as ``nl.NAME`` (``mx_dtype=float8_e4m3fn_x4``)."""
    name, eq, value = (text or "").partition("=")
    name, value = name.strip(), value.strip()
    if not eq or not name.isidentifier():
        raise SpecError(f"--kwarg {limits.short_text(text)!r} must look like NAME=VALUE (a Python literal)")
    try:
        return name, ast.literal_eval(value)
    except (ValueError, SyntaxError, RecursionError, MemoryError):
        pass
    bare = re.sub(r"^(nl|nki\.language|np|numpy)\.", "", value)
    if bare.isidentifier():
        if bare in nki_dtype_names():
            return name, DTypeName(bare)
        raise SpecError(f"--kwarg {name}={limits.short_text(value)!r} is neither a Python literal nor "
                        f"an NKI dtype name (known: {', '.join(sorted(nki_dtype_names()))})")
    raise SpecError(f"--kwarg {name}={limits.short_text(value)!r} is not a Python literal loopsim "
                    "takes (int, float, string, tuple, ...; see docs/errors.md) or an NKI dtype name")


def parse_grid(text: str) -> tuple[int, ...]:
    """``G0[xG1...]`` -> the SPMD launch grid."""
    if not re.fullmatch(r"\s*\d+(\s*x\s*\d+)*\s*", text or ""):
        raise SpecError(f"--grid {limits.short_text(text)!r} must look like G0[xG1...], positive "
                        "integers, e.g. 4x2")
    grid = tuple(limits.flag_int(g.strip(), "--grid", SpecError) for g in text.split("x"))
    if any(g <= 0 for g in grid) or len(grid) > limits.MAX_GRID_DIMS:
        raise SpecError(f"--grid {limits.short_text(text)!r} must look like G0[xG1...], 1 to "
                        f"{limits.MAX_GRID_DIMS} positive integers, e.g. 4x2")
    limits.check_int(math.prod(grid), f"--grid {limits.short_text(text)} (launches in all)",
                     SpecError, what="grid")
    return grid


def parse_options(args=(), kwargs=(), grid=None, paths=(), registers=()) -> dict:
    """The CLI's repeatable ``--arg``/``--kwarg``/``--path``/``--register-value`` strings and
    ``--grid`` -> load_kernel keywords."""
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
    roots = []
    for d in paths or ():
        if not Path(d).is_dir():
            raise SpecError(f"--path {d}: no such folder")
        roots.append(str(Path(d).resolve()))
    return {"args": a, "kwargs": k, "grid": parse_grid(grid) if grid else (), "paths": tuple(roots),
            "registers": registers_mod.parse(registers)}


def load_reference(ref: str, **options):
    """``load_kernel`` of a ``PATH.py::FUNCTION`` string."""
    path, func = split_reference(ref)
    return load_kernel(path, func, **options)


def load_kernel(path: str, func: str, *, args: Mapping[str, tuple] | None = None,
                kwargs: Mapping[str, object] | None = None, grid: tuple[int, ...] = (),
                sets: Mapping[str, int] | None = None, paths: tuple[str, ...] = (), registers=(),
                constants: Mapping[str, int] | None = None):
    """Trace ``func`` of the Python file ``path`` and return its IR (ir.Kernel or Program).

    ``args``: HBM tensor arguments, name -> (shape, dtype), a dimension an int or a name;
    ``kwargs``: other arguments (Python values; a :class:`DTypeName` becomes the shim's dtype);
    ``grid``: the SPMD launch grid (``kernel[grid]``); ``sets``: integers overriding a keyword
    argument of the kernel or binding a dimension name of ``args`` (``--set``); ``paths``: more
    import roots (``--path``); ``registers``: the values registers read at run time hold
    (:func:`loopsim.frontends.nki.registers.parse`, ``--register-value``); ``constants``:
    module-level names of the kernel file rebound after its import, before the kernel runs
    (:func:`loopsim.frontends.nki.ref.module_constants`). ``func`` may be an ``@nki.jit`` kernel
    or a plain launcher function that builds the inputs and calls one. EXECUTES the file.
    """
    return trace_kernel(path, func, args=args, kwargs=kwargs, grid=grid, sets=sets, paths=paths,
                        registers=registers, constants=constants)[0]


def trace_kernel(path: str, func: str, *, args=None, kwargs=None, grid=(), sets=None, paths=(),
                 registers=(), constants=None):
    """:func:`load_kernel`, also returning the last :class:`Recorder` (its ``notes``, ``sites``
    and ``concrete`` loops) for reports such as the corpus benchmark."""
    from loopsim.frontends.nki.lower import lower

    args, kwargs, dims = _bind_sets(path, func, dict(args or {}), dict(kwargs or {}), dict(sets or {}))
    p = Path(path)
    if not p.is_file():
        raise SpecError(f"{path}: no such kernel file")
    src = str(p.resolve())
    rec = Recorder(src, func)
    rec.shown = path
    stated = registers_mod.Values(registers)
    concrete: set = set()
    try:
        with installed(rec), guard.running(path, func), _Imports(src, paths, rec) as imports:
            fn = imports.function(func, path)
            for n, v in (constants or {}).items():  # read by the kernel's body when it runs
                imports.module.__dict__[n] = v
            for _ in range(MAX_TRACES):
                rec = Recorder(src, func, concrete)
                rec.shown, rec.notes = path, list(imports.notes)
                rec.registers = stated
                try:
                    with _active(rec):
                        _run(fn, args, kwargs, grid, rec, path, func)
                except NeedsConcrete as e:
                    if e.sites <= concrete:
                        raise TraceError(str(e)) from None
                    concrete |= e.sites
                    continue
                except SpecError:
                    raise
                except RecursionError:
                    raise
                except Exception:
                    # a kernel failing with a loop run once (a list of one tile indexed by k):
                    # first the loops that had ended where it failed, then every loop seen
                    open_ = {f.var.site for f in rec.stack}
                    ended = rec.sites - open_ - concrete
                    if ended:
                        concrete |= ended
                        continue
                    if rec.sites - concrete:
                        concrete |= rec.sites
                        continue
                    raise
                break
            else:
                raise TraceError(f"no trace after {MAX_TRACES} tries ({len(concrete)} loops concrete)")
        params = tuple(dims.items()) + tuple(
            (k, v) for k, v in kwargs.items() if isinstance(v, int) and not isinstance(v, bool)) + \
            tuple((constants or {}).items())
        stated.check_used(path)
        ir_ = lower(rec, params)
        rec.notes[:] = list(dict.fromkeys(rec.notes))
        return ir_, rec
    except TraceError as e:
        raise SpecError(_locate(e, rec, path)) from None
    except SpecError:
        raise
    except RecursionError:
        raise SpecError(f"{path}: kernel {func}: recursion too deep while tracing") from None
    except Exception as e:  # the kernel's own code failed under the shim: one line, no traceback
        raise SpecError(_locate(e, rec, path, f"{type(e).__name__}: {e}")) from None


class _active:
    """``rec`` the recorder the shim's calls go to, for one trace."""

    def __init__(self, rec: Recorder):
        self.rec = rec

    def __enter__(self):
        from loopsim.frontends.nki import shim

        shim._active.append(self.rec)
        return self.rec

    def __exit__(self, *exc):
        from loopsim.frontends.nki import shim

        shim._active.remove(self.rec)
        return False


def _run(fn, args, kwargs, grid, rec: Recorder, shown: str, func: str) -> None:
    """One trace of ``fn``: bind its arguments, open the grid, call it, check the loops closed."""
    from loopsim.frontends.nki.record import _ConcreteIter

    call_args = _arguments(fn, args, kwargs, shown, func, rec)
    for axis, g in enumerate(grid):
        rec.grid_var(axis, int(g))
    by_program = any(v.site in rec.concrete for v in rec.grid)

    def programs(axis: int) -> None:  # the grid run program by program, re-rolled like loops
        if axis == len(rec.grid):
            invoke(fn, call_args, shown, func)
            return
        for pid in _ConcreteIter(rec, rec.grid[axis], 0, 1):
            rec.pids[axis] = pid
            programs(axis + 1)

    rec.running = True
    try:
        if by_program:
            rec.pids = [0] * len(rec.grid)
            programs(0)
        else:
            invoke(fn, call_args, shown, func)
    finally:
        rec.running = False
    from loopsim.frontends.nki.record import _close_above

    if rec.pending is not None:
        raise rec.pending
    _close_above(rec, None)  # loops the kernel returned from: closed as Python left them


def invoke(fn, call_args: dict, shown: str, func: str):
    """The one place the user's kernel (or launcher) is called, inside the guard (its prints to
    stderr, its exit an error of the kernel: :mod:`.guard`)."""
    return guard.invoke(fn, call_args, shown, func)


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


def _shown_file(filename: str, rec: Recorder, shown: str) -> str:
    if filename == rec.path:
        return shown
    try:
        rel = os.path.relpath(filename)
        return rel if not rel.startswith("..") else filename
    except ValueError:
        return filename


def _locate(e: BaseException, rec: Recorder, shown: str, msg: str | None = None) -> str:
    """One line: the user's file and line where ``e`` happened (the innermost frame of the
    kernel file or a helper module it imports), the kernel, the message."""
    msg = msg or str(e)
    if msg.startswith(rec.path):
        return shown + msg[len(rec.path):]
    if msg.startswith(f"{shown}:"):  # already located (the lowering names its statement's line)
        return msg
    where = None
    if isinstance(e, SyntaxError) and e.filename:
        where = (e.filename, e.lineno or 0)
    else:
        for fr in traceback.extract_tb(e.__traceback__):
            f = os.path.realpath(fr.filename)  # relative under python -m; through links
            if not f.startswith(_PKG) and not f.startswith("<") and f != __file__ and \
                    not f.startswith(_STDLIB):
                where = (f, fr.lineno)
    if where is None:
        return f"{shown}: kernel {rec.func}: {msg}"
    return f"{_shown_file(where[0], rec, shown)}:{where[1]}: kernel {rec.func}: {msg}"


_PKG = str(Path(__file__).resolve().parents[2]) + os.sep
_STDLIB = os.path.dirname(os.__file__) + os.sep
#: where installed packages live: never a user module, even under a user root
_INSTALLED = tuple(dict.fromkeys(
    str(Path(p).resolve()) + os.sep for p in (*__import__("site").getsitepackages(),
                                              __import__("sysconfig").get_paths()["purelib"],
                                              __import__("sysconfig").get_paths()["stdlib"]))) + (_PKG,)


# ---------------------------------------------------------------------------------------------
# imports as Python does them


def package_of(src: str) -> tuple[str, str]:
    """(import root, dotted module name) of a file: the folder above its package and the dotted
    path below it ('' when the file is in no package). The package is found as Python resolves
    it: its ``__init__.py`` chain, and, for a file whose relative imports climb N levels
    (``from ..util import x``: 2), at least N folders, a folder without ``__init__.py`` being a
    namespace package (PEP 420) of the regular one above it."""
    p = Path(src)
    depth = _relative_depth(p)
    parts = []
    d = p.parent
    while ((d / "__init__.py").is_file() or len(parts) < depth) and d.parent != d:
        parts.insert(0, d.name)
        d = d.parent
    if not parts or not all(x.isidentifier() for x in parts) or not p.stem.isidentifier():
        return str(p.parent), ""
    return str(d), ".".join(parts + [p.stem])


def _relative_depth(p: Path) -> int:
    """The most levels a relative import of the file climbs (``from ..a import b``: 2; 0 when it
    has none or does not parse)."""
    try:
        tree = ast.parse(p.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return 0
    return max((n.level for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)), default=0)


class _RangeLoader(importlib.abc.Loader):
    """Runs a user module with loopsim's ``range`` in its globals."""

    def __init__(self, inner):
        self.inner = inner

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        module.__dict__["range"] = py_range
        self.inner.exec_module(module)

    def __getattr__(self, name):
        return getattr(self.inner, name)


class _UserFinder(importlib.abc.MetaPathFinder):
    """Finds modules under the user's roots first, loading them with :class:`_RangeLoader`."""

    def __init__(self, roots):
        self.roots = tuple(r.rstrip(os.sep) + os.sep for r in roots)

    def mine(self, origin) -> bool:
        o = str(origin or "")
        return o.startswith(self.roots) and not o.startswith(_INSTALLED)

    def find_spec(self, name, path=None, target=None):
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or not self.mine(spec.origin) or spec.loader is None:
            return None
        spec.loader = _RangeLoader(spec.loader)
        return spec


class _Stub:
    """Stands for a name from a package that is not installed: any use before the kernel runs
    gives another stub (type hints, decorators, base classes); calling it inside the kernel
    stops the trace naming it."""

    def __init__(self, name: str):
        self._name = name

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        return _Stub(f"{self._name}.{attr}")

    def __call__(self, *a, **k):
        from loopsim.frontends.nki import shim

        if shim._active and shim._active[-1].running:
            raise TraceError(f"{self._name} is not installed here (loopsim stubbed it): the kernel "
                             "calls it; a kernel traced by loopsim may import it but not call it")
        return _Stub(f"{self._name}()")

    def __mro_entries__(self, bases):
        return (object,)

    def __getitem__(self, _):
        return self

    def __or__(self, _):
        return self

    __ror__ = __or__

    def __repr__(self):
        return f"<stub {self._name}>"


class _StubModule(types.ModuleType):
    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        return _Stub(f"{self.__name__}.{attr}")


def _probing() -> bool:
    """Whether the import system was entered through ``importlib.util.find_spec`` (code asking
    whether an optional package is there, e.g. ``find_spec('pkg') is not None``), not an import."""
    f = sys._getframe(2)
    for _ in range(8):
        if f is None:
            return False
        if f.f_code is importlib.util.find_spec.__code__:
            return True
        f = f.f_back
    return False


class _StubFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Last on ``sys.meta_path``: a module nobody found, of a package that is not installed (or a
    submodule of the NKI API the shim does not have), becomes a stub module, with a note."""

    def __init__(self, notes: list, user: _UserFinder):
        self.notes, self.user = notes, user

    def find_spec(self, name, path=None, target=None):
        if _probing():
            return None  # importlib.util.find_spec asks whether it is there: it is not
        top = name.split(".")[0]
        have = sys.modules.get(top)
        if have is not None and not isinstance(have, _StubModule) and \
                not (getattr(have, "__doc__", "") or "").startswith("loopsim's recording stand-in"):
            return None  # a real package without that submodule: a real error
        if have is None and "." in name:
            return None
        if have is not None and not isinstance(have, _StubModule):
            note = f"{name} is not part of loopsim's NKI shim: stubbed"
        else:
            note = f"{top} is not installed: stubbed (the kernel may import it, not call it)"
        if note not in self.notes:
            self.notes.append(note)
        return importlib.machinery.ModuleSpec(name, self, is_package=True)

    def create_module(self, spec):
        m = _StubModule(spec.name, f"loopsim stub for {spec.name} (not installed)")
        m.__path__ = []
        return m

    def exec_module(self, module):
        pass


class _Imports:
    """The import state of one traced kernel: ``sys.path`` with the kernel's roots, the user and
    stub finders; on exit every module imported from the roots (and every stub) is dropped and
    ``sys.path``/``sys.meta_path`` are restored."""

    def __init__(self, src: str, paths, rec: Recorder):
        self.src, self.rec = src, rec
        root, self.modname = package_of(src)
        here = str(Path(src).parent)
        self.roots = list(dict.fromkeys([here, root, *paths]))
        self.notes: list[str] = []

    def __enter__(self):
        self.saved_path, self.saved_meta = list(sys.path), list(sys.meta_path)
        self.before = set(sys.modules)
        sys.path[:0] = [r for r in self.roots if r not in sys.path[:len(self.roots)]]
        self.user = _UserFinder(self.roots)
        sys.meta_path.insert(0, self.user)
        sys.meta_path.append(_StubFinder(self.notes, self.user))
        importlib.invalidate_caches()
        return self

    def __exit__(self, *exc):
        sys.path[:], sys.meta_path[:] = self.saved_path, self.saved_meta
        # chosen before any is dropped: a namespace package's path is recomputed from its parent
        drop = [name for name in set(sys.modules) - self.before if self._mine(name, sys.modules.get(name))]
        for name in drop:
            sys.modules.pop(name, None)
        return False

    def _mine(self, name: str, m) -> bool:
        """Whether module ``m`` came from the kernel's roots (or is a stub): a file under them, or
        a namespace package (no file) whose folders are under them."""
        if isinstance(m, _StubModule) or self.user.mine(getattr(m, "__file__", None)) or \
                name.startswith("_loopsim_nki_kernel_"):
            return True
        try:
            return any(self.user.mine(d) for d in list(getattr(m, "__path__", None) or ()))
        except Exception:  # a namespace path whose parent is gone: not one to keep either
            return True

    def function(self, func: str, shown: str):
        """The kernel module imported (as its package's module when it is in one) and ``func``."""
        try:
            if self.modname:
                name = self.modname
                mod = importlib.import_module(name)
            else:
                name = f"_loopsim_nki_kernel_{next(_counter)}"
                spec = importlib.util.spec_from_file_location(name, self.src)
                if spec is None or spec.loader is None:
                    raise SpecError(f"{shown}: cannot be imported as Python")
                spec.loader = _RangeLoader(spec.loader)
                mod = importlib.util.module_from_spec(spec)
                sys.modules[name] = mod
                spec.loader.exec_module(mod)
        except SyntaxError as e:
            f = _shown_file(e.filename or self.src, self.rec, shown)
            raise SpecError(f"{f}:{e.lineno}: syntax error: {e.msg}") from None
        except SpecError:
            raise
        except Exception as e:
            at = _module_line(e, self.src)
            if self.modname or at is None or getattr(mod, func, None) is None:
                raise SpecError(_locate(e, self.rec, shown, f"importing the kernel file: "
                                        f"{type(e).__name__}: {e}")) from None
            # the file's own top-level code after the kernel failed (a test run at import,
            # outside ``if __name__ == "__main__"``): the definitions made before it are used
            self.notes.append(f"{shown}:{at}: importing the kernel file stopped at its top-level "
                              f"code ({type(e).__name__}: {limits.short_text(str(e))}); the "
                              f"definitions above that line are traced, the code from it on is not run")
        self.module = mod
        fn = getattr(mod, func, None)
        if fn is None:
            known = sorted(n for n, v in vars(mod).items() if isinstance(v, Jit) or inspect.isfunction(v)
                           and v.__module__ == name)
            raise SpecError(f"{shown}: no function {func}; functions here: {', '.join(known) or 'none'}")
        if isinstance(fn, Jit):
            note = config_note(fn)
            if note is not None:
                self.notes.append(f"{shown}: {func}: {note}")
            fn = fn.fn
        if not callable(fn):
            raise SpecError(f"{shown}::{func} is not a function")
        return fn


def _module_line(e: BaseException, src: str) -> int | None:
    """The line of ``src``'s top-level code (not a function of it) where ``e`` was raised from,
    or None when it came from elsewhere."""
    tb, line = e.__traceback__, None
    while tb is not None:
        code = tb.tb_frame.f_code
        if code.co_name == "<module>" and os.path.realpath(code.co_filename) == os.path.realpath(src):
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


def _arguments(fn, args, kwargs, shown, func, rec: Recorder) -> dict:
    sig = inspect.signature(fn)
    params = sig.parameters
    for n in list(args) + list(kwargs):
        if n not in params:
            raise SpecError(f"{shown}::{func} has no parameter {n}; parameters: {', '.join(params)}")
    lang = sys.modules.get("nki.language")
    out = {}
    for n, prm in params.items():
        if n in args:
            shape, dt = args[n]
            out[n] = rec.hbm(n, shape, dt)
        elif n in kwargs:
            v = kwargs[n]
            out[n] = getattr(lang, v) if isinstance(v, DTypeName) and lang is not None else v
        elif prm.kind in (prm.VAR_POSITIONAL, prm.VAR_KEYWORD):
            continue
        elif prm.default is inspect.Parameter.empty:
            raise SpecError(f"{shown}::{func} needs parameter {n}: give --arg {n}=D0xD1[:dtype] "
                            f"for a tensor or --kwarg {n}=VALUE")
    return out
