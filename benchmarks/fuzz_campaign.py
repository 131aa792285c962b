"""The long fuzz campaign (issues 14 and 25), not part of the test suite (docs/errors.md).

Over the surfaces of issue 25 (tests/fuzzgen.py: generated kernel files, search spaces and flags,
calibrate measurements, profiles, replay files) it runs ``--runs`` cases per generator from a
random seed (printed; ``--seed N`` replays) and prints one table: per generator the runs, how many
ran (ok) and were refused with one line (both hold the contract), and the failures: tracebacks,
hangs (over ``--hang-s``), contract breaks (exit 2 without exactly one error line) and silent
wrong answers (a refusal that was due and did not come, a refusal of what must run, or numbers
an independent oracle disagrees with). Each failure is printed with its case seed.

``--hypothesis N`` also runs tests/test_fuzz.py's generators (issue 14: mutated specs, sheets,
traces, argument lists) with N examples each, as before.

Run: python benchmarks/fuzz_campaign.py [--runs 1000] [--seed N] [--hypothesis 0]
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=1000, help="cases per generator (5 generators)")
    ap.add_argument("--seed", type=int, default=None, help="campaign seed (default: a new one)")
    ap.add_argument("--hang-s", type=float, default=60.0, help="seconds after which a run is a hang")
    ap.add_argument("--hypothesis", type=int, default=0, metavar="N",
                    help="also run tests/test_fuzz.py with N examples per generator")
    args = ap.parse_args()
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2**32)
    from tests import fuzzgen

    print(f"fuzz campaign: seed {seed}, {args.runs} cases per generator, hang limit {args.hang_s:g} s, "
          f"kernel trace limit {fuzzgen.TRACE_LIMIT_S:g} s", flush=True)

    def failed(kind, outcome, detail, case_seed):
        print(f"  {outcome.upper()} {kind} [case seed {case_seed}]: {detail[:500]}", flush=True)

    t = time.perf_counter()
    table = fuzzgen.campaign(seed, {k: args.runs for k in fuzzgen.GENERATORS}, args.hang_s, failed)
    cols = ("runs", "ok", "refused", "traceback", "hang", "contract", "wrong")
    print(f"\n| generator | {' | '.join(cols)} | seconds |")
    print("|" + " --- |" * (len(cols) + 2))
    total = {c: 0 for c in cols}
    for kind, row in table.items():
        print(f"| {kind} | {' | '.join(f'{row[c]:,}' for c in cols)} | {row['seconds']:.0f} |")
        for c in cols:
            total[c] += row[c]
    print(f"| all | {' | '.join(f'{total[c]:,}' for c in cols)} | {time.perf_counter() - t:.0f} |")
    bad = total["traceback"] + total["hang"] + total["contract"] + total["wrong"]
    print(f"\n{total['runs']:,} runs from seed {seed}: {total['traceback']} tracebacks, {total['hang']} hangs, "
          f"{total['contract']} contract breaks, {total['wrong']} silent wrong answers")
    rc = 1 if bad else 0
    if args.hypothesis:
        env = {**os.environ, "LOOPSIM_FUZZ_EXAMPLES": str(args.hypothesis), "LOOPSIM_FUZZ_SEED": str(seed)}
        t = time.perf_counter()
        r = subprocess.call([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                             str(ROOT / "tests" / "test_fuzz.py")], env=env, cwd=ROOT)
        print(f"issue 14 generators: 6 x {args.hypothesis} examples = {6 * args.hypothesis:,} runs in "
              f"{time.perf_counter() - t:.0f} s ({'all held the error contract' if r == 0 else 'FAILED: see above'})")
        rc = rc or r
    return rc


if __name__ == "__main__":
    sys.exit(main())
