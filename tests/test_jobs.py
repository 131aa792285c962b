"""The sweeps give the same output on one process and on two (``--jobs``): capacity, crossover and
check (compare --vary: tests/test_parallel.py). Each command runs with --jobs 1 and --jobs 2 and
the outputs (JSON or text, exit status, stderr) must be equal byte for byte; an explicit --jobs 2
starts workers however short the sweep (asserted)."""

from __future__ import annotations

import pytest

from loopsim.analyses import capacity, parallel
from loopsim.cli.main import main
from loopsim.model.entitle import crossover, crossover_next


@pytest.fixture
def workers_used(monkeypatch):
    """Count the maps that ran on local worker processes."""
    seen = []
    real = parallel.Pool._map_local

    def counted(self, fn, res):
        seen.append(len(res.todo()))
        return real(self, fn, res)

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


@pytest.mark.parametrize("formula, status", [(RIGHT, 0), (RIGHT + " + 2*min(M//1000, 1)", 1)])
def test_check_same_outcome(capsys, workers_used, formula, status):
    # --jobs 2: the first example runs here, the rest are drawn as guesses for the workers.
    # Held: that run is the run. Wrong from M = 1000 on (the first example, M = 1, passes): a
    # guess fails, hypothesis runs again with the results known and shrinks to the same M = 1000
    got, out, _ = _both(capsys, ["check", "matmul", "--hardware", "trn2-core", "--set", "TK=128",
                                 "--vary", "M=1..2048", "--examples", "25", "--formula", formula,
                                 "--json"])
    assert got == status and workers_used
    assert status == 0 or '"M": 1000' in out


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


def _square(x: int) -> int:
    return x * x


@pytest.mark.parametrize("jobs", [1, 2])
def test_map_until_stops_at_the_first_result_in_order(jobs):
    with parallel.Pool(jobs) as pool:
        assert pool.map(_square, range(40), until=lambda r: r >= 50) == [0, 1, 4, 9, 16, 25, 36, 49, 64]
        assert pool.map(_square, range(5), until=lambda r: False) == [0, 1, 4, 9, 16]


def test_map_here_first_while_short(workers_used):
    # the rest would take far less than an hour here: no worker starts; with 0 only the first
    # item runs here and the rest go to the workers
    with parallel.Pool(2) as pool:
        assert pool.map(_square, range(6), here_s=3600) == [x * x for x in range(6)]
        assert not workers_used
        assert pool.map(_square, range(6), here_s=0) == [x * x for x in range(6)]
        assert workers_used == [5]


def test_same_results_on_a_dask_cluster(monkeypatch):
    # --scheduler: the curve, the crossover and the check come back the same from Dask workers
    import distributed  # the test extra installs dask[distributed]

    sent = []
    real = parallel.Pool._map_dask

    def counted(self, fn, res):
        sent.append(getattr(fn, "func", fn).__name__)
        return real(self, fn, res)

    monkeypatch.setattr(parallel.Pool, "_map_dask", counted)

    from loopsim.analyses import checkformula, crossover
    from loopsim.targets import hardware
    from loopsim.model import pipeline
    from loopsim.frontends import spec

    hw = hardware.load("trn2-core")
    kernel = spec.load_kernel("matmul")
    point = crossover.Point(pipeline.read("projection"), (), "B", hw, (("dtype", "bf16"),))
    P = hw.P("bf16")

    def three(**where):
        return (capacity.curve(kernel, hw, samples=4, **where),
                crossover.search(point, P, hw.bw, **where),
                checkformula.check_formula("matmul", RIGHT + " + 2*min(M//1000, 1)", sets={"TK": 128},
                                           vary=["M=1..2048"], examples=15, **where))

    one = three(jobs=1)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster:
        assert three(scheduler=cluster.scheduler_address) == one
    assert one[1][0] == 234 and not one[2].held
    assert {"_task_points", "_tried", "_simulate"} <= set(sent)
