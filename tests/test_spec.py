"""Spec files and the nest language: parsing, parameters, and one table of invalid inputs with
their messages pinned."""

import re

import pytest

from loopsim.ir import expr
from loopsim.frontends import spec
from loopsim.base.errors import SpecError
from loopsim.ir.kernel import Load, Loop, Matmul, Store


def write(tmp_path, body, params=None, tensors=None, extra=""):
    params = params or {"M": 256, "N": 512, "K": 256, "TM": 128, "TN": 512, "TK": 128}
    tensors = tensors or {
        "A": '{ shape = ["K", "M"] }', "B": '{ shape = ["K", "N"] }',
        "C": '{ shape = ["M", "N"], output = true }'}
    text = "[kernel]\nname = \"t\"\n[params]\n" + "".join(f"{k} = {v!r}\n".replace("'", '"') for k, v in params.items())
    text += "[tensors]\n" + "".join(f"{k} = {v}\n" for k, v in tensors.items())
    text += extra + "[nest]\nbody = '''\n" + body + "\n'''\n"
    p = tmp_path / "t.toml"
    p.write_text(text)
    return str(p)


GOOD = """for m in M by TM:
  for n in N by TN:
    for k in K by TK:
      load A[k, m]
      load B[k, n]
      matmul C[m, n] += A[k, m] @ B[k, n]
    store C[m, n]"""


def test_nest_parses_into_the_tree_it_reads_as(tmp_path):
    k = spec.load_kernel(write(tmp_path, GOOD))
    m = k.body[0]
    assert isinstance(m, Loop) and (m.var, m.extent, m.step, m.trips) == ("m", 256, 128, 2)
    n = m.body[0]
    kk, store = n.body
    assert isinstance(store, Store) and str(store) == "store C[m, n]"
    assert [type(s) for s in kk.body] == [Load, Load, Matmul]
    assert str(kk.body[2]) == "matmul C[m, n] += A[k, m] @ B[k, n]"


def test_parameter_expressions_and_sets(tmp_path):
    p = write(tmp_path, GOOD, params={"M": 256, "N": 512, "K": 256, "TM": "M // 2", "TN": 512, "TK": 128})
    sf = spec.read(p)
    assert spec.bind_params(sf, {})["TM"] == 128
    assert spec.bind_params(sf, {"M": 128})["TM"] == 64  # derived parameters follow overrides
    assert spec.parse_sets(["M=4_096", "TN=256"]) == {"M": 4096, "TN": 256}


def test_expressions_are_exact_and_safe():
    e = expr.parse("2*(ceil(N/TN)*M*K + M*N)")
    assert e.evaluate({"N": 1000, "TN": 512, "M": 3, "K": 5}) == 2 * (2 * 15 + 3000)
    assert expr.parse("N/3").evaluate({"N": 1}).denominator == 3
    for bad, msg in [("__import__('os')", "not allowed"), ("a.b", "not allowed"),
                     ("(1 +", "column"), ("f(2)", "not allowed"), ("'s'", "only numbers")]:
        with pytest.raises(expr.ExprError, match=msg):
            expr.parse(bad, "formula")
    with pytest.raises(expr.ExprError, match=r"division by zero in .M / N. with M=1, N=0"):
        expr.parse("M/N").evaluate({"M": 1, "N": 0})
    with pytest.raises(expr.ExprError, match="unknown name Z; known names: M"):
        expr.parse("M+Z").evaluate({"M": 1})


