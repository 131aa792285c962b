"""The long fuzz campaign (issue 14): tests/test_fuzz.py's generators with many more examples, each
example one in-process ``loopsim.cli.main.main`` run held to the error contract (exit 0/1/3, or 2 with one
``loopsim: error:`` line; no traceback). Prints the example count and the time; a failure prints
hypothesis's smallest falsifying input. Not part of the test suite (docs/errors.md).

Run: python benchmarks/fuzz_campaign.py [--examples N]      (default 2000 per generator)
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--examples", type=int, default=2000, help="examples per generator (6 generators)")
    args = ap.parse_args()
    env = {**os.environ, "LOOPSIM_FUZZ_EXAMPLES": str(args.examples)}
    t = time.perf_counter()
    rc = subprocess.call([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          str(ROOT / "tests" / "test_fuzz.py")], env=env, cwd=ROOT)
    dt = time.perf_counter() - t
    print(f"fuzz campaign: 6 generators x {args.examples} examples = {6 * args.examples:,} runs "
          f"in {dt:.1f} s ({'all held the error contract' if rc == 0 else 'FAILED: see above'})")
    return rc


if __name__ == "__main__":
    sys.exit(main())
