"""loopsim calibrate: roofs fitted to measured times under T = max(W/P, Q/BW), against closed
forms (synthetic times made from a known sheet's model), and the calibrated sheet it writes."""

import json
import math
from fractions import Fraction

import pytest
from hypothesis import given, settings, strategies as st

from loopsim.analyses import calibrate
from loopsim.targets import hardware
from loopsim.cli.main import main

BW_KNOWN = 250_000_000_000      # the "known sheet": 250 GB/s, 60 TFLOP/s bf16
P_KNOWN = 60_000_000_000_000
#: (spec, set, W, Q) counted by hand: copy moves R*C*2 bytes in and out; matmul as the tutorial's
#: tiles (A reloaded N/TN times, B M/TM times, C written once); projection: x once, W once, y once
KERNELS = [
    ("copy", {}, 0, 2 * 4096 * 4096 * 2),
    ("copy", {"R": 8192}, 0, 2 * 8192 * 4096 * 2),
    ("matmul", {}, 2 * 1024**3, 2 * (1024 * 1024 * 2 + 1024 * 1024 * 8 + 1024 * 1024)),
    ("projection", {}, 2 * 2048 * 4096 * 4096, 2 * (2048 * 4096 + 4096 * 4096 + 2048 * 4096)),
    ("mlp_fused", {}, None, None),
]


def _known_time(W, Q):
    return max(W / P_KNOWN, Q / BW_KNOWN)


def _write(tmp_path, entries, name="m.json"):
    f = tmp_path / name
    f.write_text(json.dumps(entries))
    return str(f)


def _measurements(hw):
    out = []
    for spec, sets, W, Q in KERNELS:
        m = calibrate.measurement_of({"spec": spec, "set": sets, "time_s": 1.0}, hw, spec)
        if W is not None:
            assert (m.W, m.Q) == (W, Q)  # the counts the times are made from, checked by hand
        out.append({"spec": spec, "set": sets, "time_s": _known_time(m.W, m.Q)})
    return out


