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
    fn = next((n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
               and n.name == func), None)
    if fn is not None:
        a = fn.args
        for arg, default in zip(a.args[len(a.args) - len(a.defaults):] + a.kwonlyargs,
                                list(a.defaults) + list(a.kw_defaults)):
            if isinstance(default, ast.Constant) and type(default.value) is int:
                params[arg.arg] = default.value
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
            "keywords": tuple(n for n in params if n not in named)}
    return SpecFile(ref, data, "", tracer=trace)


def is_kernel_file(sf: SpecFile) -> bool:
    """Whether ``sf`` stands for a kernel file (made by :func:`spec_file`)."""
    return sf.tracer is trace


def trace(sf: SpecFile, params: Mapping[str, int]):
    """Trace the kernel with its parameters bound: an ir.Kernel or a one-kernel Program.
    EXECUTES the kernel file."""
    from loopsim.frontends.nki.load import load_kernel

    from loopsim.frontends.spec import check_matmul_dtypes

    o = sf.data["nki"]
    traced = load_kernel(o["path"], o["func"], args=o["args"], kwargs=o["kwargs"], grid=o["grid"],
                         sets=dict(params), paths=tuple(o.get("paths", ())),
                         registers=tuple(o.get("registers", ())))
    for k in ([traced] if hasattr(traced, "body") else [s.kernel for s in traced.stages]):
        check_matmul_dtypes(k.tensors, k.body, lambda name, stmt, dt: (
            f"{o['path']}:{stmt.line}: kernel {o['func']}: --arg {name}=...:{dt}: the Tensor "
            f"Engine's matmul takes no {dt} operands; use fp8, bf16, fp16 or fp32"))
    return traced
