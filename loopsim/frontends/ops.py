"""The ops of a spec: its ``[ops]`` table (:func:`parse_ops`) or, said once, by the statements of its
``[nest.KERNEL]`` tables (:func:`derive_ops`); either gives :class:`loopsim.ir.graph.OpNode` values
that :func:`loopsim.ir.graph.build` turns into a validated op graph.
"""

from __future__ import annotations

from typing import Mapping

from loopsim.base.errors import SpecError
from loopsim.base.vocab import OTHER_ENGINES
from loopsim.ir import ops as ops_mod
from loopsim.ir.graph import OpNode
from loopsim.ir.kernel import walk


def parse_ops(path: str, data: Mapping) -> tuple[tuple[OpNode, ...], tuple[str, ...]]:
    """``[ops]`` and ``[kernel].inputs`` of a spec -> (ops in file order, program input names)."""
    raw = data.get("ops")
    if not isinstance(raw, dict) or not raw:
        raise SpecError(f"{path}: [ops] must be a table of ops like up = {{ kind = \"matmul\", "
                        "in = [\"x\", \"W\"], out = \"h\" }")
    inputs = data.get("kernel", {}).get("inputs")
    if not isinstance(inputs, list) or not all(isinstance(t, str) for t in inputs):
        raise SpecError(f"{path}: kernel.inputs={inputs!r} must list the tensors no op produces "
                        "(a spec with [ops] reads them from HBM); or say each op once: drop "
                        "kernel.inputs, [ops] and [schedule], and the nest statements give them")
    twice = next((t for i, t in enumerate(inputs) if t in inputs[:i]), None)
    if twice is not None:
        raise SpecError(f"{path}: kernel.inputs lists {twice} twice")
    out = []
    for name, node in raw.items():
        where = f"{path}: ops.{name}"
        if not name.isidentifier():
            raise SpecError(f"{where}: op name must be a name (letters, digits, _)")
        if not isinstance(node, dict):
            raise SpecError(f"{where} must be a table like {{ kind = \"gelu\", in = [\"h\"], out = \"g\" }}")
        unknown = set(node) - {"kind", "in", "out", "engine", "about"}
        if unknown:
            raise SpecError(f"{where}: unknown key {sorted(unknown)[0]}; expected kind, in, out, engine, about")
        k = ops_mod.kind(node.get("kind"), f"{where}.kind")
        ins = node.get("in")
        if not isinstance(ins, list) or not ins or not all(isinstance(t, str) for t in ins):
            raise SpecError(f"{where}.in={ins!r} must be a list of tensor names")
        if not isinstance(node.get("out"), str):
            raise SpecError(f"{where}.out={node.get('out')!r} must be a tensor name")
        engine = _engine(where, k.name, node.get("engine", ""))
        names = tuple(t[:-2] if t.endswith(".T") else t for t in ins)
        out.append(OpNode(name, k.name, names, tuple(t.endswith(".T") for t in ins), node["out"], engine))
    return tuple(out), tuple(inputs)


def _engine(where: str, kind: str, engine: str) -> str:
    """An op's engine override, checked: "" (the kind's own engines) or one of ops.ENGINES."""
    if engine and (kind == "matmul" or engine not in OTHER_ENGINES):
        raise SpecError(f"{where}.engine={engine!r}: " + (
            "a matmul runs on the Tensor Engine" if kind == "matmul" else
            f"expected one of: {', '.join(OTHER_ENGINES)}"))
    return engine


def is_derived(data: Mapping) -> bool:
    """Whether a spec's ops are to be derived from its nest statements: it has kernels in
    ``[nest.KERNEL]`` tables and no ``[ops]`` entry that spells an op out (kind, in, out)."""
    nest, raw = data.get("nest"), data.get("ops", {})
    spelled = isinstance(raw, dict) and any(isinstance(v, dict) and {"in", "out"} & set(v)
                                            for v in raw.values())
    return (isinstance(nest, dict) and "body" not in nest and bool(nest)
            and all(isinstance(v, dict) for v in nest.values()) and not spelled)


