"""The import structure: one rule per folder, flowing one way from data to presentation.

The package's folders follow the flow spec -> IR -> trace -> counts -> target -> model -> verdict
-> render. Each folder below has one job and may import only its own modules and the folders
listed before it, so no two folders import each other (no folder-level two-way ties) and the model
never imports presentation or the command line. A module named ``__main__`` is a command-line
entry point: it belongs to ``cli`` wherever ``python -m`` needs it to sit. Module-level import
cycles are refused too (lazy imports included). A new folder must be placed in FOLDERS.
"""

import ast
from pathlib import Path

import networkx as nx

ROOT = Path(__file__).resolve().parent.parent / "loopsim"

#: lowest first: (folder, its one job)
FOLDERS = [
    ("base", "leaves: errors, number formatting, limits, files, output streams, the overlap rule"),
    ("ir", "the kernel IR: tensors, loops, statements, tile geometry, op kinds, op graphs"),
    ("frontends", "sources -> IR: spec files, programs of ops, NKI kernels"),
    ("sim", "traces of a nest and their replay through a fast memory (numba)"),
    ("count", "what a kernel does and moves: W, Q, residency, closed forms, the I/O lower bound"),
    ("targets", "machines: the Target protocol, hardware sheets, the neuron and flat families"),
    ("model", "the one pipeline, the entitlement, the verdict, measured profiles"),
    ("analyses", "questions over many analyses: sweeps, crossover, capacity, calibrate, check, search"),
    ("render", "text, JSON and plots of an analysis"),
    ("api", "the Python API (one module): analyze, search, compare, calibrate and their results"),
    ("cli", "the command line"),
]
ORDER = {f: i for i, (f, _) in enumerate(FOLDERS)}
MODEL_TOP = ORDER["render"]  # folders below this are the model: never import render or cli


def _modules() -> dict[str, Path]:
    out = {}
    for p in ROOT.rglob("*.py"):
        rel = p.relative_to(ROOT).with_suffix("")
        parts = [x for x in rel.parts if x != "__init__"]
        out[".".join(parts)] = p
    return out


def _folder(mod: str) -> str:
    """The folder ``mod`` belongs to (``cli`` for an entry point named ``__main__``)."""
    if mod.rpartition(".")[2] == "__main__":
        return "cli"
    top = mod.split(".")[0]
    if top not in ORDER:
        raise AssertionError(f"loopsim.{mod} is in no folder of tests/test_layers.py FOLDERS: place it")
    return top


def _layer(mod: str) -> int:
    return ORDER[_folder(mod)]


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


def test_imports_follow_the_folder_order():
    g = _graph()
    bad = []
    for a, b in g.edges:
        if a and b and _layer(b) > _layer(a):
            bad.append(f"{a} ({_folder(a)}) imports {b} ({_folder(b)})")
    assert not bad, "; ".join(sorted(bad))


def test_no_two_folders_import_each_other():
    g = _graph()
    ties = {(_folder(a), _folder(b)) for a, b in g.edges if a and b and _folder(a) != _folder(b)}
    both = sorted((x, y) for x, y in ties if (y, x) in ties and x < y)
    assert not both, f"folders importing each other: {both}"


def test_the_model_never_imports_presentation():
    g = _graph()
    for a, b in g.edges:
        if a and b and _layer(a) < MODEL_TOP:
            assert _layer(b) < MODEL_TOP, f"{a} imports {b}"


def test_every_module_has_a_folder():
    for m in _modules():
        if m:
            _folder(m)


def test_every_folder_is_placed():
    found = {p.name for p in ROOT.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert found <= set(ORDER), f"folders not in FOLDERS: {sorted(found - set(ORDER))}"


#: fields only a NeuronCore sheet has (loopsim.targets.neuron.sheet.NeuronCore): PE array, SBUF
#: partitions, PSUM, Tensor Engine fixed cost, DMA engines
NEURON_FIELDS = ("partitions", "pe_rows", "pe_cols", "moving_max", "stationary_max", "psum_banks",
                 "psum_bank_bytes", "psum_bank_fp32", "psum_partition_bytes", "sbuf_partition_bytes",
                 "k_tile_max", "mm_init_cycles", "mm_init_assumed", "mm_init_seconds", "dma_engines",
                 "dma_bw")


def _family_reads(source: str) -> list[tuple[int, str]]:
    """(line, field) of each NeuronCore-only field ``source`` reads: an attribute, or a name given
    to getattr/hasattr."""
    out = []
    for node in ast.walk(ast.parse(source)):
        name = None
        if isinstance(node, ast.Attribute):
            name = node.attr
        elif (isinstance(node, ast.Call) and getattr(node.func, "id", "") in ("getattr", "hasattr")
              and len(node.args) > 1 and isinstance(node.args[1], ast.Constant)):
            name = node.args[1].value
        if name in NEURON_FIELDS:
            out.append((node.lineno, name))
    return out


def test_only_targets_read_machine_family_fields():
    """Outside loopsim/targets/ no module reads a NeuronCore-only field: the model, the counts and
    the search ask the Target protocol (loopsim/targets/base.py)."""
    bad = [f"loopsim/{path.relative_to(ROOT)}:{line} .{name}"
           for mod, path in _modules().items() if mod and _folder(mod) != "targets"
           for line, name in _family_reads(path.read_text(encoding="utf-8"))]
    assert not bad, "; ".join(bad)


def test_the_field_rule_sees_a_read():
    # so that an empty result above means no reads, not a walk that sees nothing
    src = "x = hw.pe_cols\ny = getattr(hw, 'dma_bw', None)\nz = hw.lanes\n"
    assert sorted(_family_reads(src)) == [(1, "pe_cols"), (2, "dma_bw")]