def test_synthetic_times_recover_the_known_roofs_exactly(tmp_path, capsys):
    hw = hardware.load("trn2-core")
    f = _write(tmp_path, _measurements(hw))
    out = tmp_path / "cal.toml"
    assert main(["calibrate", f, "-H", "trn2-core", "-o", str(out), "--json", "--model", "roofline"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["bw"] == BW_KNOWN and d["flops"]["bf16"]["value"] == P_KNOWN
    assert d["flops"]["bf16"]["fitted"] and not d["flops"]["fp8"]["fitted"]
    # projection and mlp_fused are compute-bound under the known roofs (I = 1024, 1365 > 240)
    bound = [m["bound"] for m in d["measurements"]]
    assert bound == ["memory", "memory", "memory", "compute", "compute"]
    for m in d["measurements"]:
        assert m["ratio"] == pytest.approx(1, rel=1e-12)
        assert m["loo_error"] == pytest.approx(0, abs=1e-12)
    cal = hardware.load(str(out)).with_roofs("measured")
    assert (cal.bw, cal.P("bf16")) == (BW_KNOWN, P_KNOWN)


def test_least_squares_and_leave_one_out_by_hand(tmp_path):
    # three memory-bound copies with noisy times: BW = sum(x^2) / sum(x), x = Q / t; leaving one
    # out refits on the other two
    hw = hardware.load("trn2-core")
    Q = [67108864, 134217728, 67108864]
    t = [230e-6, 450e-6, 240e-6]
    ms = [calibrate.Measurement(f"k{i}", 0, q, "bf16", s) for i, (q, s) in enumerate(zip(Q, t))]
    fit = calibrate.fit(ms, hw)
    x = [Fraction(q) / Fraction(s) for q, s in zip(Q, t)]
    assert fit.bw == round(sum(v * v for v in x) / sum(x))
    for i, r in enumerate(fit.rows):
        rest = [v for j, v in enumerate(x) if j != i]
        bw_i = round(sum(v * v for v in rest) / sum(rest))
        assert r.loo_predicted_s == pytest.approx(Q[i] / bw_i, rel=1e-15)
        assert r.ratio == pytest.approx((Q[i] / fit.bw) / t[i], rel=1e-15)
    assert fit.loo_max == max(abs(r.loo_error) for r in fit.rows)


def test_one_measurement_predicts_its_family(tmp_path, capsys):
    # one measured matmul (M = N = K = 1024) at 3.2x its spec-roof time; the calibrated sheet
    # predicts the larger members of the family, all memory-bound, at the same 3.2x
    hw = hardware.load("trn2-core")
    Q1 = calibrate.measurement_of({"spec": "matmul", "time_s": 1.0}, hw, "m").Q
    t1 = 3.2 * Q1 / hw.bw
    f = _write(tmp_path, [{"spec": "matmul", "time_s": t1}])
    out = tmp_path / "one.toml"
    assert main(["calibrate", f, "-H", "trn2-core", "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert "one measurement" in text and "1.0000" in text
    cal = hardware.load(str(out)).with_roofs("measured")
    assert cal.bw == round(Fraction(Q1) / Fraction(t1))  # BW = Q / t
    rows = []
    for M in (1024, 2048, 4096):
        assert main(["entitle", "matmul", "--set", f"M={M}", "-H", str(out), "--json"]) == 0
        spec_T = json.loads(capsys.readouterr().out)["T_best"]
        assert main(["entitle", "matmul", "--set", f"M={M}", "-H", str(out), "--roofs", "measured",
                     "--json"]) == 0
        d = json.loads(capsys.readouterr().out)
        rows.append((M, spec_T, d["T_best"]))
        assert d["bound"] == "memory" and d["T_best"] == pytest.approx(d["Q"] / cal.bw)
        assert d["T_best"] / spec_T == pytest.approx(hw.bw / cal.bw) == pytest.approx(3.2)
    assert rows[0][2] == pytest.approx(t1)  # the measured kernel itself comes back


def test_the_sheet_inherits_the_base_and_recalibrates(tmp_path, capsys):
    f = _write(tmp_path, [{"spec": "copy", "time_s": 300e-6, "label": "day4 copy"}])
    a, b = tmp_path / "a.toml", tmp_path / "b.toml"
    assert main(["calibrate", f, "-H", "trn1-core", "-o", str(a)]) == 0
    assert main(["calibrate", f, "-H", str(a), "-o", str(b), "--name", "again"]) == 0
    capsys.readouterr()
    base, ca, cb = hardware.load("trn1-core"), hardware.load(str(a)), hardware.load(str(b))
    assert (ca.name, cb.name) == ("a", "again")
    for hw in (ca, cb):
        assert [(v.key, v.value) for v in hw.values if not v.key.startswith("measured.")] == \
            [(v.key, v.value) for v in base.values]
        assert hw.with_roofs("measured").bw == round(Fraction(2 * 4096 * 4096 * 2) / Fraction(300e-6))
        assert "day4 copy" in hw.measured.bw_where and "predicted/measured 1.0000" in hw.measured.bw_where
    text = b.read_text()
    assert text.count("\n[measured]\n") == 1 and text.count("written by loopsim calibrate") == 1


def test_profile_entries(tmp_path, capsys):
    prof = {"summary": [{"total_time": 2e-3, "hardware_flops": 10**9, "transpose_flops": 0,
                         "hbm_read_bytes": 4 * 10**8, "hbm_write_bytes": 10**8}]}
    f = _write(tmp_path, [prof])
    assert main(["calibrate", f, "-H", "trn2-core", "-o", str(tmp_path / "p.toml"), "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["bw"] == 5 * 10**8 // 2 * 1000  # 5e8 bytes / 2 ms = 250 GB/s


@pytest.mark.parametrize("entries,match", [
    ([], "the list of measurements is empty"),
    ([{"spec": "copy"}], "time_s=None must be a positive number"),
    ([{"spec": "copy", "time_s": -1}], "time_s=-1 must be a positive number"),
    ([{"spec": "copy", "time_s": 1, "sets": {}}], "[0].sets={} is not a known key"),
    ([{"spec": "copy", "time_s": 1, "set": {"R": "big"}}], "set={'R': 'big'} must be an object"),
    ([{"spec": "nope", "time_s": 1}], "nope"),
    ([{"total_time": 1e-3}], "no FLOP count"),
    ([3], "expected an object with spec and time_s"),
    ([{"spec": "copy", "time_s": 5e-324}], "the JSON number 5e-324 is subnormal"),
    ([{"W": -1, "Q": 5, "time_s": 1}], "[0].W=-1 must be an integer count from 0 to 2^62"),
    ([{"W": 0, "Q": 5.5, "time_s": 1}], "[0].Q=5.5 must be an integer count"),
    ([{"W": 0, "Q": 10**30, "time_s": 1}], "[0].Q: an integer of 100 bits exceeds 2^62"),
    ([{"spec": "copy", "time_s": 10**400}], "a JSON number of 401 characters"),
    ('[{"spec": "copy", "time_s": 1' + "0" * 5000 + "}]", "a JSON number of 5,001 characters"),
    ("[" * 100_000 + "]" * 100_000, "JSON nested 100,000 levels deep; loopsim reads at most 64"),
])
def test_bad_measurement_files(tmp_path, capsys, entries, match):
    if isinstance(entries, str):  # raw text json.dumps would not make
        (tmp_path / "m.json").write_text(entries)
        f = str(tmp_path / "m.json")
    else:
        f = _write(tmp_path, entries)
    out = tmp_path / "x.toml"
    assert main(["calibrate", f, "-H", "trn2-core", "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert match in err and len(err.strip().splitlines()) == 1
    assert not out.exists()


def test_predict_side_by_side(tmp_path, capsys):
    # one matmul measured at 3.2x its spec-roof time: its family is predicted at 3.2x the bound
    # while memory-bound; a compute-bound kernel keeps the (unfitted) spec P and says so
    hw = hardware.load("trn2-core")
    Q1 = calibrate.measurement_of({"spec": "matmul", "time_s": 1.0}, hw, "m").Q
    f = _write(tmp_path, [{"spec": "matmul", "time_s": 3.2 * Q1 / hw.bw}])
    argv = ["calibrate", f, "-H", "trn2-core", "-o", str(tmp_path / "s.toml"), "--model", "roofline",
            "--predict", "matmul M=4096 N=4096", "--predict", "projection"]
    assert main(argv + ["--json"]) == 0
    mm, proj = json.loads(capsys.readouterr().out)["predictions"]
    Q = 2 * (4096 * 1024 * 8 + 1024 * 4096 * 32 + 4096 * 4096)  # A x N/TN, B x M/TM, C once
    assert mm["Q"] == Q and mm["limit"] == "memory" and mm["limit_fitted"]
    assert mm["T_predicted"] == pytest.approx(3.2 * Q / hw.bw) == pytest.approx(3.2 * mm["T_spec_bound"])
    assert proj["limit"] == "compute" and not proj["limit_fitted"]
    assert proj["T_predicted"] == proj["T_spec_bound"] == proj["W"] / hw.P("bf16")
    assert main(argv) == 0
    assert "compute (spec roof: not fitted, still a bound)" in capsys.readouterr().out


# ---------------------------------------------------------------------------------------------
# a measurements file is data: a kernel reference in it never runs unless the user says so


def test_a_kernel_reference_in_a_measurements_file_does_not_run(tmp_path, capsys, monkeypatch):
    # issue 25 row 1: evil.py writes EXECUTED when run; the file naming it must be refused and the
    # kernel never imported
    monkeypatch.chdir(tmp_path)
    (tmp_path / "evil.py").write_text('open("EXECUTED", "w").write("x")\n\ndef f():\n    pass\n')
    f = _write(tmp_path, [{"spec": "evil.py::f", "time_s": 1e-4}])
    out = tmp_path / "c.toml"
    assert main(["calibrate", f, "-H", "trn2-core", "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "[0].spec='evil.py::f' names a kernel file" in err and "--allow-kernel-refs" in err
    assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / "EXECUTED").exists() and not out.exists()


def test_allow_kernel_refs_runs_the_kernel_file(tmp_path, capsys, monkeypatch):
    # with the flag the user has said the file is code: it is imported (and traced)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "evil.py").write_text('open("EXECUTED", "w").write("x")\n\ndef f():\n    pass\n')
    f = _write(tmp_path, [{"spec": "evil.py::f", "time_s": 1e-4}])
    main(["calibrate", f, "-H", "trn2-core", "-o", str(tmp_path / "c.toml"), "--allow-kernel-refs"])
    err = capsys.readouterr().err
    assert (tmp_path / "EXECUTED").exists()
    assert "names a kernel file" not in err and len(err.strip().splitlines()) <= 1


# ---------------------------------------------------------------------------------------------
# calibration that chooses its roofs and warns (issue 23 point 3)

SPEC_BW, SPEC_P = 375_000_000_000, 78_643_200_000_000          # trn2-core bf16
#: a "known sheet" whose ridge (0.4 P / 0.5 BW = 167.8) is below the spec's (209.7): the tutorial's
#: block-free kernel (I = 186.2) is compute-bound on it, memory-bound under the spec roofs
BW_T, P_T = SPEC_BW // 2, SPEC_P * 2 // 5
W_TUT = 2 * 4096 * 2048 * 1024 // 2 * 2    # 17,179,869,184 = 2 M N K at M=4096, N=2048, K=1024
Q_TUT = {"1_tiled": 184_549_376, "2_hoist_load": 159_383_552, "3_block_free_dimension": 92_274_688,
         "4_fully_optimized": 37_748_736}


def _tut(k):
    return {"spec": f"nki_tutorial/{k}", "time_s": max(Fraction(W_TUT, P_T), Fraction(Q_TUT[k], BW_T))}


def _tut_entries(*ks):
    return [{**_tut(k), "time_s": float(_tut(k)["time_s"])} for k in ks]


def test_tutorial_counts_by_hand():
    hw = hardware.load("trn2-core")
    assert (hw.bw, hw.P("bf16")) == (SPEC_BW, SPEC_P)
    for k, q in Q_TUT.items():
        m = calibrate.measurement_of({"spec": f"nki_tutorial/{k}", "time_s": 1.0}, hw, k)
        assert (m.W, m.Q) == (W_TUT, q)
    # 3: I = 186.2 is above the known ridge 167.8 and below the spec ridge 209.7
    assert Fraction(P_T, BW_T) < Fraction(W_TUT, Q_TUT["3_block_free_dimension"]) < Fraction(SPEC_P, SPEC_BW)


def test_a_memory_and_a_compute_measurement_fit_the_right_roofs(tmp_path, capsys):
    # hoist_load (memory-bound on the known sheet) and block-free (compute-bound there, memory-bound
    # under the spec roofs): assigned by in-sample error, both roofs recovered exactly
    f = _write(tmp_path, _tut_entries("2_hoist_load", "3_block_free_dimension"))
    argv = ["calibrate", f, "-H", "trn2-core", "-o", str(tmp_path / "c.toml"), "--json", "--model", "roofline",
            "--predict", "nki_tutorial/4_fully_optimized", "--predict", "nki_tutorial/1_tiled"]
    assert main(argv) == 0
    d = json.loads(capsys.readouterr().out)
    assert [m["bound"] for m in d["measurements"]] == ["memory", "compute"]
    assert d["bw"] == round(Fraction(Q_TUT["2_hoist_load"]) / Fraction(_tut_entries("2_hoist_load")[0]["time_s"]))
    assert d["bw"] == pytest.approx(BW_T, rel=1e-12)
    assert d["flops"]["bf16"]["value"] == pytest.approx(P_T, rel=1e-12)
    assert d["assignments_tried"] == 3 and d["rms_error"] == pytest.approx(0, abs=1e-12)
    # the other two kernels come back as the known sheet times them
    for p, k in zip(d["predictions"], ("4_fully_optimized", "1_tiled")):
        assert p["T_predicted"] == pytest.approx(float(_tut(k)["time_s"]), rel=1e-12)
        assert p["rests_on_spec"] == [] and p["how"].endswith("(fitted)")
    # two measurements, two roofs: each rests on one, which the report says
    assert d["warnings"] == [
        "bw rests on one measurement (nki_hoist_load): the fit reproduces it exactly and nothing "
        "else tests it",
        "P.bf16 rests on one measurement (nki_block_free): the fit reproduces it exactly "
        "and nothing else tests it"]


def test_a_compute_only_set_warns_that_memory_rests_on_the_spec(tmp_path, capsys):
    f = _write(tmp_path, _tut_entries("4_fully_optimized"))
    out = tmp_path / "c.toml"
    argv = ["calibrate", f, "-H", "trn2-core", "-o", str(out), "--predict", "nki_tutorial/1_tiled",
            "--model", "roofline"]
    assert main(argv + ["--json"]) == 0
    cap = capsys.readouterr()
    d = json.loads(cap.out)
    assert not d["bw_fitted"] and d["bw"] == SPEC_BW and d["flops"]["bf16"]["fitted"]
    assert any(w.startswith("no measurement is memory-bound: bw stays the spec value 375 GB/s")
               for w in d["warnings"])
    assert "loopsim: warning: no measurement is memory-bound" in cap.err
    (p,) = d["predictions"]
    # W/P_fit = 546.2 µs > Q/BW_spec = 492.1 µs: compute binds, but the memory roof is the spec's
    assert p["limit"] == "compute" and p["rests_on_spec"] == ["memory"]
    assert "its memory roof is the spec one, not fitted: T is at least this" in p["how"]
    assert p["T_predicted"] == pytest.approx(W_TUT / P_T)
    assert p["T_predicted"] < float(_tut("1_tiled")["time_s"])  # the true time: Q / BW_T = 984 µs
    out.unlink()
    assert main(argv + ["--strict"]) == 1
    text = capsys.readouterr().out
    assert "--strict: no sheet written" in text and not out.exists()
    assert "its memory roof is the spec one" in text


def test_a_residual_over_the_threshold_warns(tmp_path, capsys):
    # two copies on one bandwidth, a third 25% slow: BW = sum(x^2)/sum(x) leaves it off by > 10%
    Q = 2 * 4096 * 4096 * 2
    ts = [Q / BW_T, 2 * Q / BW_T, 1.25 * Q / BW_T]
    f = _write(tmp_path, [{"spec": "copy", "time_s": ts[0], "label": "a"},
                          {"spec": "copy", "set": {"R": 8192}, "time_s": ts[1], "label": "b"},
                          {"spec": "copy", "time_s": ts[2], "label": "slow"}])
    assert main(["calibrate", f, "-H", "trn2-core", "-o", str(tmp_path / "c.toml"), "--json", "--model", "roofline"]) == 0
    d = json.loads(capsys.readouterr().out)
    x = [Fraction(1), Fraction(1), Fraction(4, 5)]           # (Q_i / t_i) / BW_T
    bw = sum(v * v for v in x) / sum(x) * BW_T
    resid = {m["label"]: m["residual"] for m in d["measurements"]}
    assert d["bw"] == round(bw)
    assert resid["slow"] == pytest.approx(float(x[2] * BW_T / bw) - 1)   # 0.8 / (2.64/2.8) - 1 = -15.2%
    (w,) = [w for w in d["warnings"] if "threshold" in w]
    assert w.startswith("slow: predicted/measured 0.8485 (-15.2%)") and "10% threshold" in w
    assert main(["calibrate", f, "-H", "trn2-core", "-o", str(tmp_path / "c.toml"),
                 "--threshold", "0.2", "--json", "--model", "roofline"]) == 0
    assert not [w for w in json.loads(capsys.readouterr().out)["warnings"] if "threshold" in w]


def test_a_fitted_roof_above_spec_ranks_last_and_warns():
    # one copy measured faster than the spec bandwidth allows: no assignment avoids it, it warns
    hw = hardware.load("trn2-core")
    Q = 2 * 4096 * 4096 * 2
    fit = calibrate.fit([calibrate.Measurement("fast", 0, Q, "bf16", Q / (2 * SPEC_BW))], hw)
    assert fit.bw == 2 * SPEC_BW
    assert any(w.startswith("fitted bw = 750,000,000,000 is 2.000 x its spec value") for w in fit.warnings)


def test_leave_one_out_over_the_four_tutorial_kernels():
    # times from the known sheet: every kernel left out is predicted from the other three
    hw = hardware.load("trn2-core")
    ms = [calibrate.Measurement(k, W_TUT, q, "bf16", float(_tut(k)["time_s"])) for k, q in Q_TUT.items()]
    fit = calibrate.fit(ms, hw)
    assert [r.bound for r in fit.rows] == ["memory", "memory", "compute", "compute"]
    assert fit.loo_max == pytest.approx(0, abs=1e-12) and fit.warnings == ()


@given(st.lists(st.tuples(st.integers(1, 10**12), st.integers(10**3, 10**10)), min_size=1, max_size=6))
def test_synthetic_times_are_recovered_whatever_the_kernels(kernels):
    # any kernels timed by one sheet (roofs below spec): the chosen fit reproduces every time
    hw = hardware.load("trn2-core")
    ms = [calibrate.Measurement(f"k{i}", W, Q, "bf16", max(W / P_T, Q / BW_T))
          for i, (W, Q) in enumerate(kernels)]
    fit = calibrate.fit(ms, hw)
    for r in fit.rows:
        assert r.ratio == pytest.approx(1, rel=1e-9)


def test_a_second_roof_must_halve_the_error():
    # the fidelity.md example: two copies and a matmul (I = 93, memory-bound under the spec). Giving
    # the matmul its own compute roof fits it exactly and lowers the in-sample RMS, but not by half:
    # the one-roof fit is kept
    hw = hardware.load("trn2-core")
    Q = [67_108_864, 134_217_728, 46_137_344]
    t = [230e-6, 450e-6, 160e-6]
    ms = [calibrate.Measurement("copy", 0, Q[0], "bf16", t[0]),
          calibrate.Measurement("copy R=8192", 0, Q[1], "bf16", t[1]),
          calibrate.Measurement("matmul M=2048", 2 * 2048 * 1024 * 1024, Q[2], "bf16", t[2])]
    fit = calibrate.fit(ms, hw)
    x = [Fraction(q) / Fraction(s) for q, s in zip(Q, t)]
    one = round(sum(v * v for v in x) / sum(x))
    rms_one = math.sqrt(sum((q / one / s - 1) ** 2 for q, s in zip(Q, t)) / 3)
    two = round(sum(v * v for v in x[:2]) / sum(x[:2]))        # the copies alone
    rms_two = math.sqrt(sum((q / two / s - 1) ** 2 for q, s in zip(Q[:2], t[:2])) / 3)
    assert rms_one * calibrate.GAIN < rms_two < rms_one        # 0.70% < 0.90% < 1.40%
    assert fit.bw == one and [r.bound for r in fit.rows] == ["memory"] * 3
    assert fit.rms == pytest.approx(rms_one)


def test_dma_fixed_cost_is_recovered_from_synthetic_times():
    # t = Q / 300 GB/s + transfers x 2 µs, three copies with different bytes per transfer
    hw = hardware.load("trn2-core")
    BW, C = 300e9, 2e-6
    rows = [(67_108_864, 272), (134_217_728, 272), (67_108_864, 4096)]
    ms = [calibrate.Measurement(f"k{i}", 0, q, "bf16", q / BW + n * C, n) for i, (q, n) in enumerate(rows)]
    fc = calibrate.fit(ms, hw).fixed_cost
    assert isinstance(fc, calibrate.FixedCost) and fc.measurements == 3
    assert fc.bw == pytest.approx(BW, rel=1e-9) and fc.c_s == pytest.approx(C, rel=1e-9)
    assert fc.rms == pytest.approx(0, abs=1e-12) and fc.rms_plain > 0.1
    assert fc.efficiency == pytest.approx(BW / 368e9)
    # two measurements cannot test a two-parameter memory side
    assert calibrate.fit(ms[:2], hw).fixed_cost.startswith("not fitted: it needs 3")


def test_the_nest_gives_each_measurement_its_transfers():
    hw = hardware.load("trn2-core")
    m = calibrate.measurement_of({"spec": "matmul", "time_s": 1.0}, hw, "m")
    assert m.transfers == 272   # 128 loads of A, 128 of B, 16 stores of C (fidelity.md's dma report)


def test_a_time_on_an_unfitted_roof_is_called_a_bound(tmp_path, capsys):
    # one memory-bound matmul fits bw only; projection is compute-bound on the spec P, which the
    # calibrated sheet keeps: its T is a bound, and entitle says so instead of "predicted"
    f = _write(tmp_path, [{"spec": "matmul", "time_s": 200e-6}])
    out = tmp_path / "one.toml"
    assert main(["calibrate", f, "-H", "trn2-core", "-o", str(out)]) == 0
    capsys.readouterr()
    argv = ["entitle", "projection", "-H", str(out), "--roofs", "measured"]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "T (bound)" in text and "T (predicted)" not in text
    assert "the compute roof that sets T was not fitted by calibrate" in text
    assert main(argv + ["--json"]) == 0
    assert json.loads(capsys.readouterr().out)["limit_roof_fitted"] is False
    assert main(["entitle", "matmul", "-H", str(out), "--roofs", "measured", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    # matmul itself: memory-bound on the fitted bw, a prediction; but its compute side is spec
    assert d["limit"] == "memory" and d["limit_roof_fitted"] is True
    assert d["T_caveat"] == "its compute roof is the spec one, not fitted: T is at least this"
    # copy has no FLOPs: nothing rests on the spec P
    assert main(["entitle", "copy", "-H", str(out), "--roofs", "measured", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["limit_roof_fitted"] is True and d["T_caveat"] is None


def test_a_lower_ceiling_on_calibrated_roofs_is_a_bound():
    # a ceiling computed from the sheet's documented numbers (the Tensor Engine's) is never fitted
    from loopsim.model.measured import roof_status

    cal = hardware.load("trn2-core").with_roofs("spec")
    assert roof_status(cal, "tensor_engine", "bf16", 1, 1) == (True, "")  # spec roofs: as before
    class Measured:  # the three fields roof_status reads of a calibrated sheet
        roofs = "measured"

        @staticmethod
        def roof_unfitted(limit, dtype):
            return False
    ok, why = roof_status(Measured, "tensor_engine", "bf16", 1, 1)
    assert not ok and why.startswith("the tensor_engine ceiling that sets T is computed from the "
                                     "sheet's documented numbers")


def test_calibrate_json_output_is_an_input_again(tmp_path, capsys):
    # calibrate --json's measurements rows carry W, Q, time_s and a label: calibrate reads them back
    # (same fit) and --measured matches them to tilings by label
    f = _write(tmp_path, [{"spec": "copy", "time_s": 230e-6, "label": "copy R=4096"},
                          {"spec": "copy", "set": {"R": 8192}, "time_s": 450e-6, "label": "copy R=8192"}])
    assert main(["calibrate", f, "-H", "trn2-core", "-o", str(tmp_path / "a.toml"), "--json"]) == 0
    first = capsys.readouterr().out
    (tmp_path / "fit.json").write_text(first)
    assert main(["calibrate", str(tmp_path / "fit.json"), "-H", "trn2-core", "-o",
                 str(tmp_path / "b.toml"), "--json"]) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["bw"] == json.loads(first)["bw"] == round(
        (sum(x * x for x in (Fraction(67108864) / Fraction(230e-6), Fraction(134217728) / Fraction(450e-6))))
        / (Fraction(67108864) / Fraction(230e-6) + Fraction(134217728) / Fraction(450e-6)))
    assert [m["transfers"] for m in again["measurements"]] == [m["transfers"] for m in json.loads(first)["measurements"]]
    assert main(["compare", "copy", "--vary", "R=4096,8192", "-H", "trn2-core", "--measured",
                 str(tmp_path / "fit.json"), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert {r["label"]: r["measured"]["T"] for r in rows} == {"copy R=4096": 230e-6, "copy R=8192": 450e-6}


@given(st.lists(st.tuples(st.integers(0, 10**12), st.integers(1, 10**10), st.floats(1e-7, 1e-2),
                          st.sampled_from(["bf16", "fp8"])), min_size=1, max_size=5))
def test_the_choice_is_never_beaten_by_a_simpler_assignment(kernels):
    # any times: the chosen assignment has the lowest in-sample RMS among those fitting as few
    # roofs or fewer (within its class of roofs above spec), and every row is predicted
    hw = hardware.load("trn2-core")
    ms = [calibrate.Measurement(f"k{i}", W, Q, d, t) for i, (W, Q, t, d) in enumerate(kernels)]
    spec = hw.with_roofs("spec")
    best, cands = calibrate._choose(ms, spec.bw, dict(spec.flops))
    for c in cands:
        if len(c.above_spec) == len(best.above_spec) and c.n_fitted <= best.n_fitted:
            assert best.rms <= c.rms + 1e-9
    fit = calibrate.fit(ms, hw)
    assert len(fit.rows) == len(ms) and all(r.predicted_s > 0 for r in fit.rows)


def test_too_many_measurements_is_one_line():
    hw = hardware.load("trn2-core")
    ms = [calibrate.Measurement(f"k{i}", 0, 10**6, "bf16", 1e-5) for i in range(calibrate.MAX_MEASUREMENTS + 1)]
    with pytest.raises(calibrate.InputError, match="501 measurements, more than the 500 it fits"):
        calibrate.fit(ms, hw)


def test_a_calibrated_sheet_gives_back_the_time_it_was_fitted_to(tmp_path, capsys):
    # one memory-bound matmul at 200 µs: on the calibrated sheet's measured roofs entitle predicts
    # 200 µs for it (bw = Q / t), not a timeline computed from the spec's DMA constants
    f = _write(tmp_path, [{"spec": "matmul", "time_s": 200e-6}])
    out = tmp_path / "one.toml"
    assert main(["calibrate", f, "-H", "trn2-core", "-o", str(out)]) == 0
    capsys.readouterr()
    assert main(["entitle", "matmul", "-H", str(out), "--roofs", "measured", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["limit"] == "memory" and d["T"] == pytest.approx(200e-6, rel=1e-9)
    assert "timeline" not in d["times"] and "dma" not in d["times"]


def test_a_sheet_without_a_dma_throughput_curve_still_times(tmp_path, capsys):
    # a calibrated sheet written before sheets had a [dma] throughput curve: the timeline runs
    # without derating (as the sheet's dma_efficiency says), one verdict, no traceback
    src = calibrate.base_text(hardware.load("trn2-core"))[0]
    lines = src.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith("throughput = "))
    end = next(i for i in range(start + 1, len(lines)) if not lines[i].startswith(" "))
    old = "\n".join(lines[:start] + lines[end:]).replace('name = "trn2-core"', 'name = "old"', 1)
    (tmp_path / "old.toml").write_text(old + "\n")
    assert hardware.load(str(tmp_path / "old.toml")).dma_curve == ()
    assert main(["entitle", "matmul", "-H", str(tmp_path / "old.toml"), "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["T"] >= d["T_best"] and d["limit"] in d["times"]


@settings(max_examples=40, deadline=None)
@given(kernels=st.lists(st.tuples(st.integers(0, 10**12), st.integers(0, 10**10),
                                  st.floats(1e-6, 1e-2), st.sampled_from(["bf16", "fp8"])),
                        min_size=1, max_size=5).filter(lambda ks: all(W or Q for W, Q, _, _ in ks)))
def test_no_report_calls_a_roof_fitted_that_no_measurement_binds(kernels, tmp_path_factory):
    # any hand counts and times: a roof is labelled fitted (the fit, its JSON, the written sheet's
    # [measured] section as the sheet reads it back, and every report on that sheet) only when a
    # measurement binds it; every other roof keeps its spec value and is called not fitted
    from loopsim.model import measured

    hw = hardware.load("trn2-core")
    spec = hw.with_roofs("spec")
    ms = [calibrate.Measurement(f"k{i}", W, Q, d, t) for i, (W, Q, t, d) in enumerate(kernels)]
    fit = calibrate.fit(ms, hw, model="roofline")
    bound_mem = any(r.bound == "memory" for r in fit.rows)
    bound_dt = {r.measurement.dtype for r in fit.rows if r.bound == "compute"}
    assert fit.bw_fitted == bound_mem
    assert {d for d, _, f in fit.flops if f} == bound_dt
    if not fit.bw_fitted:
        assert fit.bw == spec.bw
    for d, p, f in fit.flops:
        if not f:
            assert p == dict(spec.flops)[d]
    d = fit.as_dict()
    assert d["bw_fitted"] == bound_mem
    text, origin = calibrate.base_text(hw)
    out = tmp_path_factory.mktemp("s") / "cal.toml"
    out.write_text(calibrate.sheet_text(fit, text, origin, "cal", hw))
    cal = hardware.load(str(out)).with_roofs("measured")
    assert cal.roof_unfitted("memory", "bf16") == (not bound_mem)
    for dt in ("bf16", "fp8"):
        assert cal.roof_unfitted("compute", dt) == (dt not in bound_dt)
        # a time an unfitted roof sets is a bound in every report, never a prediction
        for limit in ("memory", "compute"):
            predicted, _ = measured.roof_status(cal, limit, dt, 1, 1)
            assert predicted == (not cal.roof_unfitted(limit, dt))
