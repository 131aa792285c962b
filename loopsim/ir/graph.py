"""Op graphs: a program's ops as an :class:`OpGraph`, validated when built (networkx is imported
only to draw one). The ops come from a spec (:mod:`loopsim.frontends.ops`: its ``[ops]`` table or
its nest statements) or from a traced NKI kernel.

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
from loopsim.ir.kernel import Tensor


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
        return ops_mod.get(self.kind)

    def work(self) -> tuple[tuple[str, int], ...]:
        """(engine, passes per element) pairs; an override moves every pass to one engine."""
        w = self.op_kind.work
        if self.engine:
            return ((self.engine, sum(p for _, p in w)),)
        return w


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
