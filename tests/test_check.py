"""Property-testing a user's Q formula (loopsim.analyses.checkformula, ``loopsim check``)."""

import pytest

from loopsim.ir import expr
from loopsim.frontends import spec
from loopsim.analyses.checkformula import assert_formula, check_formula, parse_vary
from loopsim.cli.main import main
from loopsim.base.errors import InputError
from loopsim.model.pipeline import analyze_kernel as analyze
from loopsim.targets import hardware

RIGHT = "2*(ceil(N/TN)*M*K + ceil(M/TM)*K*N + M*N)"  # curriculum Day 5 for the tutorial loop order
NAIVE = "2*(M*K + K*N + M*N)"  # every byte once: wrong as soon as N > TN or M > TM
PINNED = ["matmul", "--hardware", "trn2-core", "--policy", "as-written", "--set", "TM=128",
          "--set", "TK=128", "--set", "TN=512", "--examples", "30"]


def test_right_formula_holds_and_naive_is_refuted(capsys):
    assert main(["check", *PINNED, "--formula", RIGHT]) == 0
    assert "the formula held on" in capsys.readouterr().out
    assert main(["check", *PINNED, "--formula", NAIVE]) == 1
    out = capsys.readouterr().out
    assert "counterexample:" in out and "r = " in out


def test_counterexample_is_a_real_mismatch_and_small():
    res = check_formula("matmul", NAIVE, sets={"TM": 128, "TK": 128, "TN": 512}, examples=30)
    assert not res.held
    cx = res.counterexample
    params = dict(cx.params)
    # independent of the simulator: the curriculum formula gives Q at the counterexample,
    # and the naive formula differs from it there
    assert cx.simulated_Q == expr.parse(RIGHT).evaluate(params)
    assert cx.formula_bytes == expr.parse(NAIVE).evaluate(params) != cx.simulated_Q
    # shrunk: the naive count is wrong exactly when an operand is reloaded, N > TN or M > TM;
    # hypothesis shrinks to the boundary, one element past a tile in one dimension
    assert (params["N"], params["M"]) in ((513, 1), (1, 129))
    # each tensor's simulated bytes are reported; the reloaded operand has r = 2
    rs = {n: r / size for n, size, r, _ in cx.tensors}
    assert sorted(rs.values())[-1] == 2


def test_python_api_for_a_users_pytest_suite():
    assert assert_formula("matmul", RIGHT, hardware="trn2-core",
                          sets={"TK": 128}, examples=15).held
    with pytest.raises(AssertionError, match="counterexample"):
        assert_formula("matmul", NAIVE, sets={"TM": 128, "TK": 128, "TN": 512}, examples=30)


def test_lru_everything_fits_formula():
    # 1024^3 bf16 operands (6 MiB) fit in trn2-core's 28 MiB: under LRU each byte crosses once
    res = check_formula("matmul", NAIVE, policy="lru", sets={"TK": 128}, examples=15)
    assert res.held and res.examples == 15


def test_tiles_respect_hardware_limits():
    # TN drawn from 256..1024 is clipped at trn2-core's moving limit 512: every example runs
    res = check_formula("matmul", RIGHT, vary={"TN": range(256, 1025), "M": (64, 200)},
                        sets={"TM": 128, "TK": 128, "N": 2000, "K": 300}, examples=20)
    assert res.held and dict(res.ranges)["TN"] == "256..512"
    kern = spec.load_kernel("matmul", {"TN": 512, "N": 2000, "K": 300, "M": 200})
    q = analyze(kern, hardware.load("trn2-core")).counts.Q
    assert q == expr.parse(RIGHT).evaluate(dict(kern.params))


@pytest.mark.parametrize("args,msg", [
    (["--formula", "2*(M*K + Z)"], "unknown name Z; the names of tilings/matmul.toml are: M, N, K"),
    (["--formula", "2*M*K +* N)"], "syntax error in '2\\*M\\*K \\+\\* N\\)' at column"),
    (["--formula", "M*K/(N-1)"], r"division by zero in 'M \* K / \(N - 1\)'.*N=1"),
    (["--formula", "M", "--vary", "M=10..5"], r"--vary M=10..5: the range is empty \(10 > 5\)"),
    (["--formula", "M", "--vary", "M=a..5"], "--vary M=a..5: 'a' is not an integer"),
    (["--formula", "M", "--vary", "Q=1..3"], "--vary Q: tilings/matmul.toml has no parameter Q"),
    (["--formula", "M", "--vary", "TN=600..700"], "every value exceeds trn2-core's limit of 512"),
    (["--formula", "M", "--examples", "0"], "--examples 0 is not between 1 and 100,000"),
    (["--formula", "M", "--vary", "M=1..3", "--set", "M=2"], "give one or the other"),
    (["--formula", "M", "--vary", "M=1..3", "--vary", "M=5..6"], "--vary M: given twice"),
])
def test_bad_input_exits_2_with_one_line(capsys, args, msg):
    assert main(["check", "matmul", "-H", "trn2-core", "--examples", "5", *args]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    import re

    assert re.search(msg, err), err


def test_parse_vary():
    v = parse_vary(["M=1..4", "TN=128,256"])
    assert list(v["M"]) == [1, 2, 3, 4] and v["TN"] == (128, 256)
    with pytest.raises(InputError, match=r"expected NAME=INT,INT,\.\.\. or NAME=LO\.\.HI"):
        parse_vary(["M"])
    # the shared grammar: an explicit step, or doubling from LO
    v = parse_vary(["K=64..256:64", "TN=100..900:x2"])
    assert list(v["K"]) == [64, 128, 192, 256] and v["TN"] == (100, 200, 400, 800)


def test_parse_vary_huge_range_is_not_enumerated():
    # a range is checked by its ends: min() over range(1, 10**20 + 1) would walk every value
    import signal

    def too_slow(*_):
        raise TimeoutError("parse_vary enumerated the range")

    old = signal.signal(signal.SIGALRM, too_slow)
    signal.alarm(5)
    try:
        v = parse_vary(["M=1..100000000000000000000"])
        with pytest.raises(InputError, match="values must be > 0"):
            parse_vary(["M=0..100000000000000000000"])
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    assert v["M"] == range(1, 10**20 + 1)


def test_program_specs_are_refused_by_name(capsys):
    # a chain of ops has its nests in [nest.<kernel>]; the error says so, not "nest.body: missing"
    assert main(["check", "mlp_fused", "-H", "trn2-core", "--formula", "B", "--examples", "2"]) == 2
    err = capsys.readouterr().err
    assert "a program of ops" in err and "nest.body: missing" not in err


def test_example_counts_are_exact():
    # 100 asked over a wide range: exactly 100 distinct examples are run and reported
    res = check_formula("matmul", RIGHT, sets={"TK": 128}, examples=100)
    assert res.held and res.examples == res.examples_asked == 100
    assert "held on 100 examples (" in res.message()
    # M in 1..4, N in 1..3, everything else pinned: only 4 x 3 = 12 distinct examples exist
    res = check_formula("matmul", RIGHT, vary={"M": range(1, 5), "N": range(1, 4)},
                        sets={"TM": 128, "TK": 128, "TN": 512, "K": 128}, examples=100)
    assert res.held and res.examples == 12 and "of 100 asked" in res.message()
    # a refuted formula counts only the examples that passed before the first counterexample,
    # never hypothesis's shrinking runs, so never more than were asked
    res = check_formula("matmul", NAIVE, sets={"TM": 128, "TK": 128, "TN": 512}, examples=30)
    assert not res.held and res.examples < 30 and res.as_dict()["examples_asked"] == 30
