"""The run-time note a long replay prints on stderr against the run's actual time.

A trace over ``loopsim.sim.stream.NOTE_ABOVE`` request slots gets a note with the time it will
take, measured first on a sample of its own requests on the running machine
(:func:`loopsim.sim.stream.seconds_per_request`). This runs the whole command for the 16384^3
bf16 matmul with 32^3 tiles (0.94 G slots) under lru and opt, one process each, and prints the
estimate, the wall time and their ratio (the target: within 30%).

    python benchmarks/bench_estimate.py [--policies lru,opt]
"""

import argparse
import re
import subprocess
import sys
import time

ARGS = ["entitle", "matmul", "-H", "trn2-core", "--set", "M=16384", "--set", "N=16384", "--set", "K=16384",
        "--set", "TM=32", "--set", "TK=32", "--set", "TN=32", "--json"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--policies", default="lru,opt")
    a = ap.parse_args()
    print(f"{'policy':<8}{'estimate s':>12}{'wall s':>10}{'estimate/wall':>15}")
    for p in a.policies.split(","):
        t0 = time.perf_counter()
        r = subprocess.run([sys.executable, "-m", "loopsim.cli.main", *ARGS, "--policy", p],
                           capture_output=True, text=True)
        wall = time.perf_counter() - t0
        m = re.search(r"about ([\d,]+) s on one core", r.stderr)
        est = float(m.group(1).replace(",", "")) if m else float("nan")
        print(f"{p:<8}{est:>12.0f}{wall:>10.1f}{est / wall:>15.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
