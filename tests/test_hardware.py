"""Hardware sheets: loader-computed roofs against values derived independently from the curriculum.

Each expected number is written as the arithmetic the curriculum does (Days 1, 3 and 6), never as a
printed result pasted back.
"""

from __future__ import annotations

import dataclasses
import math
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loopsim.targets import hardware
from loopsim.base.errors import HardwareError
from loopsim.targets.base import Target
from loopsim.targets.hardware import load, loads, names

GB = 10**9
TB = 10**12
#: the project's register of hardware sources (a copy of the shared reference, kept in the repository)
SOURCES_MD = Path(__file__).resolve().parent.parent / "docs" / "hardware-sources.md"


def close(a, b, rel=1e-3):
    return math.isclose(a, b, rel_tol=rel)


# --- every bundled sheet ------------------------------------------------------------------------


def test_names_lists_the_bundled_sheets():
    assert names() == sorted(names())
    assert {"toy", "trn1-core", "inf2-core", "trn2-core", "trn2-lnc2", "trn2-device", "trn3-core"} <= set(names())


@pytest.mark.parametrize("name", names())
def test_every_sheet_loads(name):
    hw = load(name)
    assert isinstance(hw, Target)
    assert hw.name == name
    assert hw.P("bf16") > 0 and hw.bw > 0 and hw.ridge("bf16") > 0
    assert hw.scope and hw.physical_cores >= 1
    assert hw.physical_cores <= hw.cores_per_device
    assert hw.with_roofs("spec") is hw
    text = hw.describe()
    assert hw.scope in text and "P.bf16" in text and "bw" in text


@pytest.mark.parametrize("name", names())
def test_every_number_has_a_source_or_derivation(name):
    """Walk every recorded value and every alternative: each has a document quote, a derivation or
    (for the illustrative toy only) a definition. Also every numeric field of Hardware is recorded."""
    hw = load(name)
    seen = set()
    for v in hw.values:
        seen.add(v.key)
        for src in [v.source] + [a.source for a in v.alternatives]:
            assert src.kind in ("doc", "derived", "defined"), (v.key, src)
            if src.kind == "doc":
                assert src.doc and src.title, v.key
                assert src.quote.strip() or src.paraphrase.strip(), v.key
            else:
                assert src.derivation.strip(), v.key
            if src.kind == "defined":
                assert hw.illustrative or v.key.startswith("scope."), (name, v.key)
        if v.assumed:
            assert v.reason
    # every numeric field of the dataclass is backed by a recorded value
    backing = {
        "physical_cores": "scope.physical_cores", "cores_per_device": "scope.cores_per_device",
        "partitions": "sbuf.partitions", "sbuf_bytes": "sbuf.bytes", "bw": "bw",
        "device_bw": "hbm.device_bw", "clock_hz": "tensor.clock_hz", "pe_rows": "tensor.pe_rows",
        "pe_cols": "tensor.pe_cols", "moving_max": "tensor.moving_max",
        "stationary_max": "tensor.stationary_max", "psum_banks": "psum.banks",
        "psum_bank_bytes": "psum.bank_bytes", "mm_init_cycles": "tensor.mm_init_cycles",
        "dma_engines": "dma.engines", "link_bw": "link.bw", "dma_bw": "dma.bw",
        "dma_transpose_permille": "dma.transpose",
    }
    if hw.family == "flat":
        backing["sbuf_bytes"] = "memory.bytes"
    for f in dataclasses.fields(hw):
        val = getattr(hw, f.name)
        if isinstance(val, int) and not isinstance(val, bool):
            assert backing[f.name] in seen, (name, f.name)
            assert hw.value(backing[f.name]).value == val
    for dt in hw.dtypes():
        assert hw.value(f"P.{dt}").value == hw.P(dt)
        assert hw.value(f"P.{dt}").source.kind == "derived"
    assert hw.value("bw").source.kind == "derived"
    if hw.family == "neuron":
        assert hw.value("sbuf.partition_bytes").value == hw.sbuf_partition_bytes


