"""The command line, called as ``main([...])``: JSON contract, text output, bad input."""

import json

import numpy as np
import pytest

from loopsim.cli.main import main


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
    from loopsim.sim.replayfile import write_trace
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
    ["entitle", "matmul", "--hardware", "trn2-core", "--set", "M=0"],
    ["entitle", "matmul", "--hardware", "trn2-core", "--set", "M=abc"],
    ["entitle", "matmul", "--hardware", "trn2-core", "--set", "Q=3"],
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


@pytest.mark.parametrize("name,extra_q", [("mlp_fused", 0), ("mlp_unfused", 2)])
def test_crossover_of_a_chain_of_ops(capsys, name, extra_q):
    # W = 4BDF; Q = 2(2BD + 2DF + extra*2BF) with the h and g round trips unfused (extra = 2).
    # Compute-bound when W/P >= Q/BW, i.e. B >= P*D*F / (D*F*BW - P*D - extra*P*F).
    from fractions import Fraction
    from loopsim.targets import hardware
    hw = hardware.load("trn2-core")
    D, F = 1024, 4096
    b = Fraction(hw.P("bf16") * D * F, D * F * hw.bw - hw.P("bf16") * D - extra_q * hw.P("bf16") * F)
    want = -(-b.numerator // b.denominator)
    d = run_json(capsys, "crossover", name, "--hardware", "trn2-core", "--dim", "B",
                 "--set", f"D={D}", "--set", f"F={F}")
    assert d["value"] == want


def test_compare_ranks_fused_against_unfused(capsys):
    d = run_json(capsys, "compare", "mlp_unfused", "mlp_fused", "--hardware", "trn2-core")
    rows = d["rows"] if isinstance(d, dict) else d
    # both right of the ridge: the same T_best (W/P); fusion removes the 4BF round trips of h, g,
    # so it wins on T_worst and is ranked first
    assert [r["kernel"] for r in rows] == ["mlp_fused", "mlp_unfused"]
    B, D, F = 2048, 1024, 4096
    assert rows[1]["Q"] - rows[0]["Q"] == 2 * 4 * B * F
    assert rows[0]["T_best"] == pytest.approx(rows[1]["T_best"])


@pytest.mark.parametrize("argv, why", [
    (["--set", "TK=256"], "K_t=256 exceeds trn2-core's limit of 128"),
    (["--sbuf-bytes", "1000"], "SBUF: needs "),
])
def test_a_kernel_that_cannot_run_exits_3_with_its_report(argv, why, capsys):
    assert main(["entitle", "matmul", "--hardware", "trn2-core", *argv]) == 3
    out = capsys.readouterr().out
    first = out.splitlines()[2]  # after the title and params lines: the verdict comes first
    assert first.startswith("  CANNOT RUN as written:") and why in first
    assert main(["entitle", "matmul", "--hardware", "trn2-core", *argv, "--json"]) == 3
    d = json.loads(capsys.readouterr().out)
    assert d["feasible"] is False and any(why in r for r in d["infeasible_reasons"])
