"""Profiles in as the profiler writes them: entitle --measured PROFILE with no spec takes W and Q
from the summary (schema names or the UI's title-cased names with units) and gives the
profiler's own MFU back."""

import json
from fractions import Fraction

import pytest
from hypothesis import given, strategies as st

from loopsim.model import measured
from loopsim.cli.main import main

P_TRN2 = 128 * 128 * 2 * 2_400_000_000  # trn2-core bf16: 78.6432 TFLOP/s
T = 2.05e-3
W = P_TRN2 * T / 2  # a kernel at exactly 50% MFU: 80,609,280,000 FLOPs
READ, WRITE = 600_000_000, 100_000_000
SNAKE = {"summary": [{"total_time": T, "hardware_flops": int(W), "transpose_flops": 0,
                      "hbm_read_bytes": READ, "hbm_write_bytes": WRITE,
                      "spill_save_bytes": 4096, "spill_reload_bytes": 8192,
                      "model_flops": 0, "mfu_estimated_percent": 0,
                      "mfu_inst_estimated_percent": 50.0}]}
UI = {"Overall Summary": {"Total Time": "2.05 ms", "Hardware Flops": "80.60928 GFLOPS",
                          "Transpose Flops": "0 FLOPS", "HBM Read Bytes": "600 MB",
                          "HBM Write Bytes": "100 MB", "Spill Save Bytes": "4 KiB",
                          "Spill Reload Bytes": "8,192", "Model Flops": 0,
                          "Mfu Estimated Percent": "0%", "Mfu Inst Estimated Percent": "50%"}}