# one table of invalid specs: (body, params or None, tensors or None, --set, message pattern)
BAD = [
    (GOOD.replace("by TK", "by 0"), None, None, {}, r"step of k=0 must be > 0"),
    (GOOD, None, None, {"M": 0}, r"--set M=0 must be > 0"),
    (GOOD, None, None, {"M": -5}, r"--set M=-5 must be > 0"),
    (GOOD, None, None, {"Q": 3}, r"--set Q=3: .* has no parameter Q; it has: M, N, K, TM, TN, TK"),
    (GOOD.replace("load B[k, n]", "load D[k, n]"), None, None, {}, r"names tensor D, which is not declared"),
    (GOOD.replace("A[k, m]\n", "A[k]\n"), None, None, {}, r"A\[k\] has 1 indices but A has 2 dimensions"),
    (GOOD.replace("load A[k, m]", "lod A[k, m]"), None, None, {}, r"line \d+: unknown statement 'lod'"),
    (GOOD.replace("for k in K by TK:", "for k in K:"), None, None, {}, r"expected 'for VAR in EXTENT by STEP:'"),
    (GOOD.replace("    store", "     store"), None, None, {}, r"indentation does not match|unexpected indent"),
    (GOOD.replace("load A[k, m]", "load A[k, z]"), None, None, {}, r"index z in A\[k, z\] is not a loop variable"),
    (GOOD.replace("by TM", "by TX"), None, None, {}, r"unknown name TX"),
    (GOOD.replace("    store C[m, n]", ""), None, None, {}, r"output C is never stored"),
    (GOOD.replace("      load A[k, m]\n", ""), None, None, {}, r"matmul reads A\[k, m\] but no load of A precedes it"),
    (GOOD, None, {"A": '{ shape = ["K", "M"], dtype = "fp64" }', "B": '{ shape = ["K", "N"] }',
                  "C": '{ shape = ["M", "N"], output = true }'}, {}, r"dtype='fp64' is not a known dtype"),
    (GOOD, None, {"A": '{ shape = ["K", "M"], partition_axis = 1 }', "B": '{ shape = ["K", "N"] }',
                  "C": '{ shape = ["M", "N"], output = true }'}, {}, r"must hold the contraction dimension"),
    (GOOD, None, {"A": '{ shape = ["K", "M"], colour = 1 }', "B": '{ shape = ["K", "N"] }',
                  "C": '{ shape = ["M", "N"], output = true }'}, {}, r"tensors.A: unknown key colour"),
    (GOOD, {"M": 256, "N": 512, "K": 256, "TM": "TN", "TN": "TM", "TK": 128}, None, {}, r"cycle"),
]


@pytest.mark.parametrize("body,params,tensors,sets,msg", BAD)
def test_invalid_specs_are_refused_with_a_precise_message(tmp_path, body, params, tensors, sets, msg):
    p = write(tmp_path, body, params, tensors)
    with pytest.raises(SpecError, match=msg):
        from loopsim.targets import hardware
        from loopsim.model.pipeline import analyze_kernel as analyze
        analyze(spec.load_kernel(p, sets), hardware.load("trn2-core"))


def test_errors_name_the_file_and_the_line(tmp_path):
    p = write(tmp_path, GOOD.replace("load A[k, m]", "lod A[k, m]"))
    with pytest.raises(SpecError) as e:
        spec.load_kernel(p)
    # "lod" sits on the 4th nest line; the nest starts after the header lines of the file
    lines = open(p).read().splitlines()
    lineno = next(i + 1 for i, l in enumerate(lines) if "lod A" in l)
    assert str(e.value).startswith(p) and f"line {lineno}:" in str(e.value)


def test_malformed_toml_and_missing_files(tmp_path):
    p = tmp_path / "broken.toml"
    p.write_text('[kernel\nname = "x"\n')
    with pytest.raises(SpecError, match=r"broken.toml: malformed TOML"):
        spec.read(str(p))
    with pytest.raises(SpecError, match=r"missing.toml: no such spec file"):
        spec.read(str(tmp_path / "missing.toml"))
    with pytest.raises(SpecError, match=r"unknown spec 'nope'.*bundled: .*matmul"):
        spec.read("nope")


def test_tile_limits_of_the_sheet():
    from loopsim.targets import hardware
    from loopsim.model.pipeline import analyze_kernel as analyze
    hw = hardware.load("trn2-core")
    for sets, msg in [({"TK": 256}, r"K_t=256 exceeds trn2-core's limit of 128"),
                      ({"TM": 256}, r"M_t=256 exceeds trn2-core's limit of 128"),
                      ({"TN": 1024}, r"N_t=1024 exceeds trn2-core's limit of 512")]:
        a = analyze(spec.load_kernel("matmul", sets), hw)  # analysed, but it cannot run
        assert not a.feasible and any(re.search(msg, r) for r in a.infeasible_reasons)
        assert all(x.factor <= 1 for x in a.ceilings.ceilings if x.factor is not None)


def test_spec_files_are_data_never_executed(tmp_path):
    # a parameter that looks like code is parsed as an arithmetic expression and refused
    p = write(tmp_path, GOOD, params={"M": "__import__(os).system(1)", "N": 512, "K": 256,
                                      "TM": 128, "TN": 512, "TK": 128})
    with pytest.raises(SpecError, match="not allowed"):
        spec.load_kernel(p)
