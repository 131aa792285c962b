"""The matmul I/O lower bound (loopsim.count.bound): hand-computed values, and no simulated Q below it."""

import math
from dataclasses import replace
from decimal import Decimal, getcontext

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loopsim.targets import hardware
from loopsim.frontends import spec
from loopsim.count.bound import lower_bound, pebble_words
from loopsim.base.errors import CapacityError
from loopsim.ir.kernel import Loop, Matmul
from loopsim.model.pipeline import analyze_kernel as analyze
from loopsim.render.json import analysis_dict

getcontext().prec = 60


def _pebble_decimal(m, n, k, S, cores=1):
    """floor(2mnk / sqrt(S+1)) - 2c(S+1) - mn with 60-digit decimals (independent of isqrt)."""
    lead = (Decimal(2 * m * n * k) / Decimal(S + 1).sqrt()).to_integral_value(rounding="ROUND_FLOOR")
    return int(lead) - 2 * cores * (S + 1) - m * n


@given(st.integers(1, 10**5), st.integers(1, 10**5), st.integers(1, 10**5), st.integers(1, 10**8),
       st.integers(1, 8))
def test_pebble_words_is_the_floored_formula(m, n, k, S, cores):
    assert pebble_words(m, n, k, S, cores) == _pebble_decimal(m, n, k, S, cores)


def test_trn2_tutorial_matmul_bound_is_compulsory():
    # trn2-core: S = SBUF 28 MiB + PSUM 128 partitions x 8 banks x 2 KiB = 29,360,128 + 2,097,152
    # = 31,457,280 bytes = 15,728,640 bf16 words. 2*1024^3/sqrt(15,728,641) ~ 541,486 words is far
    # below 2(S+1), so the pebble term is negative and the compulsory traffic binds:
    # 3 tensors x 1024^2 x 2 bytes = 6,291,456. The tutorial's Q = 2(2*MK + 8*KN + MN) =
    # 2*11*1024^2 bytes, so Q/bound = 11/3.
    hw = hardware.load("trn2-core")
    rep = analyze(spec.load_kernel("matmul"), hw)
    lb = rep.lower_bound
    assert lb.psum_bytes == 128 * 8 * 2048
    assert lb.S_words == (28 * 2**20 + 2 * 2**20) // 2
    assert lb.pebble_words < 0 and lb.binding == "compulsory"
    d = analysis_dict(rep)
    assert d["lower_bound_Q"] == 3 * 1024 * 1024 * 2
    assert d["Q_over_bound"] == pytest.approx(11 / 3)


def test_toy_2048_cube_pebble_bound_binds():
    # toy (flat, no accumulator memory): S = 1 MiB = 1,048,576 bytes = 524,288 bf16 words.
    # 2*2048^3 / sqrt(524,289) = 23,726,xxx words; minus 2*524,289 and 2048^2 gives ~18.48 M words
    # = ~36.96 MB, above the compulsory 3*2048^2*2 = 25,165,824 bytes.
    hw = hardware.load("toy")
    k = spec.load_kernel("matmul", {"M": 2048, "N": 2048, "K": 2048})
    lb = lower_bound(k, hw)
    S = 2**20 // 2
    assert lb.S_words == S == 524_288
    assert lb.pebble_words == _pebble_decimal(2048, 2048, 2048, S)
    assert lb.Q == 2 * lb.pebble_words > 3 * 2048 * 2048 * 2
    assert 36_000_000 < lb.Q < 37_000_000


def test_sbuf_override_and_mixed_dtypes(tmp_path):
    # fp32 A with bf16 B and C: words convert at the smallest element, 2 bytes.
    text = spec.locate("matmul").read_text().replace('dtype = "bf16", about = "lhsT', 'dtype = "fp32", about = "lhsT')
    p = tmp_path / "mixed.toml"
    p.write_text(text)
    k = spec.load_kernel(str(p), {"M": 4096, "N": 4096, "K": 4096})
    lb = lower_bound(k, hardware.load("toy"), capacity_bytes=65536)
    assert lb.p_min == 2
    assert lb.S_words == 65536 // 2  # toy has no PSUM to add
    # compulsory: A fp32 (4 B) + B and C bf16 (2 B each)
    assert lb.compulsory_bytes == 4096 * 4096 * (4 + 2 + 2)
    assert lb.Q == max(lb.compulsory_bytes, 2 * _pebble_decimal(4096, 4096, 4096, lb.S_words))


