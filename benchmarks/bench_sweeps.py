"""The sweeps on one core and on all of them (issue 13 item 5): compare --vary, capacity,
crossover and check, each run as a whole process with --jobs 1 and with --jobs N (N = every core
this process may use), side by side in one run.

Prints, per sweep and per --jobs, the wall seconds and the CPU seconds (user + system of the
process and of its worker processes), the median of --repeat runs after one warm-up (numba's
cache and .pyc files in place), and whether the outputs of the two are identical (they must be).
Also prints the machine: its cores and the load average before and after (on a shared machine the
wall times mostly measure the other tenants; CPU seconds say what the parallel run costs in all).
Asserts nothing:

    python benchmarks/bench_sweeps.py [--repeat 3] [--jobs N]
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SWEEPS = {  # each a few CPU seconds on one core: long enough that the workers pay for themselves
    "compare --vary (12 tilings, opt)": [
        "compare", "matmul_blocked", "--hardware", "trn2-core", "--policy", "opt",
        "--sbuf-bytes", "4194304", "--set", "M=8192", "--set", "N=8192", "--set", "K=4096",
        "--set", "TM=32", "--set", "TK=32", "--vary", "BM=256,512", "--vary", "BN=512,1024",
        "--vary", "TN=64,128,256", "--json"],
    "capacity (16 samples, lru+opt)": [
        "capacity", "matmul", "--hardware", "trn2-core", "--set", "M=4096", "--set", "N=4096",
        "--set", "K=2048", "--set", "TM=32", "--set", "TN=32", "--set", "TK=32", "--json"],
    "crossover of K (opt)": [
        "crossover", "matmul", "--hardware", "trn2-core", "--dim", "K", "--policy", "opt",
        "--set", "M=8192", "--set", "N=8192", "--set", "TM=32", "--set", "TK=32", "--set", "TN=32",
        "--json"],
    "check (150 examples, lru)": [
        "check", "matmul", "--hardware", "trn2-core", "--policy", "lru", "--set", "TK=128",
        "--set", "K=1024", "--vary", "M=1024..2048", "--vary", "N=1024..2048", "--examples", "150",
        "--formula", "2*(M*K+K*N+M*N)", "--json"],
}


def default_jobs() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def once(argv: list[str]) -> tuple[float, float, bytes]:
    """(wall s, CPU s of the process and its workers, stdout) of ``loopsim ARGV``."""
    code = "import sys; from loopsim.cli.main import main; sys.exit(main(sys.argv[1:]))"
    env = {**os.environ, "PYTHONPATH": ROOT}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, env=env, cwd=ROOT)
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode not in (0, 1):
        raise SystemExit(f"loopsim {' '.join(argv)}: exit {p.returncode}\n{p.stderr.decode()[-1500:]}")
    return wall, (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime), p.stdout


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--jobs", type=int, default=default_jobs(), help="the many-core run (default: all)")
    a = ap.parse_args()
    many = a.jobs
    load0 = os.getloadavg()
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} logical CPUs "
          f"({default_jobs()} usable), Python {platform.python_version()}; load average "
          f"{load0[0]:.2f} {load0[1]:.2f} {load0[2]:.2f} at start")
    print(f"median of {a.repeat} whole-process runs after a warm-up; CPU = user + system of the "
          "process and its workers")
    print(f"{'sweep':<34}{'wall j1':>9}{'wall j' + str(many):>9}{'speed-up':>9}"
          f"{'CPU j1':>9}{'CPU j' + str(many):>9}  same output")
    t_start = time.perf_counter()
    for name, argv in SWEEPS.items():
        row = {}
        for jobs in (1, many):
            cmd = argv + ["--quiet", "--jobs", str(jobs)]
            once(cmd)  # warm-up
            runs = [once(cmd) for _ in range(a.repeat)]
            row[jobs] = (statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs),
                         {r[2] for r in runs})
        (w1, c1, o1), (wn, cn, on) = row[1], row[many]
        same = len(o1) == 1 and o1 == on
        print(f"{name:<34}{w1:>9.2f}{wn:>9.2f}{w1 / wn:>9.2f}{c1:>9.2f}{cn:>9.2f}  {same}")
    load1 = os.getloadavg()
    print(f"load average {load1[0]:.2f} {load1[1]:.2f} {load1[2]:.2f} at the end "
          f"({time.perf_counter() - t_start:.0f} s)")


if __name__ == "__main__":
    main()
