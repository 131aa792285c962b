"""Measured points: the Day 4 bandwidth example on the copy kernel, MFU, profiler field names and
shapes, disagreements, and bad measured files."""

import json

import pytest
from hypothesis import given, strategies as st

from loopsim.model import measured
from loopsim.cli.main import main
from loopsim.model.entitle import Entitlement
from loopsim.base.errors import InputError
from loopsim.base.fmt import fmt_time


def _run(capsys, argv, rc=0):
    assert main(argv) == rc
    return json.loads(capsys.readouterr().out)


def test_day4_copy_bandwidth(tmp_path, capsys):
    # copy of a bf16 4096 x 4096 tensor HBM -> SBUF -> HBM, measured at 200 µs (numbers of our choosing)
    bytes_in = 4096 * 4096 * 2            # 33,554,432 read from HBM
    bytes_out = 4096 * 4096 * 2           # 33,554,432 written back
    Q = bytes_in + bytes_out              # 67,108,864
    T = 200e-6
    achieved = Q / T                      # 335.54432 GB/s
    bw = 3e12 / 8                         # trn2-core: 3 TB/s per device over 8 cores = 375 GB/s
    f = tmp_path / "day4.json"
    f.write_text(json.dumps({"time_s": T}))
    d = _run(capsys, ["entitle", "copy", "--hardware", "trn2-core", "--measured", str(f), "--json"])
    assert d["W"] == 0 and d["Q"] == Q
    assert d["tensors"]["X"]["read_bytes"] == bytes_in and d["tensors"]["Y"]["write_bytes"] == bytes_out
    m = d["measured"]
    assert m["T"] == T
    assert m["achieved_BW"] == pytest.approx(335.54432e9)
    assert m["BW_share"] == pytest.approx(achieved / bw) == pytest.approx(0.894785, rel=1e-5)
    assert m["gap"] == pytest.approx(T - Q / bw)            # 200 - 178.957 = 21.04 µs
    assert m["fraction_of_entitlement"] == pytest.approx((Q / bw) / T)
    assert main(["entitle", "copy", "--hardware", "trn2-core", "--measured", str(f)]) == 0
    out = capsys.readouterr().out
    assert "335.5 GB/s" in out and "89.5% of BW" in out


def test_compute_bound_mfu_and_profile_disagreements(tmp_path, capsys):
    # NKI tutorial, fully optimized, trn1-core: W = 2 M N K; P = 128*128*2*2.8 GHz
    M, N, K = 4096, 2048, 1024
    W = 2 * M * N * K
    Q = 2 * (2 * K * M + K * N + M * N)   # lhsT twice, rhs once, result once
    P = 128 * 128 * 2 * 2_800_000_000
    T = 250e-6
    prof = {"Overall Summary": {"Total Time": 0.0003, "Raw Flops": W, "Transpose Flops": 0,
                                "HBM read bytes": int(Q * 0.82) - M * N * 2,
                                "HBM write bytes": M * N * 2,
                                "Mm Arithmetic Intensity": W / (Q * 0.82),
                                "time_s": T}}
    f = tmp_path / "prof.json"
    f.write_text(json.dumps(prof))
    # the comparison is the subject here; whether the spec's PSUM fits is its own test
    fits = main(["entitle", "nki_tutorial/4_fully_optimized", "--hardware", "trn1-core", "--json"])
    capsys.readouterr()
    d = _run(capsys, ["entitle", "nki_tutorial/4_fully_optimized", "--hardware",
                      "trn1-core", "--measured", str(f), "--json"], rc=fits)
    m = d["measured"]
    assert d["bound"] == "compute" and m["T"] == T   # time_s wins over total_time
    assert m["MFU"] == pytest.approx(W / T / P)   # 0.7490
    lines = {x["what"]: x["line"] for x in m["disagreements"]}
    assert set(lines) == {"Q", "I"}                # W agrees exactly
    assert lines["Q"].startswith("the profile moved 18% fewer bytes than the nest implies")
    assert "22% higher" in lines["I"]             # 1/0.82 = 1.2195


