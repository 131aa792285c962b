"""The import structure: one-way flow from data to presentation, no cycles (lazy imports included).

Every loopsim module belongs to one layer; a module may import only modules of its own layer or
below. The model (everything below ``render``) never imports presentation or the command line.
A new module must be placed in LAYERS, so its place in the flow is a decision, not an accident.
"""

import ast
from pathlib import Path

import networkx as nx

ROOT = Path(__file__).resolve().parent.parent / "loopsim"

#: lowest first; a prefix ending in "." covers a package
LAYERS = [
    ["base", "ir", "frontends", "count", "targets", "targets.neuron", "model", "analyses", "cli"],  # folders (empty __init__)
    ["base.errors", "base.fmt", "base.data", "base.numba_env", "base.limits", "base.tomlfile", "base.streams"],  # leaves
    ["ir.expr", "ir.kernel", "targets.hardware", "ir.ops"],                               # vocabulary
    ["ir.tiles", "frontends.spec", "ir.graph", "count.executions", "base.outfile"],             # parse
    ["sim.trace", "sim.", "sim.replayfile", "count.counts", "count.lnc", "model.entitle", "model.verdict", "count.bound", "count.formula", "count.written",
     "targets.neuron.ceilings", "targets.neuron.engines", "model.measured", "targets.neuron.dma", "count.readback", "frontends.program", "frontends.nki."],  # model
    ["model.pipeline"],                                                    # the one analysis
    ["analyses.sweep", "analyses.checkformula", "analyses.calibrate", "analyses.search.", "analyses.parallel", "analyses.capacity", "analyses.crossover", "analyses.batch"],  # many analyses
    ["render.", "render.plot"],                                             # presentation
    ["cli.commands.", "cli.main", "__main__", "frontends.nki.__main__", "api"],                # the command line
]
MODEL_TOP = 6  # layers below this index are the model: never import render, plot, commands, cli


def _modules() -> dict[str, Path]:
    out = {}
    for p in ROOT.rglob("*.py"):
        rel = p.relative_to(ROOT).with_suffix("")
        parts = [x for x in rel.parts if x != "__init__"]
        out[".".join(parts)] = p
    return out


def _layer(mod: str) -> int:
    """The layer of the most specific LAYERS entry naming ``mod`` (a module or a package prefix)."""
    hits = [(len(g), i) for i, group in enumerate(LAYERS) for g in group
            if mod == g.rstrip(".") or (g.endswith(".") and mod.startswith(g))]
    if not hits:
        raise AssertionError(f"loopsim.{mod} is in no layer of tests/test_layers.py LAYERS: place it")
    return max(hits)[1]


def _imports(mod: str, path: Path, known) -> set[str]:
    """loopsim modules ``mod`` imports anywhere in its file (module level or inside functions)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    pkg = mod.split(".")[:-1] if path.name != "__init__.py" else mod.split(".") if mod else []
    out = set()
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg[: len(pkg) - (node.level - 1)] if node.level > 1 else pkg
                prefix = ".".join(base + ([node.module] if node.module else []))
            elif node.module and node.module.startswith("loopsim"):
                prefix = node.module[len("loopsim."):] if node.module != "loopsim" else ""
            else:
                continue
            names = [f"{prefix}.{a.name}".strip(".") for a in node.names] + [prefix]
        elif isinstance(node, ast.Import):
            names = [a.name[len("loopsim."):] for a in node.names if a.name.startswith("loopsim.")]
        for n in names:
            while n and n not in known:
                n = n.rpartition(".")[0]
            if n and n != mod:
                out.add(n)
    return out


def _graph():
    mods = _modules()
    known = set(mods)
    g = nx.DiGraph()
    for m, p in mods.items():
        g.add_node(m)
        for dep in _imports(m, p, known):
            if dep:  # "" is the loopsim package itself (its __version__)
                g.add_edge(m, dep)
    return g


def test_no_import_cycles():
    g = _graph()
    cycles = list(nx.simple_cycles(g))
    assert not cycles, f"import cycles: {cycles[:3]}"


def test_imports_follow_the_layer_order():
    g = _graph()
    bad = []
    for a, b in g.edges:
        if a and _layer(b) > _layer(a):
            bad.append(f"{a} (layer {_layer(a)}) imports {b} (layer {_layer(b)})")
    assert not bad, "; ".join(bad)


def test_the_model_never_imports_presentation():
    g = _graph()
    for a, b in g.edges:
        if a and _layer(a) < MODEL_TOP:
            assert not b.startswith(("render", "cli")), f"{a} imports {b}"


def test_every_module_has_a_layer():
    for m in _modules():
        if m:
            _layer(m)