def test_not_matmul_shaped():
    # a nest that accumulates the same product twice (built in IR: the spec reader refuses it)
    def twice(body):
        out = []
        for node in body:
            out.append(replace(node, body=twice(node.body)) if isinstance(node, Loop) else node)
            if isinstance(node, Matmul):
                out.append(node)
        return tuple(out)

    k = spec.load_kernel("matmul")
    assert lower_bound(replace(k, body=twice(k.body)), hardware.load("toy")) is None


def test_lnc2_scope_adds_per_core_terms():
    hw = hardware.load("trn2-lnc2")
    k = spec.load_kernel("matmul")
    lb = lower_bound(k, hw)
    assert lb.cores == hw.physical_cores == 2
    assert lb.pebble_words == _pebble_decimal(1024, 1024, 1024, lb.S_words, 2)


FAMILY = ["matmul", "matmul_hoisted", "matmul_kouter", "matmul_blocked", "matmul_small_tiles"]


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(FAMILY), st.sampled_from(["as-written", "lru", "opt"]),
       st.integers(1, 32), st.integers(1, 32), st.integers(1, 32), st.integers(10, 800))
def test_no_simulated_q_below_the_bound(name, policy, m, n, k, kib_per_partition):
    # trn2-core with a small SBUF (PSUM still holds each accumulating tile in one bank) and shapes
    # up to 4096 (multiples of 128, so every spec's divisibility rules hold), where the pebble term
    # can bind. An as-written count whose live buffers exceed SBUF is outside the bound's premise.
    hw = hardware.load("trn2-core")
    kern = spec.load_kernel(name, {"M": 128 * m, "N": 128 * n, "K": 128 * k})
    try:
        rep = analyze(kern, hw, policy=policy, sbuf_bytes=128 * 1024 * kib_per_partition // 10)
    except CapacityError:
        return
    if policy == "as-written" and not rep.counts.residency.fits:
        return
    assert rep.counts.Q >= rep.lower_bound.Q


def test_bound_keys_in_entitle_compare_and_capacity(capsys):
    import json

    from loopsim.cli.main import main

    # entitle/compare: trn2-core tutorial matmul, bound = compulsory 3 * 1024^2 * 2 bytes
    assert main(["entitle", "matmul", "-H", "trn2-core", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["lower_bound_Q"] == 6 * 1024**2 and d["Q_over_bound"] == pytest.approx(11 / 3)
    assert main(["compare", "matmul", "-H", "trn2-core", "--json"]) == 0
    row = json.loads(capsys.readouterr().out)["rows"][0]
    assert row["lower_bound_Q"] == 6 * 1024**2 and row["Q_over_bound"] == pytest.approx(11 / 3)
    # capacity: each row's bound uses that row's fast-memory capacity (toy: nothing added)
    assert main(["capacity", "matmul", "-H", "toy", "--set", "M=2048", "--set", "N=2048",
                 "--set", "K=2048", "--samples", "3", "--json"]) == 0
    for r in json.loads(capsys.readouterr().out)["rows"]:
        S = r["capacity_bytes"] // 2
        want = max(3 * 2048**2 * 2, 2 * _pebble_decimal(2048, 2048, 2048, S))
        assert r["lower_bound_Q"] == want and r["Q"] >= want


def test_a_negative_pebble_term_is_never_shown_negative():
    # matmul 1024^3 bf16 on trn2-core: 2mnk/sqrt(S+1) ~ 5.4e5 words, far below 2(S+1) + mn ~ 3.3e7
    lb = lower_bound(spec.load_kernel("matmul"), hardware.load("trn2-core"))
    assert lb.pebble_words < 0
    assert "not binding" in lb.describe() and f"{lb.pebble_words:,}" not in lb.describe()
    d = lb.as_dict()
    assert d["pebble_words"] == 0 and "not binding" in d["pebble_note"]
    assert d["lower_bound_Q"] == 2 * 3 * 1024 * 1024  # compulsory: A, B read once, C written once