def test_profile_field_names_and_shapes():
    legacy = {"summary": [{"total_time": 0.017, "hardware_flops": 10, "transpose_flops": 4,
                           "hbm_read_bytes": 6, "hbm_write_bytes": 2}]}
    p = measured.parse(legacy)
    assert p.time_s == 0.017 and p.flops == 6 and p.Q == 8
    ui = {"Summary": {"Total Time": 1.5, "Hardware Flops": 7, "HBM Read Bytes": 3,
                      "Peak Flops Bandwidth Ratio": 223.78}}
    p = measured.parse(ui)
    assert (p.time_s, p.hardware_flops, p.hbm_read_bytes, p.Q) == (1.5, 7, 3, None)
    assert measured.parse({"time_s": 2, "unknown_metric": "x"}).time_s == 2.0


def test_scope_mismatch_is_reported_through_the_ridge():
    e = Entitlement(10**9, 10**7, 157e12, 0.75e12)  # an LNC=2 sheet: ridge 209.3
    c = measured.compare(e, measured.Profile(1e-3, "p", peak_flops_bandwidth_ratio=109.8))
    (d,) = c.disagreements
    assert d.what == "ridge" and "48% lower" in d.line and "scope" in d.line


def test_one_sided_byte_counts_compare_reads_and_writes():
    e = Entitlement(100, 300, 1e12, 1e9)
    c = measured.compare(e, measured.Profile(1.0, "p", hbm_read_bytes=100), read_bytes=200,
                         write_bytes=100)
    (d,) = c.disagreements
    assert d.what == "Q read" and d.line.startswith("the profile read 50% fewer HBM bytes")


@given(W=st.integers(0, 10**15), Q=st.integers(1, 10**12), T=st.floats(1e-9, 10.0))
def test_identities(W, Q, T):
    e = Entitlement(W, Q, 78.6432e12, 375e9)
    c = measured.compare(e, measured.Profile(T, "p"))
    assert c.gap == pytest.approx(T - e.T_best)
    assert c.fraction_of_entitlement * T == pytest.approx(e.T_best)
    assert c.achieved_bw * T == pytest.approx(Q)
    assert c.mfu * T * e.P == pytest.approx(W, rel=1e-9, abs=1e-6)
    assert c.disagreements == ()


@pytest.mark.parametrize("content,match", [
    ({"hbm_read_bytes": 5}, "no measured time: expected key time_s"),
    ({"time_s": -1e-3}, "time_s=-0.001 must be a positive number"),
    ({"time_s": 0}, "time_s=0 must be a positive number"),
    ({"time_s": "1e-3"}, "time_s='1e-3' must be a positive number"),
    ({"time_s": True}, "time_s=True must be a positive number"),
    ({"time_s": 1e-3, "hbm_read_bytes": "many"}, "hbm_read_bytes='many' must be a number"),
    ({"time_s": 1e-3, "Raw Flops": 1.5}, "Raw Flops=1.5 must be a whole number"),
    ({"time_s": 1e-3, "hbm_write_bytes": -2}, "hbm_write_bytes=-2 must be >= 0"),
    ([1, 2], "expected a JSON object"),
    ({"time_s": 1e-3, "hardware_flops": 10**400}, "a JSON number of 401 characters"),
    ('{"time_s": 1' + "0" * 5000 + "}", "a JSON number of 5,001 characters"),
    ("[" * 100_000 + "]" * 100_000, "JSON nested 100,000 levels deep; loopsim reads at most 64"),
    ('{"time_s": 1e-3, "pad": "' + "x" * (1 << 20) + '"}', "the JSON file is larger than 1,048,576 bytes"),
    ({"time_s": 1e-3, "instruction": [{"nki_source_location": 3, "duration": 1}]},
     "instruction[0]: nki_source_location=3, duration=1: expected a 'file.py:LINE' string"),
])
def test_bad_measured_files(tmp_path, capsys, content, match):
    f = tmp_path / "m.json"
    f.write_text(content if isinstance(content, str) else json.dumps(content))
    assert main(["entitle", "matmul", "--hardware", "trn2-core", "--measured", str(f)]) == 2
    err = capsys.readouterr().err
    assert match in err and f"--measured {f}" in err and len(err.strip().splitlines()) == 1