@pytest.mark.parametrize("name", names())
def test_quotes_are_verbatim_in_hardware_sources(name):
    md = SOURCES_MD.read_text(encoding="utf-8")
    for v in load(name).values:
        for src in [v.source] + [a.source for a in v.alternatives]:
            if src.kind == "doc":
                # §0 rows are "| S2 |", "| S2f |" or grouped "| S8a/b/c |"
                base, letter = re.fullmatch(r"(S\d+)([a-z]?)", src.doc).groups()
                rows = re.findall(rf"^\| ({base}(?:[a-z/]*)) \|", md, re.M)
                assert any(r == src.doc or (letter and letter in r.split("/")[1:] + [r[len(base):][:1]])
                           for r in rows), (v.key, src.doc)
                for piece in src.quote.split(" ... "):
                    assert piece.strip() in md, (name, v.key, piece)


# --- numbers, derived independently from the curriculum -------------------------------------


def test_trn1_core_day3():
    hw = load("trn1-core")
    assert hw.P("bf16") == 128 * 128 * 2 * 2_800_000_000  # = 91,750,400,000,000
    assert hw.P("bf16") == 91_750_400_000_000
    assert close(hw.P("fp32"), 22.94e12)  # a quarter; documented "23 TFLOPS for FP32 inputs"
    assert hw.P("fp8") == hw.P("bf16")  # cFP8 at the bf16 rate on NeuronCore-v2
    assert hw.bw == 820 * GB // 2 == 410 * GB
    assert close(hw.ridge("bf16"), 223.8)
    assert close(hw.ridge("bf16"), 91.75e12 / 0.41e12)
    assert close(hw.engine_roof("vector"), 128 * 1.12e9)  # 143e9 elements/s (Day 3)
    assert hw.sbuf_partition_bytes == 192 * 1024
    assert hw.partitions == 128 and hw.moving_max == 512 and hw.stationary_max == 128
    assert hw.mm_init_cycles == 64 and not hw.mm_init_assumed
    assert hw.dma_engines == 16


def test_inf2_core_matches_trn1_core_roofs():
    a, b = load("inf2-core"), load("trn1-core")
    assert (a.P("bf16"), a.bw, a.sbuf_bytes) == (b.P("bf16"), b.bw, b.sbuf_bytes)
    assert close(a.ridge(), 223.78)  # profiler Peak Flops Bandwidth Ratio on inf2 (Day 3)


def test_trn2_core_day6():
    hw = load("trn2-core")
    assert hw.P("bf16") == 128 * 128 * 2 * 2_400_000_000 == 78_643_200_000_000
    assert close(hw.P("bf16"), 78.64e12)
    assert hw.P("fp32") * 4 == hw.P("bf16")  # derived quarter (19.66e12), documented 20 beside it
    assert any(a.value == 20 * TB for a in hw.value("P.fp32").alternatives)
    assert hw.P("fp8") == 2 * hw.P("bf16")  # documented 158
    assert hw.bw == 3 * TB // 8 == 375 * GB
    assert close(hw.ridge("bf16"), 209.7)
    assert hw.sbuf_bytes == 28 * 2**20
    assert hw.sbuf_partition_bytes == 224 * 1024
    assert hw.psum_banks == 8 and hw.psum_bank_bytes == 2048
    assert hw.psum_bank_fp32 == 512  # one 128 x 512 fp32 matmul output fills one bank
    assert hw.psum_banks * hw.psum_bank_bytes * hw.partitions == 2 * 2**20  # 2 MiB PSUM
    assert hw.mm_init_cycles == 64 and hw.mm_init_assumed
    assert close(hw.engine_roof("vector", "fp32"), 256 * 0.96e9)
    assert close(hw.engine_roof("vector", "bf16"), 512 * 0.96e9)
    # alternatives recorded beside the chosen 3 TB/s
    alts = {a.value for a in hw.value("hbm.device_bw").alternatives}
    assert {2_900 * GB, 500 * GB, 368 * GB} <= alts


