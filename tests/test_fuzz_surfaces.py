"""Fuzz test of issue 25's surfaces (tests/fuzzgen.py): generated kernel files (random shapes,
parameters, unmodelled calls, exits, prints, endless loops under a time limit), search spaces and
flags, calibrate measurements, profiles and replay files, each one in-process run held to the
error contract and, where the answer is known independently, to its numbers.

A new random seed every run (LOOPSIM_FUZZ_SEED, printed in the session header and the summary;
set it to replay a failure); LOOPSIM_FUZZ_EXAMPLES cases per generator (default 30: 150 runs,
well under a minute). ``benchmarks/fuzz_campaign.py`` runs thousands.
"""

import os

import pytest

from tests import fuzzgen

SEED = int(os.environ["LOOPSIM_FUZZ_SEED"])
EXAMPLES = int(os.environ.get("LOOPSIM_FUZZ_EXAMPLES", "30"))


@pytest.mark.parametrize("kind", list(fuzzgen.GENERATORS))
def test_generated_cases_hold_the_contract(kind):
    table = fuzzgen.campaign(SEED, {kind: EXAMPLES})[kind]
    fuzzgen.SUMMARY.append(f"{kind}: {table['runs']} runs ({table['ok']} ok, {table['refused']} refused) "
                           f"from seed {SEED} in {table['seconds']:.1f} s")
    assert table["ok"] + table["refused"] == EXAMPLES, (
        f"seed {SEED}: " + "; ".join(f"{o} [case seed {s}]: {d}" for o, d, s in table["failures"][:5]))


def test_the_oracles_catch_wrong_answers(tmp_path):
    # a generator's oracle must be able to fail: a replay case whose expected count is off by one
    import random

    case = fuzzgen.replay_case(random.Random(3))
    while case.expect != "ok":
        case = fuzzgen.replay_case(random.Random(random.random()))
    right = case.oracle
    outcome, _ = fuzzgen.run(case, tmp_path)
    assert outcome == "ok"
    case.oracle = lambda out, folder: right(out.replace('"misses": ', '"misses": 1'), folder)
    outcome, detail = fuzzgen.run(case, tmp_path)
    assert outcome == "wrong" and "by brute force" in detail
