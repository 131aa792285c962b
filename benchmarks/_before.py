"""Run a benchmark figure under another revision of loopsim, for before/after tables.

``tree(ref)`` extracts ``loopsim/`` (and the bundled data) of a git revision into a temporary
folder; ``run_json(code, root)`` runs Python code in a fresh process with that folder first on
``sys.path`` and returns the JSON object the code prints last. Both revisions then run on the same
machine in the same minute, so their ratio means something even on a shared, noisy machine.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

#: the last main before issue 13's performance work landed
BEFORE = "400ca60"


def tree(ref: str) -> str:
    """A temporary folder holding ``loopsim/``, ``tilings/`` and ``hardware/`` at ``ref``."""
    d = tempfile.mkdtemp(prefix=f"loopsim-{ref}-")
    archive = subprocess.run(["git", "-C", ROOT, "archive", ref, "loopsim", "tilings", "hardware"],
                             capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", d], input=archive, check=True)
    return d


def run_json(code: str, root: str, env: dict | None = None) -> dict:
    """Run ``code`` in a fresh interpreter importing loopsim from ``root``; its last stdout line
    is a JSON object."""
    env = {**os.environ, **(env or {}), "PYTHONPATH": root}
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=root)
    if p.returncode:
        raise SystemExit(f"benchmark child failed under {root}:\n{p.stderr[-2000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def table(rows: list[tuple[str, float, float, str]]) -> None:
    """Print figure | before | after | after/before."""
    print(f"{'figure':44s} {'before':>12s} {'after':>12s} {'after/before':>13s}")
    for name, b, a, unit in rows:
        ratio = f"{a / b:.3f}" if b else "-"
        print(f"{name:44s} {b:>12.4g} {a:>12.4g} {ratio:>13s}  {unit}")