def test_trn2_lnc2_scope():
    core, lnc2 = load("trn2-core"), load("trn2-lnc2")
    assert lnc2.physical_cores == 2
    assert lnc2.P("bf16") == 157_286_400_000_000 == 2 * core.P("bf16")
    assert close(lnc2.P("bf16"), 157.29e12)
    assert lnc2.bw == 750 * GB
    assert close(lnc2.ridge(), core.ridge()) and close(lnc2.ridge(), 209.7)
    assert lnc2.sbuf_bytes == core.sbuf_bytes  # per physical core: each has its own SBUF
    assert lnc2.sbuf_bytes_in_scope == 2 * core.sbuf_bytes
    assert close(lnc2.engine_roof("vector"), 2 * core.engine_roof("vector"))


def test_trn2_device_is_whole_chip_and_labelled():
    dev = load("trn2-device")
    assert dev.physical_cores == dev.cores_per_device == 8
    assert dev.bw == 3 * TB
    assert dev.P("bf16") == 8 * 128 * 128 * 2 * 2_400_000_000
    assert "whole" in dev.scope.lower() and "whole" in dev.about.lower()


def test_trn3_core():
    hw = load("trn3-core")
    assert hw.P("bf16") == 128 * 128 * 2 * 2_400_000_000
    assert hw.P("mxfp8") == 4 * hw.P("bf16")
    assert hw.bw == 4_700 * GB // 8  # 587.5 GB/s, NKI guide figure
    assert hw.sbuf_partition_bytes == 256 * 1024
    assert hw.mm_init_assumed


def test_toy_day1():
    hw = load("toy")
    assert hw.illustrative
    assert hw.P("bf16") == 10**12 and hw.bw == 100 * GB
    assert hw.ridge() == 10.0
    assert {hw.P(d) for d in ("bf16", "fp16", "fp32", "fp8")} == {10**12}
    assert hw.family == "flat" and hw.lanes is None and hw.tile_limits() == {}
    assert hw.sbuf_bytes == 2**20 and hw.accumulator_bytes == 0
    assert "illustrative" in hw.describe().lower()


# --- errors for missing numbers, unknown names, roof kinds ----------------------------------


def test_unknown_name_lists_known():
    with pytest.raises(HardwareError, match=r"^unknown hardware 'trn9'; known: inf2-core, toy, trn1-core, "):
        load("trn9")


def test_missing_file_path():
    with pytest.raises(HardwareError, match=r"nope\.toml: no such hardware sheet file"):
        load("nope.toml")


def test_unknown_dtype_and_engine():
    hw = load("trn2-core")
    with pytest.raises(HardwareError, match=r"^trn2-core: dtype 'int8' has no documented Tensor Engine rate"):
        hw.P("int8")
    with pytest.raises(HardwareError, match=r"^trn2-core: engines\.gpsimd has no documented data-path width"):
        hw.engine_roof("gpsimd")
    with pytest.raises(HardwareError, match=r"^toy: no engine 'scalar' on this sheet \(a flat machine"):
        load("toy").engine_roof("scalar")


def test_measured_roofs():
    with pytest.raises(HardwareError, match=r"^trn2-core: roofs='measured' but the sheet has no \[measured\]"):
        load("trn2-core").with_roofs("measured")
    with pytest.raises(HardwareError, match=r"roofs='best' must be one of: spec, measured"):
        load("trn2-core").with_roofs("best")
    text = _read("trn2-core") + (
        '\n[measured]\nbw = { value = 300000000000, where = "copy kernel, 64 MiB transfers" }\n'
        'flops = { bf16 = { value = 70000000000000, where = "resident 128x128x512 matmul loop" } }\n'
    )
    hw = loads(text, "m.toml")
    m = hw.with_roofs("measured")
    assert (m.roofs, m.bw, m.P("bf16")) == ("measured", 300 * GB, 70 * TB)
    assert m.ridge() == 70 * TB / (300 * GB)
    assert "copy kernel" in m.describe()
    with pytest.raises(HardwareError, match=r"dtype 'fp32' has no measured roof"):
        m.P("fp32")
    back = m.with_roofs("spec")
    assert (back.bw, back.P("fp32")) == (375 * GB, hw.P("fp32"))


def test_path_loading(tmp_path):
    p = tmp_path / "mine.toml"
    p.write_text(_read("trn1-core").replace('name = "trn1-core"', 'name = "mine"'))
    assert load(str(p)).P("bf16") == load("trn1-core").P("bf16")


