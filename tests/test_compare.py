"""compare: --vary expansion, ranking by T_best then T_worst, SBUF fit kept and marked, bad input."""

import itertools
import json

import pytest

from loopsim.targets import hardware
from loopsim.analyses import parallel, sweep
from loopsim.cli.main import main
from loopsim.base.errors import InputError

TRN2 = hardware.load("trn2-core")


def _json(capsys, argv):
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)["rows"]


def _hand_matmul(tm, tn, M=1024, N=1024, K=1024):
    """matmul.toml's loop order: A reloaded per n (r_A = N/TN), B per m (r_B = M/TM), C once."""
    W = 2 * M * N * K
    Q = 2 * ((N // tn) * K * M + (M // tm) * K * N + M * N)
    P, BW = TRN2.P("bf16"), TRN2.bw
    return W, Q, max(W / P, Q / BW), W / P + Q / BW


def test_vary_expands_the_product_and_rows_match_hand_counts(capsys):
    rows = _json(capsys, ["compare", "matmul", "--hardware", "trn2-core", "--vary", "TN=128,256,512",
                          "--vary", "TM=64,128", "--model", "roofline", "--json"])
    assert {(r["params"]["TM"], r["params"]["TN"]) for r in rows} == set(
        itertools.product((64, 128), (128, 256, 512)))
    assert [r["T_best"] for r in rows] == sorted(r["T_best"] for r in rows)
    for r in rows:
        W, Q, tb, tw = _hand_matmul(r["params"]["TM"], r["params"]["TN"])
        assert (r["W"], r["Q"]) == (W, Q)
        assert r["T_best"] == pytest.approx(tb) and r["T_worst"] == pytest.approx(tw)
        assert r["r"] == {"A": 1024 // r["params"]["TN"], "B": 1024 // r["params"]["TM"]}
        assert r["compulsory_Q"] == 2 * 3 * 1024**2
    # the best: largest tiles (fewest reloads), TM = 128, TN = 512
    assert rows[0]["best"] and rows[0]["varied"] == {"TN": 512, "TM": 128}
    assert sum(r["best"] for r in rows) == 1


def test_ties_on_t_are_broken_by_transfers_then_instructions_before_sbuf_peak():
    # two compute-bound rows share T = W/P and Q (everything crosses once) and, by the roofline
    # alone, the same DMA time; the one with fewer Tensor Engine instructions ranks first,
    # whatever order they were listed in, though it holds more SBUF: (B/TB)(F/TF)(D/TD) =
    # 16 x 8 x 32 = 4,096 instructions at TF = 512 against 16 x 32 x 32 = 16,384 at TF = 128
    for tf in ((128, 512), (512, 128)):
        rows = sweep.analyze_all(sweep.expand(["projection"], {}, {"B": (2048,), "TF": tf}), TRN2,
                                 model="roofline")
        a, b = rows[0].analysis, rows[1].analysis
        assert a.limit == b.limit == "compute" and a.T == pytest.approx(b.T) and a.Q == b.Q
        assert (a.counts.instructions, b.counts.instructions) == (4096, 16384)
        assert a.sbuf_peak_bytes > b.sbuf_peak_bytes
        assert dict(a.params)["TF"] == 512


def test_a_spec_named_twice_is_analysed_once_and_both_rows_carry_it(monkeypatch):
    # matmul, projection, matmul: two equal programs, so two analyses, not three; the rows are
    # those of analysing each variant on its own, the first matmul ranked best on the tie
    from loopsim.model import pipeline

    variants = sweep.expand(["matmul", "projection", "matmul"], {}, {})
    alone = [pipeline.analyze(v.program, TRN2) for v in variants]
    seen = []
    analyze = pipeline.analyze
    monkeypatch.setattr(pipeline, "analyze", lambda prog, hw, **kw: seen.append(prog) or analyze(prog, hw, **kw))
    rows = sweep.analyze_all(variants, TRN2)
    assert len(seen) == 2 and seen[0] == variants[0].program and seen[1] == variants[1].program
    by_label = {}
    for r in rows:
        by_label.setdefault(r.variant.label, []).append(r)
    assert [len(by_label[v.label]) for v in variants] == [2, 1, 2]
    for v, a in zip(variants, alone):
        for r in by_label[v.label]:
            assert (r.analysis.T, r.analysis.W, r.analysis.Q) == (a.T, a.W, a.Q)
    assert [r.best for r in rows].count(True) == 1


def test_a_row_that_does_not_fit_ranks_below_every_row_that_does(capsys):
    # matmul_hoisted holds a K x TM column of A and a K x TN column of B: (8*128 + 8*512)*2 +
    # 512*2 (C) = 11,264 bytes per partition as written; matmul holds 256 + 1024 = 1,280.
    # With 4 KiB per partition the hoisted kernel (smaller Q, smaller T) does not fit: it ranks
    # last, with the buffers that take the most named.
    rows = _json(capsys, ["compare", "matmul", "matmul_hoisted", "--hardware", "trn2-core",
                          "--sbuf-bytes", str(4096 * 128), "--json"])
    assert [r["kernel"] for r in rows] == ["matmul", "matmul_hoisted"]
    assert rows[1]["fits"] is False and rows[1]["feasible"] is False and rows[1]["best"] is False
    assert rows[1]["sbuf_peak_bytes"] == 11_264 * 128
    assert rows[1]["T"] < rows[0]["T"]  # faster if it could run, ranked below all the same
    (why,) = rows[1]["infeasible_reasons"]
    assert "needs 11,264 bytes per partition, has 4,096" in why and "B 8,192" in why
    assert rows[0]["fits"] is True and rows[0]["best"] is True


def test_text_and_csv(capsys):
    assert main(["compare", "matmul", "--hardware", "trn2-core", "--vary", "TN=256,512"]) == 0
    out = capsys.readouterr().out
    assert "matmul TN=512" in out and "* " in out
    assert main(["compare", "matmul", "--hardware", "trn2-core", "--vary", "TN=256,512", "--csv"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 3 and lines[0].startswith("rank,best,label")


def test_nki_tutorial_tells_its_story(capsys):
    from loopsim.frontends import spec

    tut = sorted(str(p) for p in spec._bundled_dir().glob("nki_tutorial/*.toml"))
    rows = _json(capsys, ["compare", *tut, "--hardware", "trn1-core", "--json"])
    M, N, K = 4096, 2048, 1024
    # (r_lhsT, r_rhs) by hand: tiled (N/512, M/128); hoisted (1, M/128); blocked M, N (1, M/256);
    # blocked M, N, K: lhsT once per N-block (N/1024), rhs once
    hand = {"nki_tiled": (4, 32), "nki_hoist_load": (1, 32), "nki_block_free": (1, 16),
            "nki_fully_optimized": (2, 1)}
    for r in rows:
        ra, rb = hand[r["kernel"]]
        assert r["Q"] == 2 * (ra * K * M + rb * K * N + M * N)
        assert r["W"] == 2 * M * N * K
    # each step of the tutorial is faster than the one before it; rows that can run come first
    T = {r["kernel"]: r["T"] for r in rows}
    assert T["nki_fully_optimized"] < T["nki_block_free"] < T["nki_hoist_load"] < T["nki_tiled"]
    assert [(not r["feasible"], r["T"]) for r in rows] == sorted((not r["feasible"], r["T"]) for r in rows)
    bound = {r["kernel"]: r["bound"] for r in rows}
    assert bound.pop("nki_fully_optimized") == "compute" and set(bound.values()) == {"memory"}


@pytest.mark.parametrize("vary,match", [
    (["TN=12a"], "'12a' is not an integer"),
    (["TN=0"], "must be > 0"),
    (["XX=1,2"], "no spec has a parameter XX"),
    (["TN"], "expected NAME=INT"),
    (["TN=128", "TN=256"], "given twice"),
])
def test_bad_vary(capsys, vary, match):
    argv = ["compare", "matmul", "--hardware", "trn2-core"]
    for v in vary:
        argv += ["--vary", v]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert match in err and "--vary" in err and len(err.strip().splitlines()) == 1


def test_parse_vary():
    assert sweep.parse_vary(["TN=128, 256,128"]) == {"TN": (128, 256)}
    with pytest.raises(InputError):
        sweep.parse_vary(["TN=1.5"])


def test_default_jobs_hands_the_rest_of_a_long_sweep_to_workers(capsys, monkeypatch):
    # --jobs not given: tilings run in this process while the sweep is short; past SERIAL_S the
    # rest go to worker processes. Either way the rows are those of one process, in rank order
    argv = ["compare", "matmul", "matmul_hoisted", "--hardware", "trn2-core", "--vary", "TN=128,256,512",
            "--json", "--quiet"]
    one = _json(capsys, argv + ["--jobs", "1"])
    assert _json(capsys, argv) == one
    monkeypatch.setattr(parallel, "SERIAL_S", 0.0)  # every sweep "long": one tiling here, five on workers
    assert _json(capsys, argv) == one and len(one) == 6


def test_vary_takes_the_shared_grammar(capsys):
    # TN=128..512:x2 is 128, 256, 512: three rows, as the list would give
    assert main(["compare", "matmul", "--hardware", "trn2-core", "--vary", "TN=128..512:x2", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert sorted(dict(r["params"])["TN"] if isinstance(r["params"], list) else r["params"]["TN"]
                  for r in rows) == [128, 256, 512]
