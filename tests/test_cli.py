"""The command line, called as ``main([...])``: JSON contract, text output, bad input."""

import json

import numpy as np
import pytest

from loopsim.cli import main


def run_json(capsys, *argv):
    assert main(list(argv) + ["--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_entitle_json_has_the_documented_keys(capsys):
    d = run_json(capsys, "entitle", "matmul", "--hardware", "trn2-core")
    for key in ("kernel", "hardware", "policy", "W", "Q", "compulsory_Q", "I", "P", "BW", "ridge",
                "T_best", "T_worst", "rate", "bound", "tensors", "sbuf"):
        assert key in d
    assert set(d["sbuf"]) >= {"peak_bytes", "capacity_bytes", "fits"}
    assert set(d["tensors"]["A"]) >= {"bytes", "read_bytes", "write_bytes", "r"}
    # integers stay integers; Q is the sum of the tensors' crossings
    assert isinstance(d["W"], int) and isinstance(d["Q"], int)
    assert d["Q"] == sum(t["read_bytes"] + t["write_bytes"] for t in d["tensors"].values())
    assert d["T_best"] == max(d["W"] / d["P"], d["Q"] / d["BW"])
    assert d["T_worst"] == pytest.approx(d["W"] / d["P"] + d["Q"] / d["BW"])
    assert d["rate"] == pytest.approx(min(d["P"], d["I"] * d["BW"]))


def test_day2_from_the_cli(capsys):
    common = ["--hardware", "trn2-core", "--set", "D=4096", "--set", "F=4096"]
    dec = run_json(capsys, "entitle", "projection", *common, "--set", "B=1")
    assert (dec["W"], dec["compulsory_Q"], dec["Q"], dec["bound"]) == (
        2 * 4096 * 4096, 2 * (4096 + 4096 * 4096 + 4096), 2 * (4096 + 4096 * 4096 + 4096), "memory")
    c = run_json(capsys, "crossover", "projection", *common, "--dim", "B")
    # I = BD/(2B + D) = 210 at B = 860160/3676 = 233.99..., so the first compute-bound B is 234
    assert c["value"] == 234
    assert run_json(capsys, "crossover", "projection", *common, "--dim", "B", "--compulsory")["value"] == 234


def test_hand_count_calculator(capsys):
    # Day 1's toy machine: P = 1 TFLOP/s, BW = 100 GB/s; W = 1e12, Q = 1e9 -> I = 1000 > ridge 10
    d = run_json(capsys, "entitle", "--flops", "1e12", "--bytes", "1e9", "--hardware", "toy")
    assert (d["P"], d["BW"], d["ridge"], d["bound"]) == (10**12, 10**11, 10, "compute")
    assert d["T_best"] == 1.0 and d["T_worst"] == pytest.approx(1.01)


def test_text_output_is_a_readable_table(capsys):
    assert main(["entitle", "matmul", "--hardware", "trn2-core"]) == 0
    out = capsys.readouterr().out
    for word in ("W (Tensor Engine)", "compulsory Q", "ridge", "T_best", "T_worst", "SBUF", "fits"):
        assert word in out


def test_hardware_listing_and_sheet(capsys):
    assert main(["hardware"]) == 0
    names = capsys.readouterr().out
    assert "trn2-core" in names and "toy" in names
    assert main(["hardware", "trn2-core"]) == 0
    assert "S2" in capsys.readouterr().out  # sources are printed with the numbers


def test_replay_of_a_captured_trace(tmp_path, capsys):
    from loopsim.replayfile import write_trace
    # 3 objects of 100 bytes cycled 4 times through room for 2: lru misses all 12 requests
    obj = np.array([0, 1, 2] * 4)
    size = np.full(12, 100)
    p = tmp_path / "t.npz"
    write_trace(str(p), obj, size)
    d = run_json(capsys, "replay", str(p), "--capacity", "200", "--policy", "lru")
    assert (d["requests"], d["misses"], d["miss_bytes"], d["writeback_bytes"]) == (12, 12, 1200, 0)
    # Belady: 3 cold misses, then one miss per 2 requests of the remaining 9 (5 = ceil(9/2))
    d = run_json(capsys, "replay", str(p), "--capacity", "200", "--policy", "opt")
    assert d["misses"] == 3 + 4


BAD = [
    ["entitle", "matmul", "--hardware", "no-such-chip"],
    ["entitle", "no-such-spec", "--hardware", "trn2-core"],
    ["entitle", "matmul", "--hardware", "trn2-core", "--set", "TK=256"],
    ["entitle", "matmul", "--hardware", "trn2-core", "--set", "M=0"],
    ["entitle", "matmul", "--hardware", "trn2-core", "--set", "M=abc"],
    ["entitle", "matmul", "--hardware", "trn2-core", "--set", "Q=3"],
    ["entitle", "matmul", "--hardware", "trn2-core", "--sbuf-bytes", "1000"],
    ["entitle", "matmul", "--hardware", "trn2-core", "--policy", "nonsense"],
    ["entitle", "matmul", "--hardware", "trn2-core", "--set", "M=1", "--dtype", "int8"],
    ["entitle", "--flops", "1", "--hardware", "trn2-core"],
    ["crossover", "projection", "--hardware", "trn2-core", "--dim", "Z"],
    ["replay", "missing.npz", "--capacity", "10", "--policy", "lru"],
]


@pytest.mark.parametrize("argv", BAD)
def test_bad_input_is_one_line_and_nonzero(argv, capsys):
    try:
        rc = main(argv)
    except SystemExit as e:  # argparse usage errors
        rc = e.code
    err = capsys.readouterr().err.strip()
    assert rc != 0
    assert err and "\n" not in err and "Traceback" not in err


def test_unknown_hardware_lists_the_known_sheets(capsys):
    assert main(["entitle", "matmul", "--hardware", "nope"]) == 2
    err = capsys.readouterr().err
    assert "unknown hardware 'nope'" in err and "trn2-core" in err


def test_crossover_that_never_comes(capsys):
    # the tutorial matmul as written: r_B = M/TM grows with M, so I = W/Q tends to
    # NK / (2K + KN/TM + N) = 1024*1024 / (2048 + 8192 + 1024) = 93.1 < ridge 209.7 on trn2
    assert main(["crossover", "matmul", "--hardware", "trn2-core", "--dim", "M"]) == 2
    err = capsys.readouterr().err
    assert "no crossover" in err and "levels off below the ridge" in err
    import re
    last_i = float(re.search(r"to ([\d.]+), which levels off", err).group(1))
    assert abs(last_i - 1024 * 1024 / (2048 + 8192 + 1024)) < 0.5
