"""Fuzz test of the error contract (issue 14): hypothesis generates malformed specs, sheets, traces,
profiles and argument lists, and every run of ``loopsim.cli.main.main`` either succeeds or exits 2 with
exactly one ``loopsim: error:`` line; no exception escapes (a traceback would).

Runs in-process (no subprocess per example). The example count per test is LOOPSIM_FUZZ_EXAMPLES
(default 40: the whole file takes ~20 s on two cores); ``benchmarks/fuzz_campaign.py`` runs the
same tests with thousands of examples (docs/errors.md).
"""

import contextlib
import io
import json
import os
import re
import tempfile
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from loopsim.targets import hardware
from loopsim.frontends import spec
from loopsim.cli.main import main

EXAMPLES = int(os.environ.get("LOOPSIM_FUZZ_EXAMPLES", "40"))
#: a new seed every run, printed in the session header (tests/conftest.py): a failure replays
#: with LOOPSIM_FUZZ_SEED=N (no example database, so the seed alone decides the examples)
SEED = int(os.environ.get("LOOPSIM_FUZZ_SEED", "0"))
_SETTINGS = settings(max_examples=EXAMPLES, deadline=None, derandomize=False, database=None,
                     suppress_health_check=list(HealthCheck))


def FUZZ(test):
    return seed(SEED)(_SETTINGS(test))
BASE = spec.locate("matmul").read_text(encoding="utf-8")
SHEET = (hardware._bundled_dir() / "toy.toml").read_text(encoding="utf-8")
WORK = Path(tempfile.mkdtemp(prefix="loopsim-fuzz-"))

#: TOML values of every shape: small valid integers (fast to simulate), limits, wrong types
BIG = [0, -1, 2**62, 2**62 + 1, 2**63, 2**64, 10**30]
toml_value = st.one_of(
    st.integers(1, 600).map(str),
    st.sampled_from(BIG).map(str),
    st.sampled_from(["inf", "-inf", "nan", "1e400", "2.5", "true", "false", "[]", "[1, 2]", "{}",
                     "{ a = 1 }", '"M"', '"M * 2"', '"M ** 64"', '"(((M)))"', '"1/0"', '"M +"',
                     '"__import__(\'os\')"', '""', '"x" ', "'''\n'''", "1979-05-27"]),
    st.text(max_size=20).map(json.dumps),  # any string, TOML-escaped as JSON escapes it
)