def _entitle(tmp_path, capsys, data, *extra):
    f = tmp_path / "profile.json"
    f.write_text(json.dumps(data))
    assert main(["entitle", "--measured", str(f), "--hardware", "trn2-core", "--json", *extra]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("data", [SNAKE, UI, SNAKE["summary"][0]], ids=["summary-list", "ui", "flat"])
def test_both_spellings_give_the_profilers_mfu_back(tmp_path, capsys, data):
    assert W == 80_609_280_000
    d = _entitle(tmp_path, capsys, data)
    assert d["W"] == W and d["Q"] == READ + WRITE
    m = d["measured"]
    assert m["T"] == pytest.approx(T, rel=1e-15)
    assert m["MFU"] == pytest.approx(0.5, rel=1e-12)  # loopsim's W/T/P
    assert m["profiler"]["mfu_inst_estimated_percent"] == 50.0
    assert (m["spill_save_bytes"], m["spill_reload_bytes"]) == (4096, 8192)
    # the only MFU note: model_flops-based MFU is 0 for NKI kernels; inst MFU agrees
    assert not any("differs" in n for n in m["mfu_notes"])
    assert any("model_flops" in n for n in m["mfu_notes"])


def test_text_reports_spill_and_both_mfus(tmp_path, capsys):
    f = tmp_path / "profile.json"
    f.write_text(json.dumps(UI))
    assert main(["entitle", "--measured", str(f), "--hardware", "trn2-core"]) == 0
    out = capsys.readouterr().out
    assert "spill traffic" in out and "12,288 bytes" in out
    # inst MFU: (hardware - transpose) / (P x total_time) = 50% exactly, as the profiler says
    assert "mfu_inst_estimated_percent       profiler 50%; (hardware_flops - transpose_flops) / " \
        "(P x total_time) 50%" in out
    assert "(50%)" in out  # loopsim's W/T/P
    # I = W / Q = 115.2 < ridge 209.7: memory-bound, the MFU cap is I / ridge
    assert "MFU cannot exceed I/ridge = 54.9%" in out


def test_lnc2_profile_mfu_is_explained_by_the_scope(tmp_path, capsys):
    # the profiler divides by both cores' peak: it reports 25% where one core's P gives 50%
    data = {**SNAKE["summary"][0], "mfu_inst_estimated_percent": 25.0}
    m = _entitle(tmp_path, capsys, data)["measured"]
    (note,) = [n for n in m["mfu_notes"] if "differs" in n]
    assert note.startswith("mfu_inst_estimated_percent: differs: the profiler's 25%")
    assert "factor of 2" in note
    assert "157.3 TFLOP/s" in note  # implied peak: two cores, 2 x 78.6432


def test_q_from_the_intensity_when_bytes_are_missing(tmp_path, capsys):
    data = {"total_time": T, "hardware_flops": 1_000_000, "transpose_flops": 200_000,
            "mm_arithmetic_intensity": 3.2}
    d = _entitle(tmp_path, capsys, data)
    assert d["W"] == 800_000 and d["Q"] == 250_000  # (1e6 - 2e5) / 3.2
    assert d["Q_from"].endswith("mm_arithmetic_intensity")


@pytest.mark.parametrize("data,match", [
    ({"total_time": 1e-3, "hbm_read_bytes": 5, "hbm_write_bytes": 5}, "no FLOP count"),
    ({"total_time": 1e-3, "hardware_flops": 5, "hbm_read_bytes": 5}, "no HBM bytes"),
    ({"total_time": "1e-3", "hardware_flops": 5}, "total_time='1e-3' must be a positive number"),
    ({"Total Time": "2 parsecs", "hardware_flops": 5}, "Total Time='2 parsecs' must be a positive"),
    ({"total_time": 1e-3, "Hardware Flops": "5 GB"}, "Hardware Flops='5 GB' must be a number"),
])
def test_bad_profiles(tmp_path, capsys, data, match):
    f = tmp_path / "p.json"
    f.write_text(json.dumps(data))
    assert main(["entitle", "--measured", str(f), "--hardware", "trn2-core"]) == 2
    err = capsys.readouterr().err
    assert match in err and str(f) in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("text,value", [("2.05 ms", 2.05e-3), ("310 us", 310e-6), ("7 ns", 7e-9),
                                        ("1.5 s", 1.5)])
def test_ui_times(text, value):
    assert measured.parse({"Total Time": text}).time_s == pytest.approx(value, rel=1e-15)


@pytest.mark.parametrize("text,value", [("64.694 GFLOPS", 64_694_000_000), ("1 TFLOPS", 10**12),
                                        ("12,345", 12345), ("3 kflops", 3000)])
def test_ui_flop_counts(text, value):
    assert measured.parse({"time_s": 1, "Hardware Flops": text}).hardware_flops == value


@pytest.mark.parametrize("text,value", [("1 KiB", 1024), ("2 MiB", 2 * 2**20), ("1.5 GB", 1_500_000_000),
                                        ("1.38 GiB", round(1.38 * 2**30)), ("17 B", 17)])
def test_ui_bytes(text, value):
    assert measured.parse({"time_s": 1, "HBM Read Bytes": text}).hbm_read_bytes == value


def test_hand_counts_still_win_over_the_profile(tmp_path, capsys):
    d = _entitle(tmp_path, capsys, SNAKE, "--flops", "100", "--bytes", "10")
    assert (d["W"], d["Q"]) == (100, 10) and d["measured"]["T"] == T


# ---------------------------------------------------------------------------------------------
# the active window, the FLOP triple, percent or fraction (issue 23 point 1)

TRN1_BW = 820_000_000_000 // 2   # trn1-core: 2 HBM stacks, 820 GB/s, per core [S1]
LAYERNORM = {"total_time": 2.64e-3, "total_active_time": 0.78e-3, "hardware_flops": 0,
             "transpose_flops": 0, "hbm_read_bytes": 67_600_000, "hbm_write_bytes": 67_100_000}


def test_idle_start_up_is_not_kernel_time(tmp_path, capsys):
    # the layernorm profile of issue 23: timed by its active window, total_time shown beside
    m = _entitle(tmp_path, capsys, LAYERNORM, "--hardware", "trn1-core")["measured"]
    Q = 67_600_000 + 67_100_000                      # 134,700,000 bytes
    assert m["T"] == 0.78e-3 and m["T_from"] == "total_active_time"
    assert m["total_time"] == 2.64e-3
    # T_best = Q / 410 GB/s = 328.54 µs; 328.54 / 780 = 1347/3198 = 42.12%
    assert m["fraction_of_entitlement"] == pytest.approx(Fraction(Q, TRN1_BW) / Fraction(78, 10**5))
    assert m["fraction_of_entitlement"] == pytest.approx(1347 / 3198) and \
        round(100 * m["fraction_of_entitlement"]) == 42
    assert m["achieved_BW"] == pytest.approx(Q / 0.78e-3)   # 172.69 GB/s, not 51.0 over total_time
    assert round(m["achieved_BW"] / 1e9) == 173
    f = tmp_path / "profile.json"
    assert main(["entitle", "--measured", str(f), "--hardware", "trn1-core"]) == 0
    out = capsys.readouterr().out
    assert "(total_active_time; beside it: total_time 2.64 ms)" in out
    assert "42.1% of entitlement reached" in out and "172.7 GB/s" in out


def test_ui_spelling_of_the_active_window():
    p = measured.parse({"Overall Summary": {"Total Time": "2.64 ms", "Total Active Time": "780 us",
                                            "Total Exec Time": "0.8 ms"}})
    assert (p.time_s, p.time_from, p.total_time, p.total_exec_time) == \
        (pytest.approx(0.78e-3, rel=1e-15), "total_active_time", pytest.approx(2.64e-3), pytest.approx(0.8e-3))
    # without the active window, the exec span; a plain time_s always wins
    assert measured.parse({"total_time": 1, "total_exec_time": 0.5}).time_from == "total_exec_time"
    assert measured.parse({"total_time": 1, "total_active_time": 0.5, "time_s": 0.7}).time_s == 0.7


# the matmul of issue 23 on trn2-core: hardware - transpose = 2 x model; the profiler's MFU is
# model_flops / (P x total_time) = 12.88%, printed 12.9
T_TOTAL, T_ACTIVE = 2e-3, 1.2e-3
MODEL = 20_258_488_320                     # 0.1288 x 78.6432e12 x 2e-3, exactly
MATMUL = {"total_time": T_TOTAL, "total_active_time": T_ACTIVE, "model_flops": MODEL,
          "hardware_flops": 2 * MODEL + 4_000_000, "transpose_flops": 4_000_000,
          "hbm_read_bytes": 10**8, "hbm_write_bytes": 10**7, "mfu_estimated_percent": 12.9}


def test_mfu_on_model_flops_is_not_blamed_on_the_cores(tmp_path, capsys):
    assert MODEL == P_TRN2 * T_TOTAL * 0.1288
    m = _entitle(tmp_path, capsys, MATMUL)["measured"]
    fig = {f["field"]: f for f in m["mfu"]}
    mfu = fig["mfu_estimated_percent"]
    assert mfu["numerator"] == "model_flops" and mfu["profiler_percent"] == 12.9
    assert mfu["recomputed_over_total_time_percent"] == pytest.approx(12.88, rel=1e-12)
    assert mfu["over_active_window_percent"] == pytest.approx(12.88 * T_TOTAL / T_ACTIVE, rel=1e-12)
    assert mfu["note"] == "agrees"
    # the instruction FLOPs are twice the model FLOPs: 25.76% over total_time, and it is named
    assert fig["mfu_inst_estimated_percent"]["recomputed_over_total_time_percent"] == pytest.approx(25.76)
    assert not any("factor of 2" in n or "physical cores" in n for n in m["mfu_notes"])
    (note,) = [n for n in m["mfu_notes"] if n.startswith("model_flops")]
    assert "is 1/2 of hardware_flops - transpose_flops" in note
    assert m["flops"] == {"model_flops": MODEL, "hardware_flops": 2 * MODEL + 4_000_000,
                          "transpose_flops": 4_000_000, "W_nest": 2 * MODEL}


def test_a_fraction_valued_percent_is_detected(tmp_path, capsys):
    # 0.129 is 12.9% written as a fraction: model_flops / (P x total_time) = 0.1288 says so
    m = _entitle(tmp_path, capsys, {**MATMUL, "mfu_estimated_percent": 0.129})["measured"]
    assert m["percent_scale"] == "fraction"
    assert "mfu_estimated_percent against model_flops / (P x total_time)" in m["percent_scale_why"]
    assert m["profiler"]["mfu_estimated_percent"] == pytest.approx(12.9)
    assert next(f for f in m["mfu"] if f["field"] == "mfu_estimated_percent")["note"] == "agrees"
    assert not any("200" in n or "implies a peak" in n for n in m["mfu_notes"])


def test_engine_percents_decide_the_scale():
    # dma active 0.7 ms of a 2.64 ms run: 26.5% as percent, 0.265 as a fraction
    base = {**LAYERNORM, "dma_active_time": 0.7e-3}
    for raw, scale in ((26.5, "percent"), (0.265, "fraction")):
        p = measured.parse({**base, "dma_active_time_percent": raw})
        assert measured.percent_scale(p)[0] == scale


@pytest.mark.parametrize("data,match", [
    ({"total_time": 1e-3, "hardware_flops": 10, "hbm_read_bytes": 1, "hbm_write_bytes": 1,
      "mbu_estimated_percent": 0.5},
     "mbu_estimated_percent=0.5 could be percent or a fraction and no other field tells which"),
    ({**LAYERNORM, "dma_active_time": 0.7e-3, "dma_active_time_percent": 26.5,
      "vector_engine_active_time": 0.5e-3, "vector_engine_active_time_percent": 0.1894},
     "the *_percent fields disagree on their scale: dma_active_time_percent reads as percent"),
])
def test_an_undecidable_percent_is_refused(tmp_path, capsys, data, match):
    f = tmp_path / "p.json"
    f.write_text(json.dumps(data))
    assert main(["entitle", "--measured", str(f), "--hardware", "trn1-core"]) == 2
    err = capsys.readouterr().err
    assert match in err and len(err.strip().splitlines()) == 1


def test_a_percent_sign_says_percent_and_negative_is_unavailable(tmp_path, capsys):
    data = {**LAYERNORM, "mbu_estimated_percent": "0.5%", "mfu_estimated_percent": -1}
    m = _entitle(tmp_path, capsys, data, "--hardware", "trn1-core")["measured"]
    assert m["profiler"] == {"mbu_estimated_percent": 0.5}
    assert m["unavailable"] == ["mfu_estimated_percent"]


def test_engines_and_throttling_are_reported(tmp_path, capsys):
    data = {**LAYERNORM, "dma_active_time": 0.7e-3, "vector_engine_active_time": 0.5e-3,
            "throttle_active_time_percent": 12.5, "max_achievable_util_with_throttling_percent": 0.8}
    m = _entitle(tmp_path, capsys, data, "--hardware", "trn1-core")["measured"]
    eng = {r["engine"]: r for r in m["engines"]}
    assert eng["dma"]["measured_active_share"] == pytest.approx(0.7 / 0.78)
    assert eng["vector_engine"]["measured_active_s"] == 0.5e-3
    # the schema documents max_achievable_util_with_throttling_percent in fractions (1.0 = none)
    assert m["throttle"]["throttle_active_time_percent"] == 12.5
    assert m["throttle"]["max_achievable_util_with_throttling_percent"] == pytest.approx(80)


def test_measured_time_per_source_line(tmp_path, capsys):
    # the legacy JSON's instruction records with nki_source_location, durations in ns
    data = {"summary": [LAYERNORM], "instruction": [
        {"duration": 148, "nki_source_location": "k.py:33"},
        {"duration": 52, "nki_source_location": "k.py:33"},
        {"duration": 1000, "nki_source_location": "k.py:40"},
        {"duration": 7, "opcode": "NOP"}]}
    m = _entitle(tmp_path, capsys, data, "--hardware", "trn1-core")["measured"]
    # a profile alone has no nest: no predicted side
    assert [(r["location"], r["line"], r["measured_s"], r["predicted_dma_s"]) for r in m["source_lines"]] \
        == [("k.py:40", 40, pytest.approx(1e-6), None), ("k.py:33", 33, pytest.approx(200e-9), None)]


def test_source_lines_measured_beside_predicted(tmp_path, capsys):
    # our add_isa kernel: dma_copy of x on line 33, of y on line 34, the store of z on line 37;
    # each moves 256 x 4096 bf16 = 2 MiB, predicted at trn2-core's 368 GB/s DMA bandwidth
    from pathlib import Path

    k = Path(__file__).parent / "nki_kernels" / "add_grid.py"
    src = k.read_text().splitlines()
    assert "src=x[rows" in src[32] and "src=y[rows" in src[33] and "dst=z[rows" in src[36]
    data = {"summary": [{"total_time": 2e-5, "total_active_time": 1.5e-5}], "instruction": [
        {"duration": 4000, "nki_source_location": "add_grid.py:34"},
        {"duration": 3000, "nki_source_location": "add_grid.py:36"}]}
    f = tmp_path / "p.json"
    f.write_text(json.dumps(data))
    assert main(["entitle", f"{k}::add_isa", "--arg", "x=256x4096", "--arg", "y=256x4096",
                 "--grid", "2", "--kwarg", "TC=1024", "-H", "trn2-core", "--measured", str(f),
                 "--json"]) == 0
    rows = {r["line"]: r for r in json.loads(capsys.readouterr().out)["measured"]["source_lines"]}
    each = 256 * 4096 * 2 / 368e9                              # 5.699 µs
    assert rows[34]["measured_s"] == pytest.approx(4e-6) and rows[34]["predicted_dma_s"] == pytest.approx(each)
    assert rows[34]["statements"] == ["load y[pid0, c]"]
    assert rows[36]["predicted_dma_s"] is None                  # the add: no DMA on that line
    assert rows[33]["measured_s"] is None and rows[33]["predicted_dma_s"] == pytest.approx(each)
    assert rows[37]["statements"] == ["store z[pid0, c]"]


@given(share=st.floats(0.001, 1.0), total=st.floats(1e-6, 10.0), as_fraction=st.booleans(),
       engine=st.sampled_from(["dma", "tensor_engine", "vector_engine", "scalar_engine"]))
def test_the_scale_is_read_from_any_consistent_engine_field(share, total, as_fraction, engine):
    # an engine busy share x total of the run, its percent written either way: the scale comes back
    raw = share if as_fraction else 100 * share
    p = measured.parse({"total_time": total, f"{engine}_active_time": share * total,
                        f"{engine}_active_time_percent": raw})
    scale, why = measured.percent_scale(p)
    assert scale == ("fraction" if as_fraction else "percent")
    assert f"{engine}_active_time_percent against" in why


FIELDS = sorted(set(measured._ALIASES)) + ["Total Active Time", "Hardware Flops", "unknown"]
JSON_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-10**20, 10**400),
                         st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=12),
                         st.sampled_from(["2.05 ms", "45%", "0.5", "1 GiB", "3 GFLOPS", "-1", "1e-3"]))
