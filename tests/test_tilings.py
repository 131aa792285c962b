"""Every shipped spec loads and runs, each with one hand-derived traffic number beside it."""

import pytest

from loopsim.targets import hardware
from loopsim.frontends import spec
from loopsim.model.pipeline import analyze_kernel as analyze

TRN2 = hardware.load("trn2-core")
p = 2  # bf16 bytes

# name -> (params, hand-derived as-written Q in bytes, derivation)
EXPECTED = {
    # r_A = N/TN = 2, r_B = M/TM = 8, C written once
    "matmul": (2 * (2 * 1024 * 1024 + 8 * 1024 * 1024 + 1024 * 1024)),
    # A once (hoisted out of n), B once per m: r_B = M/TM = 8
    "matmul_hoisted": (2 * (1024 * 1024 + 8 * 1024 * 1024 + 1024 * 1024)),
    # panels: r_A = N/BN = 2, r_B = M/BM = 4 (M = N = 2048, K = 1024)
    "matmul_blocked": (2 * (2 * 2048 * 1024 + 4 * 1024 * 2048 + 2048 * 2048)),
    # A once, B once per m (8), C stored K/TK = 8 times and read back 7 times
    "matmul_kouter": (2 * (1024 * 1024 + 8 * 1024 * 1024 + (8 + 7) * 1024 * 1024)),
    # r_A = N/TN = 1024/128 = 8, r_B = M/TM = 8
    "matmul_small_tiles": (2 * (8 * 1024 * 1024 + 8 * 1024 * 1024 + 1024 * 1024)),
    # x, W read once and y written once at B = 2048, D = F = 4096
    "projection": (2 * (2048 * 4096 + 4096 * 4096 + 2048 * 4096)),
}


def test_every_bundled_spec_is_listed_and_loads():
    names = spec.bundled_names()
    assert set(EXPECTED) <= set(names)
    for n in names:
        spec.read(n)  # parses as TOML with the required tables


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_hand_derived_q(name):
    try:
        rep = analyze(spec.load_kernel(name), TRN2)
    except Exception as e:  # a multi-op spec is covered by its own tests
        pytest.skip(str(e))
    assert rep.counts.Q == EXPECTED[name]
    assert rep.counts.residency.fits
