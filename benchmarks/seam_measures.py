"""Measures of issue 19 (one seam for the machine), printed as one JSON object.

- ``trainium_reads``: attribute reads ``.NAME`` of a Trainium-only sheet field outside
  ``loopsim/targets/`` and the sheet loader (the regular expression of the acceptance check
  check-house-targets (c), comments included).
- ``partitions_functions``: functions (any module) with a parameter named ``partitions``.
- ``tile_limit_places``: functions outside the sheet loader that spell a matmul tile limit: read
  ``.k_tile_max``/``.moving_max``/``.stationary_max``, or take a ``moving_max`` parameter, or name
  ``partitions`` beside ``pe_cols`` (the K limit spelled as the partition count).
- ``statements_calls``: ``Kernel.statements()`` calls during one ``pipeline.analyze`` of the bundled
  ``matmul`` on trn2-core (load excluded; a counter wraps the method), and ``statements_walks``:
  how many of them walked the nest (the rest found the kernel's statements already derived).

    python benchmarks/seam_measures.py
"""

from __future__ import annotations

import ast
import json
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PKG = os.path.join(ROOT, "loopsim")
FIELDS = ("partitions|pe_rows|pe_cols|moving_max|stationary_max|psum_banks|psum_bank_bytes|psum_bank_fp32|"
          "psum_partition_bytes|sbuf_partition_bytes|k_tile_max|mm_init_\\w+|dma_engines|dma_bw")
LIMITS = {"k_tile_max", "moving_max", "stationary_max"}


def _files():
    for d, _, fs in os.walk(PKG):
        for f in fs:
            if f.endswith(".py"):
                yield os.path.join(d, f)


def _loader(p: str) -> bool:
    return os.path.basename(p) == "hardware.py"


def trainium_reads() -> tuple[int, int]:
    pat = re.compile(r"\.(%s)\b" % FIELDS)
    n, mods = 0, 0
    for p in _files():
        if p.startswith(os.path.join(PKG, "targets") + os.sep) or os.path.basename(p) == "hardware.py":
            continue
        k = len(pat.findall(open(p, encoding="utf-8").read()))
        n, mods = n + k, mods + bool(k)
    return n, mods


def _functions(p: str):
    tree = ast.parse(open(p, encoding="utf-8").read())
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            yield node


def _params(fn) -> set[str]:
    a = fn.args
    return {x.arg for x in (*a.posonlyargs, *a.args, *a.kwonlyargs)}


def partitions_functions() -> list[str]:
    out = []
    for p in _files():
        for fn in _functions(p):
            if "partitions" in _params(fn):
                out.append(f"{os.path.relpath(p, ROOT)}:{getattr(fn, 'name', 'lambda')}")
    return sorted(out)


def tile_limit_places() -> list[str]:
    out = []
    for p in _files():
        if _loader(p):
            continue
        for fn in _functions(p):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            attrs = {n.attr for n in ast.walk(fn) if isinstance(n, ast.Attribute)}
            if (attrs & LIMITS or "moving_max" in _params(fn)
                    or {"partitions", "pe_cols"} <= attrs):
                out.append(f"{os.path.relpath(p, ROOT)}:{fn.name}")
    # a function nested in a counted one is the same place
    return sorted(out)


def statements_calls() -> int:
    sys.path.insert(0, ROOT)
    from loopsim.ir import kernel as kmod
    from loopsim.model import pipeline
    from loopsim.targets import hardware

    prog = pipeline.load("matmul")
    hw = hardware.load("trn2-core")
    orig = kmod.Kernel.statements
    n = [0, 0]

    def counted(self, *a, **kw):
        n[0] += 1
        n[1] += getattr(self, "_derived", {}).get("statements") is None  # this call walks the nest
        return orig(self, *a, **kw)

    kmod.Kernel.statements = counted
    try:
        pipeline.analyze(prog, hw)
    finally:
        kmod.Kernel.statements = orig
    return n[0], n[1]


def main() -> int:
    reads, mods = trainium_reads()
    parts = partitions_functions()
    places = tile_limit_places()
    calls, walks = statements_calls()
    print(json.dumps({"trainium_reads": reads, "trainium_read_modules": mods,
                      "partitions_functions": len(parts), "tile_limit_places": len(places),
                      "statements_calls": calls, "statements_walks": walks,
                      "partitions_function_list": parts, "tile_limit_place_list": places}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