def run(argv) -> tuple[int, str, str]:
    """``main(argv)`` with stdout and stderr captured; an escaping exception fails the test."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = main([str(a) for a in argv])
        except SystemExit as e:  # argparse's own usage errors
            rc = e.code
    return rc, out.getvalue(), err.getvalue()


def contract(argv) -> int:
    rc, _out, err = run(argv)
    assert rc in (0, 1, 2, 3), (rc, argv[:3], err[:300])
    if rc == 2:
        assert err.count("\n") == 1 and re.match(r"loopsim(: error| \w+: error):", err), err[:500]
    assert "Traceback" not in err
    return rc


def write(name: str, data: bytes | str) -> Path:
    p = WORK / name
    p.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8", "surrogatepass"))
    return p


LINES = BASE.splitlines(keepends=True)
VALUE_LINES = [i for i, line in enumerate(LINES) if re.match(r"^\w+ = ", line)]


@FUZZ
@given(st.data())
def test_mutated_specs(data):
    lines = list(LINES)
    for _ in range(data.draw(st.integers(1, 3))):
        how = data.draw(st.sampled_from(["value", "key", "line", "table", "cut", "nest"]))
        if how == "value" and len(lines) > max(VALUE_LINES):  # a value of another shape
            i = data.draw(st.sampled_from(VALUE_LINES))
            lines[i] = lines[i].split("=")[0] + "= " + data.draw(toml_value) + "\n"
        elif how == "key":  # a key no table knows
            lines.insert(data.draw(st.integers(0, len(lines))), data.draw(st.from_regex(r"[a-z_]{1,8}", fullmatch=True))
                         + " = " + data.draw(toml_value) + "\n")
        elif how == "line":  # a random line anywhere
            lines.insert(data.draw(st.integers(0, len(lines))), data.draw(st.text(max_size=40)) + "\n")
        elif how == "table":
            lines.append(data.draw(st.sampled_from(["[nest]", "[lnc]", "[parallel]", "[check]", "[ops]",
                                                    "[kernel.x]", "[[tensors]]", "[params.Q]"])) + "\n")
            lines.append(data.draw(st.sampled_from(["split", "cores", "chips", "over", "body", "about"]))
                         + " = " + data.draw(toml_value) + "\n")
        elif how in ("cut", "value"):  # truncated file
            lines = lines[:data.draw(st.integers(0, len(lines)))]
        else:  # a nest line rewritten
            body = [i for i, line in enumerate(lines) if line.startswith(" ")]
            if body:
                i = data.draw(st.sampled_from(body))
                lines[i] = data.draw(st.sampled_from(["", " ", "\t"])) + lines[i] if data.draw(st.booleans()) else \
                    lines[i][: len(lines[i]) - len(lines[i].lstrip())] + data.draw(st.text(max_size=30)) + "\n"
    p = write("spec.toml", "".join(lines))
    command = data.draw(st.sampled_from([["entitle"], ["formula"], ["ceilings"], ["compare", "matmul"]]))
    contract([command[0], p, *command[1:], "-H", "trn2-core"])


@FUZZ
@given(st.binary(max_size=600), st.sampled_from(["spec", "sheet", "profile"]))
def test_random_bytes(data, kind):
    p = write(f"random.{'json' if kind == 'profile' else 'toml'}", data)
    argv = {"spec": ["entitle", p, "-H", "toy"], "sheet": ["entitle", "matmul", "-H", p],
            "profile": ["entitle", "matmul", "-H", "trn2-core", "--measured", p]}[kind]
    assert contract(argv) == 2


SHEET_VALUE_LINES = [i for i, line in enumerate(SHEET.splitlines(keepends=True)) if "value = " in line]


@FUZZ
@given(st.data())
def test_mutated_sheets(data):
    lines = SHEET.splitlines(keepends=True)
    i = data.draw(st.sampled_from(SHEET_VALUE_LINES))
    new = "value = " + data.draw(toml_value).replace("\n", " ")
    lines[i] = re.sub(r"value = [^,}]+", lambda m: new, lines[i], count=1)
    if data.draw(st.booleans()):
        lines.insert(data.draw(st.integers(0, len(lines))), data.draw(toml_value).replace("\n", " ") + "\n")
    p = write("sheet.toml", "".join(lines))
    contract(["entitle", "matmul", "-H", p])


json_value = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=10),
                          lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=12), c, max_size=4),
                          max_leaves=10)


@FUZZ
@given(st.dictionaries(st.sampled_from(["time_s", "hbm_read_bytes", "hbm_write_bytes", "flops", "hardware_flops",
                                        "transpose_flops", "summary", "kernel", "x"]), json_value, max_size=5))
def test_profiles(profile):
    p = write("profile.json", json.dumps(profile))
    contract(["entitle", "matmul", "-H", "trn2-core", "--measured", p])


dtypes = st.sampled_from(["<i8", ">i8", "<u4", "<f8", "|b1", "<i2", "|O"])


@FUZZ
@given(st.lists(st.tuples(st.sampled_from(["obj", "size", "write", "other"]), dtypes,
                          st.lists(st.integers(-3, 3), max_size=6)), max_size=3),
       st.booleans())
def test_traces(members, compressed):
    arrays = {}
    for name, dt, values in members:
        a = np.array(values, dtype=np.int64).astype(dt) if dt != "|O" else np.array(values, dtype=object)
        arrays[name] = a
    p = WORK / "trace.npz"
    (np.savez_compressed if compressed else np.savez)(p, **arrays)
    contract(["replay", p, "--capacity", "16", "--policy", "lru"])


flag_value = st.one_of(st.integers(-2, 2**64).map(str), st.sampled_from(["", "1e400", "nan", "x", "-0", "١٢"]),
                       st.text(max_size=8))


@FUZZ
@given(st.lists(st.one_of(
    st.tuples(st.just("--set"), st.builds(lambda n, v: f"{n}={v}", st.sampled_from(["M", "TK", "Z", "", "M M"]), flag_value)),
    st.tuples(st.sampled_from(["--sbuf-bytes", "--policy", "--dtype", "--lnc", "--split", "--roofs", "-H"]), flag_value),
), max_size=3), st.sampled_from(["entitle", "ceilings", "formula", "capacity", "crossover", "check"]))
def test_argument_lists(pairs, command):
    argv = [command, "matmul", "-H", "trn2-core"] + [x for pair in pairs for x in pair]
    if command == "capacity":
        argv += ["--samples", "2"]
    if command == "check":
        argv += ["--formula", "M", "--examples", "1"]
    if command == "crossover":
        argv += ["--dim", "M"]
    contract(argv)
