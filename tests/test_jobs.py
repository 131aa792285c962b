"""The sweeps give the same output on one process and on two (``--jobs``): capacity, crossover and
check (compare --vary: tests/test_parallel.py). Each command runs with --jobs 1 and --jobs 2 and
the outputs (JSON or text, exit status, stderr) must be equal byte for byte; the thresholds below
which a sweep stays on one process are set to zero so that the two-process runs do use workers."""

from __future__ import annotations

import pytest

from loopsim import capacity, checkformula, parallel
from loopsim.cli import main
from loopsim.entitle import crossover, crossover_next


@pytest.fixture
def workers_used(monkeypatch):
    """Always use the pool; count the maps that ran on local worker processes."""
    monkeypatch.setattr(capacity, "POOL_FROM_REQUESTS", 0)
    monkeypatch.setattr(checkformula, "POOL_FROM_S", 0)
    seen = []
    real = parallel.Pool._map_local

    def counted(self, fn, items, *a):
        seen.append(len(items))
        return real(self, fn, items, *a)

    monkeypatch.setattr(parallel.Pool, "_map_local", counted)
    return seen


def _both(capsys, argv) -> tuple:
    """(status, stdout, stderr) of ``argv`` with --jobs 1 and with --jobs 2; they must be equal."""
    outs = []
    for jobs in ("1", "2"):
        status = main(argv + ["--quiet", "--jobs", jobs])
        out = capsys.readouterr()
        outs.append((status, out.out, out.err))
    assert outs[0] == outs[1]
    return outs[0]


def test_capacity_same_curve(capsys, workers_used):
    status, out, _ = _both(capsys, ["capacity", "matmul", "--hardware", "trn2-core",
                                    "--samples", "5", "--json"])
    assert status == 0 and '"policy": "opt"' in out and workers_used


def test_capacity_of_a_split_nest_same_curve(capsys, workers_used):
    # a nest split across two cores is one replay per core for every point, LRU included
    status, out, _ = _both(capsys, ["capacity", "projection", "--hardware", "trn2-lnc2",
                                    "--set", "B=256", "--set", "D=512", "--set", "F=512",
                                    "--samples", "3"])
    assert status == 0 and "lru:" in out and workers_used


def test_crossover_same_values(capsys, workers_used):
    status, out, _ = _both(capsys, ["crossover", "projection", "--hardware", "trn2-core",
                                    "--dim", "B", "--json"])
    assert status == 0 and '"value": 234' in out and workers_used


def test_crossover_same_error(capsys, workers_used):
    # matmul's M levels off below the ridge: the same one-line error, exit 2
    status, _, err = _both(capsys, ["crossover", "matmul", "--hardware", "trn2-core", "--dim", "M"])
    assert status == 2 and "levels off below the ridge" in err


RIGHT = "2*(ceil(N/TN)*M*K + ceil(M/TM)*K*N + M*N)"
NAIVE = "2*(M*K + K*N + M*N)"


@pytest.mark.parametrize("formula, status", [(RIGHT, 0), (NAIVE, 1)])
def test_check_same_outcome(capsys, workers_used, formula, status):
    # held: the speculative run is the run; refuted: hypothesis runs again with the results
    # known and shrinks to the same smallest counterexample
    got, out, _ = _both(capsys, ["check", "matmul", "--hardware", "trn2-core", "--set", "TK=128",
                                 "--examples", "25", "--formula", formula, "--json"])
    assert got == status and workers_used


def test_check_same_counterexample_under_lru(capsys, workers_used):
    got, out, _ = _both(capsys, ["check", "matmul", "--hardware", "trn2-core", "--policy", "lru",
                                 "--set", "TM=128", "--set", "TK=128", "--set", "TN=512",
                                 "--examples", "15", "--formula", NAIVE + "+1"])
    assert got == 1 and "counterexample:" in out


def test_check_same_error(capsys, workers_used):
    got, _, err = _both(capsys, ["check", "matmul", "--hardware", "trn2-core", "--examples", "5",
                                 "--formula", "M*K/(N-1)"])
    assert got == 2 and "division by zero" in err


def test_crossover_next_follows_the_guesses():
    # compute-bound from v = 5 (W = v, Q = 1, P = 5, BW = 1): doubling 1, 2, 4, 8, then
    # bisection 6, 5. With nothing known the search needs 1; under "memory-bound at 1" it needs
    # 2, then 4; "compute-bound at 1" ends it.
    wq = lambda v: (v, 1)  # noqa: E731
    assert crossover(wq, 5, 1) == (5, [(v, v, 1) for v in (1, 2, 4, 8, 6, 5)])
    assert crossover_next({}, 5, 1, 1) == [1]
    assert crossover_next({}, 5, 1, 3) == [1, 2, 4]
    known = {v: wq(v) for v in (1, 2, 4, 8)}
    # bisection between 4 and 8 at 6; then 5 if 6 is compute-bound, 7 if not
    assert crossover_next(known, 5, 1, 3) == [6, 7, 5]
    assert crossover_next({**known, 6: (6, 1), 5: (5, 1)}, 5, 1, 4) == []


def test_ctrl_c_exits_130(capsys, monkeypatch):
    def interrupted(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(capacity, "points", interrupted)
    assert main(["capacity", "matmul", "--hardware", "trn2-core", "--quiet", "--jobs", "1"]) == 130
    assert "interrupted" in capsys.readouterr().err