JSON = st.recursive(JSON_SCALARS, lambda inner: st.lists(inner, max_size=3) |
                    st.dictionaries(st.sampled_from(FIELDS), inner, max_size=4), max_leaves=12)


@given(st.dictionaries(st.sampled_from(FIELDS), JSON, max_size=10))
def test_any_summary_is_read_or_refused_in_one_line(data):
    # whatever a file holds under the known names: a Profile, or an InputError; then the
    # comparison and its text build, or refuse with an InputError (never another exception)
    from loopsim.base.errors import InputError
    from loopsim.model.entitle import Entitlement

    try:
        p = measured.parse(data, "f.json")
        c = measured.compare(Entitlement(10**9, 10**7, 78.6432e12, 375e9), p)
        c.as_dict(), c.lines()
    except InputError as e:
        assert "\n" not in str(e) and str(e).startswith("f.json")


def test_matmul_lines_get_their_tensor_engine_time(tmp_path, capsys):
    # our blocked matmul (lhsT 1024 x 4096, rhs 1024 x 2048): line 88 issues every nc_matmul,
    # K/128 x M/128 x N/512 = 8 x 32 x 4 = 1024 instructions of max(512, 64) = 512 cycles each at
    # trn2-core's 2.4 GHz: 524,288 cycles = 218.45 µs (the array full: W/P exactly)
    from pathlib import Path

    k = Path(__file__).parent / "nki_kernels" / "matmul_isa.py"
    assert "nisa.nc_matmul(" in k.read_text().splitlines()[87]
    data = {"summary": [{"total_time": 1e-3, "total_active_time": 5e-4}], "instruction": [
        {"duration": 300_000, "nki_source_location": "matmul_isa.py:88"}]}
    f = tmp_path / "p.json"
    f.write_text(json.dumps(data))
    assert main(["entitle", f"{k}::blocked", "--arg", "lhsT=1024x4096", "--arg", "rhs=1024x2048",
                 "-H", "trn2-core", "--measured", str(f), "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    rows = {r["line"]: r for r in d["measured"]["source_lines"]}
    te = 1024 * 512 / 2_400_000_000
    # the lines add up to the verdict's ceilings: Tensor Engine (one core) and DMA
    assert sum(r["predicted_tensor_engine_s"] or 0 for r in rows.values()) == pytest.approx(
        d["times"]["tensor_engine"])
    assert sum(r["predicted_dma_s"] or 0 for r in rows.values()) == pytest.approx(d["times"]["dma"])
    assert rows[88]["measured_s"] == pytest.approx(300e-6)
    assert rows[88]["predicted_tensor_engine_s"] == pytest.approx(te) == pytest.approx(
        2 * 4096 * 2048 * 1024 / P_TRN2)
    assert rows[88]["predicted_dma_s"] is None and rows[88]["statements"][0].startswith("matmul")


def _lines(capsys, argv, profile, tmp_path):
    f = tmp_path / "p.json"
    f.write_text(json.dumps(profile))
    assert main(argv + ["--measured", str(f), "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    return d, {r["line"]: r for r in d["measured"]["source_lines"]}


def test_op_lines_get_their_vector_and_scalar_time(tmp_path, capsys):
    # the bundled layernorm at B=256, D=512 on trn2-core: its layernorm statement (file line 24)
    # runs B/TB = 2 times on a 128 x 512 bf16 tile (65,536 elements) and is a layernorm op, 2
    # Vector passes then 1 Scalar pass ([S2]: Vector 512 bf16 elements/cycle at 0.96 GHz =
    # 491.52e9/s, Scalar 128 at 1.2 GHz = 153.6e9/s; both above MIN_II = 64 cycles):
    vector = 2 * (2 * 65_536 / 491.52e9)                         # 533.3 ns
    scalar = 2 * (65_536 / 153.6e9)                              # 853.3 ns
    prof = {"total_time": 2e-5, "total_active_time": 1.5e-5,
            "instruction": [{"duration_ns": 900, "nki_source_location": "layernorm.toml:24"}]}
    d, rows = _lines(capsys, ["entitle", "layernorm", "--set", "B=256", "--set", "D=512", "-H",
                              "trn2-core"], prof, tmp_path)
    r = rows[24]
    assert r["measured_s"] == pytest.approx(900e-9) and r["statements"][0].startswith("layernorm")
    assert r["predicted_vector_engine_s"] == pytest.approx(vector, rel=1e-12)
    assert r["predicted_scalar_engine_s"] == pytest.approx(scalar, rel=1e-12)
    assert r["predicted_dma_s"] is r["predicted_tensor_engine_s"] is r["predicted_gpsimd_engine_s"] is None
    # the per-line figures are the timeline's busy time of those engines (no PSUM reads here)
    assert main(["timeline", "layernorm", "--set", "B=256", "--set", "D=512", "-H", "trn2-core",
                 "--json"]) == 0
    eng = json.loads(capsys.readouterr().out)["stages"][0]["engines"]
    assert eng["vector"]["busy_s"] == pytest.approx(vector) and eng["scalar"]["busy_s"] == pytest.approx(scalar)
    assert main(["entitle", "layernorm", "--set", "B=256", "--set", "D=512", "-H", "trn2-core",
                 "--measured", str(tmp_path / "p.json")]) == 0
    text = capsys.readouterr().out
    assert "pred. Vector  pred. Scalar" in text and "pred. GpSimd" not in text
    assert "duration_ns, nanoseconds by the [S20] Instruction table" in text


def test_a_short_op_instruction_costs_min_ii(tmp_path, capsys):
    # our add_isa at x = y = 256 x 256, TC = 32: the add (line 36) runs 2 programs x 256/32 = 16
    # times on 128 x 32 = 4,096 elements, 4096 / 491.52e9 = 8.3 ns, below MIN_II = 64 Vector
    # cycles at 0.96 GHz = 66.67 ns: each instruction costs MIN_II
    from pathlib import Path

    k = Path(__file__).parent / "nki_kernels" / "add_grid.py"
    assert "nisa.tensor_tensor(" in k.read_text().splitlines()[35]
    prof = {"summary": [{"total_time": 2e-5, "total_active_time": 1.5e-5}], "instruction": [
        {"duration": 3000, "nki_source_location": "add_grid.py:36"}]}
    d, rows = _lines(capsys, ["entitle", f"{k}::add_isa", "--arg", "x=256x256", "--arg", "y=256x256",
                              "--grid", "2", "--kwarg", "TC=32", "-H", "trn2-core"], prof, tmp_path)
    assert rows[36]["predicted_vector_engine_s"] == pytest.approx(16 * 64 / 0.96e9, rel=1e-12)
    assert rows[36]["predicted_scalar_engine_s"] is None
    # a legacy record's duration has no documented unit: read in ns, and the output says ASSUMED
    assert "ASSUMED" in d["measured"]["source_line_durations"]
    assert rows[36]["measured_s"] == pytest.approx(3e-6)


def test_duration_ns_wins_over_a_legacy_duration():
    p = measured.parse({"time_s": 1e-3, "instruction": [
        {"duration_ns": 10, "duration": 10_000, "nki_source_location": "k.py:3"},
        {"duration_ns": 5, "nki_source_location": "k.py:3"}]})
    assert p.instructions == (("k.py:3", pytest.approx(15e-9)),) and not p.durations_assumed
