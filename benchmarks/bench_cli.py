"""Whole-process times of the command line, before and after (issue 13 items 1 and 6).

Prints figures; asserts nothing. Each command runs in a fresh interpreter and is timed by its CPU
seconds (user + system: on a shared machine wall time mostly measures the other tenants) and, in a
second table, its wall seconds (what a user waits for on an idle machine); warm figures are the
median of --repeat runs after one warm-up, the two revisions taking turns run by run (numba's cache and .pyc files in place), cold figures
the first run with an empty numba cache and loopsim's own .pyc files absent (a fresh copy of the
tree), the dependencies' .pyc in place as ``pip install`` leaves them: what a fresh install meets.
PYTHONDONTWRITEBYTECODE is removed from the children's environment: with it set, every "warm" run
would compile loopsim from source again, which no installed copy does. The child runs what the
``loopsim`` console script runs, ``main()`` reading ``sys.argv``:

    python benchmarks/bench_cli.py [--before REF] [--repeat 5]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _before import BEFORE, ROOT, table, tree  # noqa: E402

TEN = ["matmul", "matmul_blocked", "matmul_hoisted", "matmul_kouter", "matmul_small_tiles",
       "projection", "nki_tutorial/1_tiled", "nki_tutorial/2_hoist_load",
       "nki_tutorial/3_block_free_dimension", "matmul"]

COMMANDS = {
    "loopsim --help": ["--help"],
    "entitle projection --set B=1": ["entitle", "projection", "--hardware", "trn2-core", "--set", "B=1"],
    "compare of 10 tilings": ["compare", "--hardware", "trn2-core", *TEN],
    "entitle matmul --policy lru": ["entitle", "matmul", "--hardware", "trn2-core", "--policy", "lru"],
    "compare of 10 tilings --policy lru": ["compare", "--hardware", "trn2-core", "--policy", "lru", "--jobs", "1", *TEN],
}
COLD = ("entitle projection --set B=1", "entitle matmul --policy lru", "compare of 10 tilings --policy lru")


def once(root: str, argv: list[str], env: dict | None = None) -> tuple[float, float]:
    """(CPU seconds (user + system), wall seconds) of one whole process running ``loopsim ARGV``."""
    code = "import sys; from loopsim.cli.main import main; sys.exit(main())"
    e = {**os.environ, **(env or {}), "PYTHONPATH": root}
    e.pop("PYTHONDONTWRITEBYTECODE", None)  # warm means .pyc files in place
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, env=e, cwd=root)
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    dt = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    if p.returncode not in (0, 3):
        raise SystemExit(f"{' '.join(argv)} under {root}: exit {p.returncode}\n{p.stderr.decode()[-1500:]}")
    return dt, wall


def figures(roots: list[str], repeat: int) -> list[dict[str, tuple[float, float]]]:
    """Per root, {figure: (CPU s, wall s)}; warm figures the medians of ``repeat`` runs. The roots
    take turns run by run (one warm-up each first), so a change in the machine's load while the
    script runs shifts both sides alike instead of one."""
    outs = [{} for _ in roots]
    for name, argv in COMMANDS.items():
        for root in roots:
            once(root, argv)
        runs = [[] for _ in roots]
        for _ in range(repeat):
            for r, root in zip(runs, roots):
                r.append(once(root, argv))
        for out, r in zip(outs, runs):
            out[name] = tuple(statistics.median(x[i] for x in r) for i in (0, 1))
    for name in COLD:
        for out, root in zip(outs, roots):
            with tempfile.TemporaryDirectory() as numba_dir, tempfile.TemporaryDirectory() as fresh:
                for part in ("loopsim", "tilings", "hardware"):
                    shutil.copytree(os.path.join(root, part), os.path.join(fresh, part),
                                    ignore=shutil.ignore_patterns("__pycache__"))
                out["cold: " + name] = once(fresh, COMMANDS[name], {"NUMBA_CACHE_DIR": numba_dir})
    return outs


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--before", default=BEFORE)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    old = tree(args.before)
    before, after = figures([old, ROOT], args.repeat)
    for i, what in enumerate(("CPU seconds (user + system; ", "wall seconds (")):
        print(f"whole process, {what}median of {args.repeat} warm; cold = empty numba cache, "
              f"fresh copy of loopsim); {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}; before = "
              f"{args.before}, after = working tree")
        table([(k, before[k][i], after[k][i], "s") for k in after])
    return 0


if __name__ == "__main__":
    sys.exit(main())
