"""Profiles in as the profiler writes them: entitle --measured PROFILE with no spec takes W and Q
from the summary (schema names or the UI's title-cased names with units) and gives the
profiler's own MFU back."""

import json

import pytest

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
    assert "MFU (mfu_inst_estimated_percent) 50%" in out and "(50%)" in out
    # I = W / Q = 115.2 < ridge 209.7: memory-bound, the MFU cap is I / ridge
    assert "MFU cannot exceed I/ridge = 54.9%" in out


def test_lnc2_profile_mfu_is_explained_by_the_scope(tmp_path, capsys):
    # the profiler divides by both cores' peak: it reports 25% where one core's P gives 50%
    data = {**SNAKE["summary"][0], "mfu_inst_estimated_percent": 25.0}
    m = _entitle(tmp_path, capsys, data)["measured"]
    (note,) = [n for n in m["mfu_notes"] if "differs" in n]
    assert "25% differs from loopsim's W/T/P 50%" in note and "factor of 2" in note
    assert "157.3 TFLOP/s" in note  # implied peak: two cores


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