def test_unreadable_and_malformed_measured_files(tmp_path, capsys):
    f = tmp_path / "m.json"
    f.write_text("{time_s: 1")
    assert main(["entitle", "matmul", "--hardware", "trn2-core", "--measured", str(f)]) == 2
    assert "malformed JSON" in capsys.readouterr().err
    assert main(["entitle", "matmul", "--hardware", "trn2-core", "--measured",
                 str(tmp_path / "none.json")]) == 2
    assert "cannot read" in capsys.readouterr().err


def test_compare_and_plot_take_labelled_measured_files(tmp_path, capsys):
    f = tmp_path / "m.json"
    f.write_text(json.dumps({"time_s": 1e-4}))
    d = _run(capsys, ["compare", "matmul", "--hardware", "trn2-core", "--vary", "TN=256,512",
                      "--measured", f"matmul TN=512={f}", "--json"])
    (row,) = [r for r in d["rows"] if "measured" in r]
    assert row["varied"] == {"TN": 512} and row["measured"]["T"] == 1e-4
    assert main(["compare", "matmul", "--hardware", "trn2-core", "--vary", "TN=256,512",
                 "--measured", str(f)]) == 2
    assert "say which one it measures" in capsys.readouterr().err
    out = tmp_path / "m.png"
    assert main(["plot", "matmul", "--hardware", "trn2-core", "--measured", str(f), "-o", str(out)]) == 0
    assert out.stat().st_size > 5000


# ---------------------------------------------------------------------------------------------
# the gap table (issue 23 point 2): T_best, predicted T, measured T, the gap in named causes


def _parts(m):
    return {g["cause"]: g["seconds"] for g in m["gap_table"]}


def test_gap_table_of_a_profiled_copy(tmp_path, capsys):
    # copy (bf16 4096 x 4096 in and out) on trn1-core: Q = 67,108,864 bytes; T_best = Q / 410 GB/s.
    # The predicted T is the verdict's (here the timeline's, read from entitle --json, never
    # recomputed); its excess over T_best is split as the timeline splits it. The profile: 780 µs
    # active, DMA busy 700 µs, 134.7 MB moved
    Q, BW = 67_108_864, 410e9
    prof = {"total_time": 2.64e-3, "total_active_time": 780e-6, "dma_active_time": 700e-6,
            "hbm_read_bytes": 67_600_000, "hbm_write_bytes": 67_100_000}
    f = tmp_path / "p.json"
    f.write_text(json.dumps(prof))
    d = _run(capsys, ["entitle", "copy", "-H", "trn1-core", "--measured", str(f), "--json"])
    m = d["measured"]
    T_pred = d["T"]
    assert m["T_best"] == pytest.approx(Q / BW) and m["T_predicted"] == T_pred
    assert m["predicted_limit"] == d["limit"]
    parts = _parts(m)
    names = {"fixed_cost": "fixed cost", "small_transfers": "small transfers",
             "dma_rate": "DMA peak below BW", "no_overlap": "no overlap",
             "slower_engine": "slower engine", "te_underfill": "Tensor Engine under-fill",
             "extra_bytes": "extra bytes"}
    predicted = {names[k]: v for k, v in d["timeline"]["copy"]["gap"].items()} \
        if d["limit"] == "timeline" else {}
    assert sum(predicted.values()) == pytest.approx(T_pred - Q / BW)
    # the measured part by hand: DMA busiest at 700 µs, so no overlap = 780 - 700 µs; the extra
    # 67,591,136 bytes at the predicted memory-side rate (the slowest of Q/BW, DMA, transfers)
    side = max(d["times"]["memory"], d["times"].get("dma", 0), d["times"].get("dma_transfers", 0))
    extra = (134_700_000 - Q) * side / Q
    slower = 700e-6 - T_pred - extra
    want = dict(predicted)
    for cause, sec in (("no overlap", 80e-6), ("extra bytes", extra), ("slower engine", slower),
                       ("unexplained", 0.0)):
        want[cause] = want.get(cause, 0.0) + sec
    assert parts == {k: pytest.approx(v, abs=1e-15) for k, v in want.items()}
    assert sum(parts.values()) == pytest.approx(780e-6 - Q / BW) == pytest.approx(m["gap"])
    assert m["fraction_of_predicted"] == pytest.approx(T_pred / 780e-6)
    # per engine: the DMA's measured 700 µs of the 780 µs window beside its predicted busy time
    (dma,) = [r for r in m["engines"] if r["engine"] == "dma"]
    assert dma["measured_active_share"] == pytest.approx(700 / 780)
    if d["limit"] == "timeline":  # the timeline's busy time, its share of the predicted T
        busy = d["timeline"]["copy"]["engines"]["dma"]["busy_s"]
        assert dma["predicted_busy_s"] == busy and dma["predicted_busy_share"] == pytest.approx(busy / T_pred)
    assert main(["entitle", "copy", "-H", "trn1-core", "--measured", str(f)]) == 0
    out = capsys.readouterr().out
    assert f"gap table           T_best 163.7 µs, predicted T {fmt_time(T_pred)} ({d['limit']}), " \
        "measured T 780 µs" in out
    assert "    no overlap                       80 µs" in out


