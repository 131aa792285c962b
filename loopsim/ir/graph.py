"""Op graphs: the ``[ops]`` table of a spec as an :class:`OpGraph`, validated when built (networkx
is imported only to draw one).

Nodes are ops (attribute ``op``: an :class:`OpNode`) plus one node per program input
(``kind="input"``) and per program output (``kind="output"``); an edge carries the tensor that
flows along it (attribute ``tensor``). A spec names its ops and the tensors between them::

    [kernel]
    inputs = ["x", "W_up", "W_down"]     # tensors no op produces

    [ops]
    up   = { kind = "matmul", in = ["x", "W_up"], out = "h" }
    act  = { kind = "gelu",   in = ["h"],         out = "g" }
    down = { kind = "matmul", in = ["g", "W_down"], out = "y" }

Shapes are logical (math orientation, whatever the SBUF layout): a matmul computes
[M, K] @ [K, N]; an input written ``"k.T"`` is used transposed. Validation rejects a cycle, a tensor
produced twice, a tensor read with no producer that is not a listed input, an op output nobody reads
that is not an output, a listed input no op reads, and a consumer whose expected shape differs from
what its producer makes — each error names both ends.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from loopsim.ir import ops as ops_mod
from loopsim.base.errors import SpecError
from loopsim.ir.kernel import Tensor, walk


@dataclass(frozen=True, slots=True)
class OpNode:
    """One op of a program: ``out = kind(inputs)``; ``transposed[i]`` marks input i used as ``.T``."""

    name: str
    kind: str
    inputs: tuple[str, ...]
    transposed: tuple[bool, ...]
    out: str
    engine: str  # the engine override, or "" for the kind's own engines

    @property
    def op_kind(self) -> ops_mod.OpKind:
        return ops_mod.KINDS[self.kind]

    def work(self) -> tuple[tuple[str, int], ...]:
        """(engine, passes per element) pairs; an override moves every pass to one engine."""
        w = self.op_kind.work
        if self.engine:
            return ((self.engine, sum(p for _, p in w)),)
        return w


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
    if engine and (kind == "matmul" or engine not in ops_mod.ENGINES[1:]):
        raise SpecError(f"{where}.engine={engine!r}: " + (
            "a matmul runs on the Tensor Engine" if kind == "matmul" else
            f"expected one of: {', '.join(ops_mod.ENGINES[1:])}"))
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
    from loopsim.frontends import spec as spec_mod
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


@dataclass(frozen=True, slots=True)
class OpGraph:
    """The validated op graph, held without networkx (which only drawing needs).

    ``nodes``: (name, kind, payload) in insertion order; kind is "input", "op" or "output",
    payload the :class:`OpNode` of an op, else the tensor's name. ``edges``: (source, target,
    tensor). Input nodes are named ``in:T``, output nodes ``out:T``."""

    nodes: tuple[tuple[str, str, object], ...]
    edges: tuple[tuple[str, str, str], ...]

    def order(self) -> list[str]:
        """Node names in a topological order (raises graphlib.CycleError on a cycle)."""
        from graphlib import TopologicalSorter

        ts = TopologicalSorter({n: () for n, _, _ in self.nodes})
        for u, v, _ in self.edges:
            ts.add(v, u)
        return list(ts.static_order())

    def to_networkx(self):
        """The same graph as a networkx DiGraph (node attributes kind and op or tensor, edge
        attribute tensor), for drawing."""
        import networkx as nx

        g = nx.DiGraph()
        for name, kind, payload in self.nodes:
            g.add_node(name, kind=kind, **({"op": payload} if kind == "op" else {"tensor": payload}))
        for u, v, t in self.edges:
            g.add_edge(u, v, tensor=t)
        return g


def build(path: str, op_nodes: tuple[OpNode, ...], inputs: tuple[str, ...],
          tensors: Mapping[str, Tensor]) -> OpGraph:
    """The validated op graph. ``tensors``: the spec's tensors by name."""
    from graphlib import CycleError

    def declared(t: str, where: str) -> Tensor:
        if t not in tensors:
            raise SpecError(f"{path}: {where} names tensor {t}, which is not declared; "
                            f"declared: {', '.join(tensors)}")
        return tensors[t]

    producer: dict[str, str] = {}
    for op in op_nodes:
        declared(op.out, f"ops.{op.name}.out")
        if op.out in producer:
            raise SpecError(f"{path}: tensor {op.out} is produced by both ops.{producer[op.out]} and "
                            f"ops.{op.name}")
        if op.out in inputs:
            raise SpecError(f"{path}: ops.{op.name} produces {op.out}, which kernel.inputs lists as "
                            "an input")
        producer[op.out] = op.name
    for t in inputs:
        declared(t, "kernel.inputs")
    nodes = [(f"in:{t}", "input", t) for t in inputs] + [(op.name, "op", op) for op in op_nodes]
    edges = []
    consumed = set()
    for op in op_nodes:
        for t in op.inputs:
            declared(t, f"ops.{op.name}.in")
            if t in producer:
                src = producer[t]
            elif t in inputs:
                src = f"in:{t}"
            else:
                raise SpecError(f"{path}: ops.{op.name} reads {t}, but no op produces {t} and it is "
                                "not in kernel.inputs")
            edges.append((src, op.name, t))
            consumed.add(t)
    for op in op_nodes:
        if tensors[op.out].output:
            nodes.append((f"out:{op.out}", "output", op.out))
            edges.append((op.name, f"out:{op.out}", op.out))
        elif op.out not in consumed:
            raise SpecError(f"{path}: ops.{op.name} produces {op.out}, which no op reads and which "
                            f"is not an output (tensors.{op.out}.output = true)")
    for t in tensors.values():
        if t.output and t.name not in producer:
            raise SpecError(f"{path}: tensors.{t.name} is an output but no op produces it")
    g = OpGraph(tuple(nodes), tuple(dict.fromkeys(edges)))
    try:
        order = g.order()
    except CycleError as e:  # e.args[1]: the cycle's nodes, the first repeated at the end
        chain = " -> ".join(f"ops.{n}" for n in e.args[1])
        raise SpecError(f"{path}: the ops form a cycle: {chain}") from None
    for t in inputs:
        if t not in consumed:
            raise SpecError(f"{path}: kernel.inputs lists {t}, which no op reads")
    _check_shapes(path, g, order, tensors, producer)
    return g