def derive_ops(path: str, data: Mapping, params: Mapping[str, int]):
    """The op graph said once, by the nest statements: each ``matmul OUT += A @ B`` and each
    ``KIND OUT = IN, ...`` of ``[nest.KERNEL]`` is an op named after the tensor it makes; the
    program inputs are the tensors ops read that no op makes; the kernels run in the order of
    their ``[nest.KERNEL]`` tables (or of ``[schedule]``, a list of kernel names, if given).
    ``[ops]`` keeps only what a statement cannot say: ``OUT = { engine = "vector" }``.

    Returns (ops in statement order, program inputs, schedule [(kernel, [op names])])."""
    from loopsim.frontends import spec as spec_mod  # the nest parser, one folder up the flow
    from loopsim.ir.kernel import Matmul

    nests = data["nest"]
    order = list(nests)
    sched = data.get("schedule")
    if sched is not None:
        if not (isinstance(sched, dict) and list(sched) == ["kernels"]
                and isinstance(sched["kernels"], list) and sorted(sched["kernels"]) == sorted(order)):
            raise SpecError(f"{path}: [schedule]: with ops said by the nests, it is only "
                            f"kernels = [...], naming each [nest.KERNEL] once ({', '.join(order)}); "
                            "a schedule of op names needs the op table [ops] (NAME = { kind, in, out })")
        order = list(sched["kernels"])
    overrides = data.get("ops", {})
    if not isinstance(overrides, dict):
        raise SpecError(f"{path}: [ops] must be a table like g = {{ engine = \"vector\" }}")
    made: dict[str, tuple[str, str, tuple[str, ...], tuple[bool, ...]]] = {}  # out -> op
    schedule = []
    for kname in order:
        body = nests[kname].get("body")
        if not isinstance(body, str):
            raise SpecError(f"{path}: nest.{kname}.body: missing; each kernel needs its loop nest "
                            f"in [nest.{kname}] body = \'\'\'...\'\'\'")
        nodes = spec_mod.parse_nest(body, params, path)
        names = []
        for stmt, _ in ((n, l) for n, l in walk(nodes) if hasattr(n, "accesses")):
            if isinstance(stmt, Matmul):
                kind, ins, tr = "matmul", *_matmul_operands(path, kname, stmt)
            elif isinstance(stmt, ops_mod.OpStatement):
                kind, ins, tr = stmt.kind, tuple(a.tensor for a in stmt.inputs), (False,) * len(stmt.inputs)
            else:
                continue
            out = stmt.out.tensor
            op = (kname, kind, ins, tr)
            if out in made and made[out] != op:
                raise SpecError(f"{path}: nest.{kname}: line {stmt.line}: '{stmt}' makes {out}, which "
                                f"nest.{made[out][0]} makes with {made[out][1]} of {', '.join(made[out][2])}")
            if out not in made:
                made[out] = op
                names.append(out)
        if not names:
            raise SpecError(f"{path}: nest.{kname} has no matmul or op statement")
        schedule.append((kname, names))
    out = []
    for name, (_, kind, ins, tr) in made.items():
        extra = overrides.get(name, {})
        where = f"{path}: ops.{name}"
        if not isinstance(extra, dict) or set(extra) - {"engine", "about"}:
            raise SpecError(f"{where}: with ops said by the nests, [ops] keeps only engine and about "
                            f"(keyed by the tensor an op makes), e.g. {name} = {{ engine = \"vector\" }}")
        engine = _engine(where, kind, extra.get("engine", ""))
        out.append(OpNode(name, kind, ins, tr, name, engine))
    unknown = sorted(set(overrides) - set(made))
    if unknown:
        raise SpecError(f"{path}: ops.{unknown[0]}: no nest statement makes {unknown[0]}; [ops] entries "
                        f"are keyed by the tensor an op makes: {', '.join(made)}")
    inputs = tuple(dict.fromkeys(t for o in out for t in o.inputs if t not in made))
    return tuple(out), inputs, schedule


def _matmul_operands(path: str, kname: str, mm) -> tuple[tuple[str, str], tuple[bool, bool]]:
    """(left, right) operands of ``out[i, j] += A @ B`` in math orientation [M, K] @ [K, N]: the
    operand indexed by i is the left one, transposed when i is its second index; likewise j."""
    if len(mm.out.index) != 2 or any(len(a.index) != 2 for a in (mm.stationary, mm.moving)):
        raise SpecError(f"{path}: nest.{kname}: line {mm.line}: '{mm}': ops are derived from 2-D "
                        "matmuls only; spell this one out in [ops] (NAME = { kind, in, out })")
    i, j = (set(t) for t in mm.out.index)
    res = []
    for side in (i, j):
        hit = [(a, d) for a in (mm.stationary, mm.moving) for d in (0, 1) if side & set(a.index[d])]
        if len(hit) != 1:
            raise SpecError(f"{path}: nest.{kname}: line {mm.line}: '{mm}': cannot tell which operand "
                            f"gives output index {'+'.join(sorted(side)) or ':'}; spell this op out in [ops]")
        res.append(hit[0])
    (a, da), (b, db) = res
    if a is b:
        raise SpecError(f"{path}: nest.{kname}: line {mm.line}: '{mm}': both output indices come from "
                        f"{a.tensor}; spell this op out in [ops]")
    return (a.tensor, b.tensor), (da == 1, db == 0)