def test_gap_table_idle_time_is_fixed_cost(tmp_path, capsys):
    # timed by total_exec_time (no time_s): the window's idle part against total_active_time
    prof = {"total_exec_time": 1e-3, "total_active_time": 0.9e-3}
    f = tmp_path / "p.json"
    f.write_text(json.dumps(prof))
    d = _run(capsys, ["entitle", "copy", "-H", "trn2-core", "--measured", str(f), "--json"])
    m, parts = d["measured"], _parts(d["measured"])
    assert m["T"] == 0.9e-3  # the active window is T: no idle time of the window is counted
    assert parts.get("fixed cost", 0.0) == pytest.approx(
        d["timeline"]["copy"]["gap"].get("fixed_cost", 0.0))  # only the timeline's predicted one
    g = measured.compare(Entitlement(0, 10**6, 1e12, 1e9),
                         measured.parse({"total_exec_time": 1e-3, "time_s": 1e-3,
                                         "total_active_time": 0.9e-3}))
    parts = {p.cause: p.seconds for p in g.gap_table()}
    # T_best = 1e6 / 1e9 = 1 ms... here = T: the 0.1 ms idle is fixed cost, the rest -0.1 ms
    assert parts["fixed cost"] == pytest.approx(0.1e-3)
    assert parts["unexplained"] == pytest.approx(-0.1e-3)
    assert sum(parts.values()) == pytest.approx(g.gap) == pytest.approx(0, abs=1e-15)


def test_plain_time_gap_is_predicted_part_plus_unexplained(tmp_path, capsys):
    # a bare time_s: the predicted part as the verdict gives it, the rest unexplained; on the
    # roofline model the verdict's DMA ceiling (Q / 272 GB/s) is the predicted T
    f = tmp_path / "t.json"
    f.write_text(json.dumps({"time_s": 400e-6}))
    Q = 67_108_864
    d = _run(capsys, ["entitle", "copy", "-H", "trn1-core", "--model", "roofline", "--measured",
                      str(f), "--json"])
    assert d["limit"] == "dma" and d["T"] == pytest.approx(Q / 272e9)
    assert _parts(d["measured"]) == {"slower engine": pytest.approx(Q / 272e9 - Q / 410e9),
                                     "unexplained": pytest.approx(400e-6 - Q / 272e9)}
    d = _run(capsys, ["entitle", "copy", "-H", "trn1-core", "--measured", str(f), "--json"])
    parts = _parts(d["measured"])
    assert parts["unexplained"] == pytest.approx(400e-6 - d["T"])
    assert sum(parts.values()) == pytest.approx(400e-6 - Q / 410e9)


@given(T=st.floats(1e-6, 1.0), active=st.floats(0.1, 1.0), busy=st.floats(0.1, 1.0),
       extra=st.integers(-10**6, 10**8))
def test_gap_parts_always_add_up(T, active, busy, extra):
    e = Entitlement(10**9, 10**8, 78.6432e12, 375e9)
    p = measured.parse({"total_time": T, "total_active_time": T * active,
                        "dma_active_time": T * active * busy, "hbm_read_bytes": 10**8 + extra,
                        "hbm_write_bytes": 0})
    c = measured.compare(e, p)
    assert sum(g.seconds for g in c.gap_table()) == pytest.approx(c.gap, rel=1e-9, abs=1e-15)


