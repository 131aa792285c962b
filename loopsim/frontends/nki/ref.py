"""A kernel reference ``PATH.py::FUNCTION`` standing where a spec file stands.

:func:`spec_file` reads the kernel's parameters WITHOUT executing anything (the file is parsed,
never run): the integer defaults of the function's keyword parameters, the integer ``--kwarg``
values, and the dimension names of ``--arg`` shapes. They are the reference's parameters, so
``--set``, ``--vary`` and ``--dim`` apply to a traced kernel as to a spec. :func:`trace` then
EXECUTES the file against the shim with the bound parameters (:func:`loopsim.frontends.nki.load.load_kernel`).
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Mapping

from loopsim.base.errors import SpecError
from loopsim.frontends.spec import SpecFile
from loopsim.frontends.nki.load import is_reference, split_reference

__all__ = ["is_reference", "spec_file", "is_kernel_file", "trace"]


def spec_file(ref: str, options: Mapping | None, known: Mapping[str, int] | None = None) -> SpecFile:
    """The reference as a :class:`loopsim.frontends.spec.SpecFile` whose ``params`` can be bound with
    :func:`loopsim.frontends.spec.bind_params`. ``options``: ``args``/``kwargs``/``grid`` as
    :func:`loopsim.frontends.nki.load.parse_options` returns them; ``known``: values for dimension names."""
    path, func = split_reference(ref)
    opts = {"args": {}, "kwargs": {}, "grid": (), "paths": (), "registers": (), **dict(options or {})}
    p = Path(path)
    if not p.is_file():
        raise SpecError(f"{path}: no such kernel file")
    try:
        tree = ast.parse(p.read_text(), filename=path)
    except SyntaxError as e:
        raise SpecError(f"{path}:{e.lineno}: syntax error: {e.msg}") from None
    except (OSError, UnicodeDecodeError) as e:
        raise SpecError(f"{path}: cannot be read: {e}") from None
    params: dict[str, int] = {}
    constants = module_constants(tree)
    fn = next((n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
               and n.name == func), None)
    if fn is not None:
        a = fn.args
        for arg, default in zip(a.args[len(a.args) - len(a.defaults):] + a.kwonlyargs,
                                list(a.defaults) + list(a.kw_defaults)):
            if isinstance(default, ast.Constant) and type(default.value) is int:
                params[arg.arg] = default.value
    taken = set(params) | ({a.arg for a in fn.args.args + fn.args.kwonlyargs} if fn else set())
    constants = {n: v for n, v in constants.items() if n not in taken}
    for n, v in constants.items():  # after the keyword parameters: a parameter's name wins
        params.setdefault(n, v)
    for n, v in opts["kwargs"].items():  # a value given is passed as given, never the default
        if type(v) is int:
            params[n] = v
        else:
            params.pop(n, None)
    named = sorted({d for shape, _ in opts["args"].values() for d in shape if isinstance(d, str)})
    for n in named:
        if n in (known or {}):
            params[n] = known[n]
        elif n not in params:
            raise SpecError(f"{ref}: dimension {n} of an --arg has no value; give --set {n}=INT")
    data = {"kernel": {"name": func, "about": f"traced from {ref}"}, "params": params,
            "nki": {"path": path, "func": func, **opts},
            # the keyword integers (not --arg dimensions): 0 or negative is a kernel's business
            "keywords": tuple(n for n in params if n not in named),
            # module-level integer constants: parameters --set and --space may name (a search
            # varies them only when --space names them)
            "constants": tuple(n for n in constants if n in params and n not in named)}
    return SpecFile(ref, data, "", tracer=trace)


def module_constants(tree: ast.Module) -> dict[str, int]:
    """The kernel file's module-level integer constants (``TILE_K = 128``), in file order: a name
    bound once at the top level to an integer literal that no other top-level statement reads
    (a constant another module-level name is computed from would leave that name stale when the
    constant is rebound before the kernel runs, so it is not a parameter)."""
    found: dict[str, int] = {}
    bound: dict[str, int] = {}
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else \
            [node.target] if isinstance(node, (ast.AnnAssign, ast.AugAssign)) else []
        for t in targets:
            for n in ast.walk(t):
                if isinstance(n, ast.Name):
                    bound[n.id] = bound.get(n.id, 0) + 1
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and len(targets) == 1 and \
                isinstance(targets[0], ast.Name) and isinstance(node.value, ast.Constant) and \
                type(node.value.value) is int:
            found[targets[0].id] = node.value.value
    read = {n.id for node in tree.body if not isinstance(node, (ast.FunctionDef,
                                                                ast.AsyncFunctionDef, ast.ClassDef))
            for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    # default values and decorators of functions are evaluated at import, too
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            heads = list(node.decorator_list)
            if not isinstance(node, ast.ClassDef):
                heads += list(node.args.defaults) + [d for d in node.args.kw_defaults if d]
            read |= {n.id for h in heads for n in ast.walk(h) if isinstance(n, ast.Name)}
    return {n: v for n, v in found.items() if bound[n] == 1 and n not in read}


def is_kernel_file(sf: SpecFile) -> bool:
    """Whether ``sf`` stands for a kernel file (made by :func:`spec_file`)."""
    return sf.tracer is trace


def trace(sf: SpecFile, params: Mapping[str, int]):
    """Trace the kernel with its parameters bound: an ir.Kernel or a one-kernel Program.
    EXECUTES the kernel file."""
    from loopsim.frontends.nki.load import load_kernel

    from loopsim.frontends.spec import check_matmul_dtypes

    o = sf.data["nki"]
    names = set(sf.data.get("constants", ()))
    traced = load_kernel(o["path"], o["func"], args=o["args"], kwargs=o["kwargs"], grid=o["grid"],
                         sets={n: v for n, v in params.items() if n not in names},
                         paths=tuple(o.get("paths", ())),
                         registers=tuple(o.get("registers", ())),
                         constants={n: v for n, v in params.items() if n in names})
    for k in ([traced] if hasattr(traced, "body") else [s.kernel for s in traced.stages]):
        check_matmul_dtypes(k.tensors, k.body, lambda name, stmt, dt: (
            f"{o['path']}:{stmt.line}: kernel {o['func']}: --arg {name}=...:{dt}: the Tensor "
            f"Engine's matmul takes no {dt} operands; use fp8, bf16, fp16 or fp32"))
    return traced