def test_fallback_directory_matches_repo():
    # running from a checkout: the sheets come from the repo's hardware/ directory
    assert set(names()) == {p.stem for p in (Path(hardware.__file__).parents[2] / "hardware").glob("*.toml")}


# --- malformed sheets, each with its pinned one-line message ----------------------------------


def _read(name: str) -> str:
    return (Path(hardware.__file__).parents[2] / "hardware" / f"{name}.toml").read_text(encoding="utf-8")


CLOCK = 'clock_hz = { value = 2400000000, source = "S2", paraphrase'

MALFORMED = [
    # (description, (old, new) replacement in trn2-core.toml, pinned message)
    ("float clock", (CLOCK, 'clock_hz = { value = 2.4e9, source = "S2", paraphrase'),
     r"/bad\.toml: tensor\.clock_hz\.value=2400000000\.0 must be an integer \(write 2\.4 GHz as 2400000000\), not a float$"),
    ("negative clock", (CLOCK, 'clock_hz = { value = -1, source = "S2", paraphrase'),
     r"/bad\.toml: tensor\.clock_hz\.value=-1 must be > 0$"),
    ("string clock", (CLOCK, 'clock_hz = { value = "fast", source = "S2", paraphrase'),
     r"/bad\.toml: tensor\.clock_hz\.value='fast' must be an integer$"),
    ("unknown source key", (CLOCK, 'clock_hz = { value = 2400000000, source = "S99", paraphrase'),
     r"/bad\.toml: tensor\.clock_hz\.source='S99' is not a key of \[sources\]; known: S1, S2, "),
    ("no source", ('moving_max = { value = 512, source = "S31", quote = "On NeuronCore-v2 and -v3, the free dimension size of moving tile must not exceed 512" }',
                   'moving_max = { value = 512 }'),
     r"/bad\.toml: tensor\.moving_max=\{'value': 512\} has no source"),
    ("source without quote", ('moving_max = { value = 512, source = "S31", quote = "On NeuronCore-v2 and -v3, the free dimension size of moving tile must not exceed 512" }',
                              'moving_max = { value = 512, source = "S31" }'),
     r"/bad\.toml: tensor\.moving_max\.source='S31' needs a verbatim quote \(or a paraphrase\)$"),
    ("missing pe_rows", ('pe_rows = {', 'pe_rowz = {'),
     r"/bad\.toml: tensor\.pe_rowz=.* is not a known key; expected one of: clock_hz, dtypes, "),
    ("missing hbm", ('[hbm]\ndevice_bw', '[hbmx]\ndevice_bw'),
     r"/bad\.toml: hbmx=.* is not a known key; expected one of: "),
    ("bool value", ('engines = { value = 16,', 'engines = { value = true,'),
     r"/bad\.toml: dma\.engines\.value=True must be an integer, not a boolean$"),
    ("bad factor", ('fp32 = { factor = "1/4"', 'fp32 = { factor = "a quarter"'),
     r"/bad\.toml: tensor\.dtypes\.fp32\.factor\.value='a quarter' must be an integer or a fraction like \"1/4\"$"),
    ("bf16 not the reference", ('bf16 = { factor = 1,', 'bf16 = { factor = 2,'),
     r"/bad\.toml: tensor\.dtypes\.bf16\.factor=2 must be 1 \(bf16 is the reference rate\)$"),
    ("unknown dtype", ('fp16 = { factor = 1,', 'int4 = { factor = 1,'),
     r"/bad\.toml: tensor\.dtypes\.int4=.* is not a known dtype; expected one of: bf16, "),
    ("cores exceed device", ('physical_cores = { value = 1,', 'physical_cores = { value = 16,'),
     r"/bad\.toml: scope\.physical_cores\.value=16 exceeds scope\.cores_per_device=8$"),
    ("sbuf not divisible", ('bytes = { value = 29360128,', 'bytes = { value = 29360129,'),
     r"/bad\.toml: sbuf\.bytes\.value=29360129 is not a multiple of sbuf\.partitions=128$"),
    ("wrong schema", ('schema = 1', 'schema = 2'),
     r"/bad\.toml: schema=2 must be 1$"),
    ("assumed without reason", (', assumed = true, reason = "documented for NeuronCore-v2 only; the Trn2 guide does not restate it (hardware-sources §13), so it is carried over unverified"',
                                ', assumed = true'),
     r"/bad\.toml: tensor\.mm_init_cycles\.reason=<missing> must say why the value is assumed$"),
    ("assumed elsewhere", ('engines = { value = 16,', 'engines = { value = 16, assumed = true, reason = "x",'),
     r"/bad\.toml: dma\.engines\.assumed=True is only allowed on tensor\.mm_init_cycles and timeline\.\*$"),
    ("bad alternative per", ('per = "device", source = "S5", quote = "96 GiB',
                             'per = "chip", source = "S5", quote = "96 GiB'),
     r"/bad\.toml: hbm\.device_bw\.alternatives\[0\]\.per='chip' must be one of: device, core, factor, value$"),
    ("real sheet with direct P", ('[tensor]\n', '[tensor]\npeak_flops = { value = 5, source = "S2", quote = "79 BF16/FP16/TF32" }\n'),
     r"/bad\.toml: tensor\.peak_flops\.source='S2' is not allowed: a real sheet derives P "),
    ("not TOML", ('[tensor]\n', '[tensor\n'),
     r"/bad\.toml: \(file\)=<unparsable> is not valid TOML: "),
    ("unknown engine", ('[engines.gpsimd]', '[engines.pool]'),
     r"/bad\.toml: engines\.pool=.* is not a known engine; expected one of: vector, scalar, gpsimd$"),
    ("measured without where", ('[dma]', '[measured]\nbw = { value = 1 }\nflops = { bf16 = { value = 1, where = "x" } }\n\n[dma]'),
     r"/bad\.toml: measured\.bw\.where=<missing> is required \(a string\)$"),
]