# ---------------------------------------------------------------------------------------------
# one measurement format: calibrate's record lists are --measured files (issue 23 point 4)


def test_calibrate_records_are_measured_files(tmp_path, capsys):
    # two records, each naming its tiling by spec and set; {"spec": "copy"} is copy at its
    # defaults (R = 4096), so it goes to that row and not to R = 8192
    f = tmp_path / "times.json"
    f.write_text(json.dumps([{"spec": "copy", "time_s": 230e-6},
                             {"spec": "copy", "set": {"R": 8192}, "time_s": 450e-6}]))
    d = _run(capsys, ["compare", "copy", "--vary", "R=4096,8192", "-H", "trn2-core",
                      "--measured", str(f), "--json"])
    got = {r["varied"]["R"]: r["measured"]["T"] for r in d["rows"]}
    assert got == {4096: 230e-6, 8192: 450e-6}
    # entitle of one tiling picks its record out of the list
    m = _run(capsys, ["entitle", "copy", "--set", "R=8192", "-H", "trn2-core", "--measured", str(f),
                      "--json"])["measured"]
    assert m["T"] == 450e-6
    # and calibrate reads the same file
    assert main(["calibrate", str(f), "-H", "trn2-core", "-o", str(tmp_path / "c.toml")]) == 0
    capsys.readouterr()


def test_a_measured_record_never_runs_its_spec(tmp_path, capsys, monkeypatch):
    # --measured only matches a record's spec by name: a kernel file named there is not executed
    monkeypatch.chdir(tmp_path)
    (tmp_path / "evil.py").write_text('open("EXECUTED", "w").write("x")\n')
    f = tmp_path / "m.json"
    f.write_text(json.dumps([{"spec": "evil.py::f", "time_s": 1e-4}]))
    assert main(["entitle", "copy", "-H", "trn2-core", "--measured", str(f)]) == 2
    assert "none of its 1 records names a tiling analysed here" in capsys.readouterr().err
    assert main(["entitle", "copy", "-H", "trn2-core", "--measured", f"copy={f}"]) == 0
    assert "T_measured" in capsys.readouterr().out  # LABEL= gives the one record to that tiling
    assert not (tmp_path / "EXECUTED").exists()


@pytest.mark.parametrize("records,match", [
    ([{"spec": "copy", "set": {"R": 999}, "time_s": 1e-4}, {"spec": "matmul", "time_s": 1e-4}],
     "none of its 2 records names a tiling analysed here"),
    ([], "the list of measurements is empty"),
    ([{"time_s": 1e-4, "set": {"R": "x"}}], "set={'R': 'x'} must be an object of NAME: integer"),
])
def test_bad_record_lists(tmp_path, capsys, records, match):
    f = tmp_path / "m.json"
    f.write_text(json.dumps(records))
    assert main(["entitle", "copy", "-H", "trn2-core", "--measured", str(f)]) == 2
    err = capsys.readouterr().err
    assert match in err and len(err.strip().splitlines()) == 1


def test_plot_point_percentage_is_against_its_own_point():
    # the measured point hangs below (I, W/T), T the verdict's: its label is T / T_measured, and
    # W/T_measured over W/T is the same number
    from loopsim.model import pipeline
    from loopsim.render.plot import Point
    from loopsim.targets import hardware

    hw = hardware.load("trn2-core")
    a = pipeline.analyze(pipeline.load("matmul"), hw)
    c = measured.compare(a.entitlement, measured.Profile(100e-6, "p"), verdict=a.verdict)
    pt = Point.from_report(a, c)
    assert a.T > a.entitlement.T_best                        # the DMA ceiling binds matmul
    assert pt.rate == pytest.approx(a.W / a.T) and pt.measured_rate == pytest.approx(a.W / 100e-6)
    assert pt.fraction == pytest.approx(a.T / 100e-6) == pytest.approx(pt.measured_rate / pt.rate)
    assert pt.fraction != pytest.approx(c.fraction_of_entitlement)   # not T_best's
    assert pt.gap_s == pytest.approx(100e-6 - a.T)
    assert c.fraction_of_predicted == pt.fraction