def _check_shapes(path: str, g: OpGraph, order: list[str], tensors: Mapping[str, Tensor],
                  producer: Mapping[str, str]) -> None:
    """Each op's output shape as its inputs imply, checked against the declared output, in
    topological order so that a mismatch is reported at the first op that sees it."""
    ops = {name: op for name, kind, op in g.nodes if kind == "op"}
    for name in order:
        if name not in ops:
            continue
        op: OpNode = ops[name]
        shapes = [tuple(reversed(tensors[t].shape)) if tr else tensors[t].shape
                  for t, tr in zip(op.inputs, op.transposed)]
        shown = [f"{t}.T" if tr else t for t, tr in zip(op.inputs, op.transposed)]
        try:
            want = ops_mod.output_shape(op.op_kind, shapes, shown, f"ops.{name}")
        except SpecError as e:
            ends = [f"{t} from ops.{producer[t]}" for t in op.inputs if t in producer]
            extra = f" (inputs: {', '.join(ends)})" if ends else ""
            raise SpecError(f"{path}: {e}{extra}") from None
        got = tensors[op.out].shape
        if want != got:
            users = sorted(v for u, v, t in g.edges if u == name and t == op.out)
            to = ", ".join(f"ops.{u}" if not u.startswith("out:") else "the output" for u in users)
            raise SpecError(f"{path}: ops.{name} ({op.kind}) makes {op.out} of shape {list(want)} "
                            f"from {', '.join(shown)}, but tensors.{op.out} is declared "
                            f"{list(got)} (read by {to})")


def draw(g, labels: Mapping[str, str], title: str, ax=None):
    """Draw the op graph (an :class:`OpGraph`) left to right; ``labels`` maps a tensor name to
    its edge label. Returns the Axes. networkx and matplotlib are imported here, not at
    ``import loopsim``."""
    import networkx as nx
    from matplotlib.figure import Figure

    g = g.to_networkx()

    if ax is None:  # a bare Figure: no pyplot state, no backend switch
        ax = Figure(figsize=(max(6.0, 2.2 * g.number_of_nodes()), 3.8)).subplots()
    layers: dict[str, int] = {}  # ops by depth; an input one column before its first reader
    for n in nx.topological_sort(g):
        if g.nodes[n]["kind"] != "input":
            layers[n] = 1 + max((layers[p] for p in g.predecessors(n) if p in layers), default=0)
    for n, d in g.nodes(data=True):
        if d["kind"] == "input":
            layers[n] = min(layers[c] for c in g.successors(n)) - 1
    nx.set_node_attributes(g, layers, "layer")
    pos = nx.multipartite_layout(g, subset_key="layer")
    colors = {"input": "#cfe2f3", "output": "#d9ead3", "op": "#fff2cc"}
    node_labels = {}
    for n, d in g.nodes(data=True):
        if d["kind"] == "op":
            op = d["op"]
            node_labels[n] = f"{n}\n{op.kind}\n[{op.engine or op.op_kind.engine}]"
        else:
            node_labels[n] = d["tensor"]
    nx.draw_networkx_nodes(g, pos, ax=ax, node_size=2600, node_shape="s",
                           node_color=[colors[d["kind"]] for _, d in g.nodes(data=True)],
                           edgecolors="#555555")
    nx.draw_networkx_labels(g, pos, labels=node_labels, ax=ax, font_size=8)
    nx.draw_networkx_edges(g, pos, ax=ax, arrows=True, arrowsize=14, node_size=2600, node_shape="s")
    nx.draw_networkx_edge_labels(g, pos, ax=ax, font_size=7,
                                 edge_labels={(u, v): labels.get(d["tensor"], d["tensor"])
                                              for u, v, d in g.edges(data=True)})
    ax.set_title(title, fontsize=9)
    ax.set_axis_off()
    return ax
