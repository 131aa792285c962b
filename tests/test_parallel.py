"""loopsim.analyses.parallel: results in item order on one process, two, and an in-process Dask cluster;
the search finds the same tilings (and prunes the same work) whatever runs it."""

from __future__ import annotations

import json

import pytest

from loopsim.cli.main import main

from loopsim.base.errors import InputError
from loopsim.analyses.parallel import Interrupted, Pool, check_jobs, pmap
from loopsim.analyses.search import engine


def _square(x: int) -> int:
    return x * x


def _stop_at_three(x: int) -> int:
    if x == 3:
        raise KeyboardInterrupt
    return x


def test_pmap_in_item_order():
    items = list(range(40))
    want = [x * x for x in items]
    assert pmap(_square, items, jobs=1, quiet=True) == want
    assert pmap(_square, items, jobs=2, quiet=True) == want


def test_interrupt_returns_what_finished():
    with Pool(1) as pool, pytest.raises(Interrupted) as e:
        pool.map(_stop_at_three, range(6))
    assert e.value.done == {0: 0, 1: 1, 2: 2}


def test_jobs_must_be_positive():
    with pytest.raises(InputError, match="--jobs 0"):
        check_jobs(0)


def test_unreachable_scheduler_is_one_line_error():
    with pytest.raises(InputError, match="cannot reach the Dask scheduler"):
        Pool(scheduler="tcp://127.0.0.1:1", timeout_s=0.5)


PROBLEM = engine.Problem("matmul_blocked", (("M", 1024), ("N", 1024), ("K", 512)), "trn2-core",
                         ("TK=128", "TM=128", "TN=128,512"), top=4)


def _summary(out):
    return ([(c.values, c.structure, c.verdict.Q, c.verdict.T) for c in out.top],
            out.evaluated, out.verdicts)


@pytest.fixture(scope="module")
def one_process():
    with Pool(1) as pool:
        return _summary(engine.search(PROBLEM, pool))


def test_same_search_on_two_processes(one_process):
    with Pool(2) as pool:
        assert _summary(engine.search(PROBLEM, pool)) == one_process


def test_same_search_on_a_dask_cluster(one_process):
    import distributed  # the test extra installs dask[distributed]

    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster:
        with Pool(scheduler=cluster.scheduler_address) as pool:
            assert pool.workers == 2
            assert _summary(engine.search(PROBLEM, pool)) == one_process


def test_compare_same_rows_on_one_and_two_processes(capsys):
    argv = ["compare", "matmul", "matmul_hoisted", "matmul_blocked", "--hardware", "trn2-core",
            "--vary", "TN=128,256,512", "--json", "--quiet", "--jobs"]
    outs = []
    for jobs in ("1", "2"):
        assert main(argv + [jobs]) == 0
        outs.append(json.loads(capsys.readouterr().out))
    assert outs[0] == outs[1] and len(outs[0]["rows"]) == 9