@pytest.mark.parametrize("old_new, message", [(m[1], m[2]) for m in MALFORMED], ids=[m[0] for m in MALFORMED])
def test_malformed_sheets(tmp_path, old_new, message):
    old, new = old_new
    text = _read("trn2-core")
    assert old in text, old
    p = tmp_path / "bad.toml"
    p.write_text(text.replace(old, new, 1), encoding="utf-8")
    with pytest.raises(HardwareError, match=message) as info:
        load(str(p))
    assert "\n" not in str(info.value)


def test_malformed_message_names_the_file(tmp_path):
    p = tmp_path / "bad.toml"
    p.write_text(_read("trn2-core").replace(CLOCK, CLOCK.replace("2400000000", "0")))
    with pytest.raises(HardwareError) as info:
        load(str(p))
    assert str(info.value) == f"{p}: tensor.clock_hz.value=0 must be > 0"


# --- property: P is linear in physical cores and clock ------------------------------------------


def _sheet(clock: int, cores: int, per_device: int) -> str:
    return (
        _read("trn2-core")
        .replace(CLOCK, CLOCK.replace("2400000000", str(clock)))
        .replace('physical_cores = { value = 1,', f'physical_cores = {{ value = {cores},')
        .replace('cores_per_device = { value = 8,', f'cores_per_device = {{ value = {per_device},')
    )


@settings(deadline=None, max_examples=40)
@given(clock=st.integers(1, 10**10), cores=st.integers(1, 64), k=st.integers(1, 4))
def test_P_linear_in_cores_and_clock(clock, cores, k):
    one = loads(_sheet(clock, cores, 256))
    assert one.P("bf16") == 128 * 128 * 2 * clock * cores
    assert loads(_sheet(clock * k, cores, 256)).P("bf16") == k * one.P("bf16")
    more = loads(_sheet(clock, cores * k, 256))
    assert more.P("bf16") == k * one.P("bf16")
    assert more.P("fp32") * 4 == more.P("bf16")  # 128·128·2 is divisible by 4: exact
    # BW scales with cores too, so the ridge does not depend on the scope
    assert more.bw * 256 == 3 * TB * cores * k
    assert math.isclose(more.ridge(), one.ridge(), rel_tol=1e-12)
