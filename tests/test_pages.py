"""The pages: the Tensor Engine clockwork and the kernel report, their numbers against the JSON
model output, and each page loaded in a real headless Chromium (tests/browser.py): no console
error, nothing fetched, the DOM's numbers equal to the CLI's JSON, the clockwork stepped, the
report laid out within A4 and Letter, screenshots taken."""

import json
import os
import re
import struct
from html.parser import HTMLParser
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from loopsim.analyses.clockwork import clockwork
from loopsim.base.fmt import fmt_time
from loopsim.cli.main import main
from loopsim.targets import hardware
from tests import browser

TRN1 = hardware.load("trn1-core")
#: Day 3: P = 128 x 128 PEs x 2 FLOP x 2.8 GHz, by hand
P_TRN1 = 128 * 128 * 2 * 2_800_000_000
NKI4 = "tilings/nki_tutorial/4_fully_optimized.toml"
ROOT = Path(__file__).resolve().parent.parent
#: screenshots of the browser tests go here (CI's output names them)
SHOTS = Path(os.environ.get("LOOPSIM_SHOTS", "/tmp/loopsim-pages"))


def run_json(capsys, *argv):
    assert main(list(argv) + ["--json"]) == 0
    return json.loads(capsys.readouterr().out)


# ---------------------------------------------------------------------------------------------
# the clockwork's numbers


def test_day3_check_reads_45_9_tflops_and_22_9_ns():
    # K = 64 fills 64 of 128 rows: P/2; N = 32 still costs MM_INIT = 64 cycles: P x 32/64
    half = clockwork(TRN1, K=64, N=512)
    short = clockwork(TRN1, K=128, N=32)
    assert half.P == P_TRN1 == 91_750_400_000_000
    assert half.rate == pytest.approx(P_TRN1 * 64 / 128, rel=1e-12)
    assert short.rate == pytest.approx(P_TRN1 * 32 / 64, rel=1e-12)
    assert f"{half.rate / 1e12:.1f}" == f"{short.rate / 1e12:.1f}" == "45.9"
    assert short.cycles_per_instruction == 64 and half.cycles_per_instruction == 512
    assert f"{short.instruction_s * 1e9:.1f}" == "22.9"  # 64 / 2.8 GHz = 22.857 ns
    assert dict(half.factors)["partition_fill"] == 0.5 and dict(short.factors)["issue_rate"] == 0.5


@given(K=st.integers(1, 128), M=st.integers(1, 128), N=st.integers(1, 512),
       count=st.integers(1, 9), dtype=st.sampled_from(["bf16", "fp32"]))
def test_clockwork_is_the_closed_form(K, M, N, count, dtype):
    cw = clockwork(TRN1, K=K, M=M, N=N, dtype=dtype, count=count)
    slow = 4 if dtype == "fp32" else 1  # "instruction cost is roughly 4x higher" for fp32 [S1]
    cycles = max(N, 64) * slow
    assert cw.W == 2 * K * M * N * count
    assert (cw.cycles_per_instruction, cw.total_cycles) == (cycles, cycles * count)
    # rate = W / (cycles x 1/clock), and = P_dtype x K/128 x M/128 x N/max(N, 64)
    assert cw.rate == pytest.approx(cw.W * 2.8e9 / (cycles * count), rel=1e-12)
    f = 0.25 if dtype == "fp32" else 1.0
    assert cw.rate == pytest.approx(P_TRN1 * f * K / 128 * M / 128 * N / max(N, 64), rel=1e-12)
    assert cw.instruction_s == pytest.approx(cycles / 2.8e9, rel=1e-12)


def test_clockwork_numbers_are_those_of_loopsim_ceilings_on_its_spec(capsys, tmp_path):
    cw = run_json(capsys, "clockwork", "--k", "64", "--n", "48", "--m", "96", "--count", "3")
    spec = tmp_path / "cw.toml"
    spec.write_text(cw["spec"])
    c = run_json(capsys, "ceilings", str(spec), "-H", "trn1-core")
    by = {x["name"]: x for x in c["ceilings"]}
    assert cw["rate"] == by["combined"]["P"] and cw["T"] == by["combined"]["T"]
    assert cw["instruction_s"] == c["instruction_s"] and cw["W"] == c["W"]
    assert cw["factors"] == {n: x["factor"] for n, x in by.items() if x["factor"] is not None}
    assert c["matmul_instructions"] == 3


@pytest.mark.parametrize("argv, words", [
    (["--json", "--k", "129"], "--k 129: must be 1 to 128"),
    (["--json", "--n", "0"], "--n 0: must be 1 to 512"),
    (["--json", "--count", "0"], "--count 0: must be 1 to 4096"),
    (["--json", "--dtype", "int4"], "--dtype int4: trn1-core has no Tensor Engine roof"),
    (["--json", "-H", "trn2-lnc2"], "the clockwork is one physical core's"),
    (["--json", "-H", "toy"], "toy: its P is not derived from a PE array (a flat machine)"),
    ([], "give -o FILE.html"),
])
def test_clockwork_bad_input_is_one_line(capsys, argv, words):
    assert main(["clockwork", *argv]) == 2
    err = capsys.readouterr().err
    assert words in err and err.count("\n") == 1


@pytest.mark.parametrize("argv, words", [
    (["nope"], "nope"),
    (["matmul", "--set", "TK=0"], "TK"),
    (["matmul", "--measured", "missing.json"], "missing.json: cannot read"),
])
def test_report_bad_input_is_one_line_and_writes_nothing(capsys, tmp_path, argv, words):
    out = tmp_path / "r.html"
    assert main(["report", *argv, "-H", "trn1-core", "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert words in err and err.count("\n") == 1 and err.startswith("loopsim: error: ")
    assert not out.exists()


def test_report_json_is_entitle_json_and_dma_json(capsys, tmp_path):
    out = str(tmp_path / "r.html")
    rep = run_json(capsys, "report", "matmul_hoisted", "-H", "trn2-core", "--set", "M=512", "-o", out)
    ent = run_json(capsys, "entitle", "matmul_hoisted", "-H", "trn2-core", "--set", "M=512")
    dma = run_json(capsys, "dma", "matmul_hoisted", "-H", "trn2-core", "--set", "M=512")
    assert rep.pop("output") == out and rep.pop("dma") == {"kernels": dma["kernels"]}
    assert rep == ent
    assert Path(out).read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


class _Nums(HTMLParser):
    """The (data-key, data-value) pairs of a page, read without a browser."""

    def __init__(self):
        super().__init__()
        self.found = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if "data-key" in a:
            self.found.append((a["data-key"], json.loads(a["data-value"])))


@settings(max_examples=8)
@given(M=st.sampled_from([128, 384, 1000]), N=st.sampled_from([512, 700, 2048]),
       K=st.sampled_from([128, 640]), TN=st.sampled_from([128, 512]),
       hw=st.sampled_from(["trn1-core", "trn2-core", "toy"]))
def test_report_numbers_are_entitle_json_for_any_tiling(M, N, K, TN, hw):
    import contextlib
    import io
    import tempfile

    sets = [a for n, v in (("M", M), ("N", N), ("K", K), ("TN", TN)) for a in ("--set", f"{n}={v}")]
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "r.html")
        with contextlib.redirect_stdout(io.StringIO()):
            main(["report", "matmul", "-H", hw, *sets, "-o", out])
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            main(["entitle", "matmul", "-H", hw, *sets, "--json"])
        ent = json.loads(buf.getvalue())
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            main(["dma", "matmul", "-H", hw, *sets, "--json"])
        dma = json.loads(buf.getvalue())
        p = _Nums()
        p.feed(Path(out).read_text(encoding="utf-8"))
    assert len(p.found) >= 40
    for key, value in p.found:
        assert value == (at({"dma": dma}, key) if key.startswith("dma.") else at(ent, key)), key


def test_report_refuses_a_non_html_output_before_work(capsys, tmp_path):
    assert main(["report", "matmul", "-H", "trn1-core", "-o", str(tmp_path / "r.png")]) == 2
    assert "a page is written as .html" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


# ---------------------------------------------------------------------------------------------
# the pages in Chromium


@pytest.fixture(scope="module")
def chrome():
    if browser.find() is None:
        if os.environ.get("CI"):
            pytest.fail("no Chromium: .ci/run installs the Debian package chromium")
        pytest.skip("no Chromium on this machine (apt-get install chromium)")
    SHOTS.mkdir(parents=True, exist_ok=True)
    with browser.Browser() as b:
        yield b


def dom_numbers(page) -> list[tuple[str, object, str]]:
    return [(k, json.loads(v), t) for k, v, t in page.eval(
        "Array.from(document.querySelectorAll('.num')).map(e => [e.dataset.key, e.dataset.value, e.textContent])")]


def at(d, key: str):
    for part in key.split("."):
        d = d[int(part)] if isinstance(d, list) else d[part]
    return d


#: SI prefixes of the pages' units
_PREFIX = {"T": 1e12, "G": 1e9, "M": 1e6, "k": 1e3, "m": 1e-3, "µ": 1e-6, "n": 1e-9}


def shown(text: str) -> float | str:
    """The number a page's text shows ("187.2 µs" -> 1.872e-4, "91.75 TFLOP/s" -> 9.175e13,
    "71.5%" -> 0.715, "17,179,869,184" -> 17179869184); a word stays a string."""
    m = re.fullmatch(r"(-?[\d,]*\.?\d+(?:e[+-]?\d+)?)\s*(%|([TGMkmµn]?)(s|FLOP/s|B/s|Hz))?", text)
    if not m:
        return text
    v = float(m.group(1).replace(",", ""))
    if m.group(2) == "%":
        return v / 100
    return v * _PREFIX.get(m.group(3) or "", 1.0)


def assert_text_shows_value(key, value, text):
    """The text a page shows for a number is that number, to the digits shown."""
    got = shown(text)
    if isinstance(value, str) or isinstance(value, bool) or value is None:
        assert got == value or text == str(value), (key, value, text)
        return
    assert not isinstance(got, str), (key, value, text)
    digits = len(re.sub(r"\D", "", text.split("e")[0].lstrip("0.").replace(",", ""))) or 1
    assert got == pytest.approx(value, rel=0.6 * 10 ** (1 - digits), abs=1e-300), (key, value, text)


def test_shown_reads_the_pages_formats():
    assert shown("187.2 µs") == pytest.approx(187.2e-6) and shown("22.9 ns") == pytest.approx(22.9e-9)
    assert shown("91.75 TFLOP/s") == pytest.approx(91.75e12) and shown("71.5%") == pytest.approx(0.715)
    assert shown("17,179,869,184") == 17179869184 and shown("410 GB/s") == 410e9
    assert shown("2.8 GHz") == 2.8e9 and shown("compute") == "compute"
    assert_text_shows_value("x", 45.8752e12, "45.9 TFLOP/s")
    with pytest.raises(AssertionError):
        assert_text_shows_value("x", 45.8752e12, "46.9 TFLOP/s")


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])


def no_fetches(page) -> None:
    """Nothing loaded besides the page itself: no resource entries, no external reference."""
    assert page.eval("performance.getEntriesByType('resource').length") == 0
    assert page.eval("Array.from(document.querySelectorAll('[src],link[href]')).length") == 0


def shot(page, name: str) -> Path:
    path = SHOTS / name
    w, h = png_size(page.screenshot(path))
    assert w >= 800 and h >= 600
    print(f"screenshot {path} ({w}x{h})")
    return path


def text(page, id_: str) -> str:
    return page.eval(f"document.getElementById('{id_}').textContent")


def click(page, id_: str, times: int = 1) -> None:
    page.eval(f"for (let i = 0; i < {times}; i++) document.getElementById('{id_}').click()")


@pytest.mark.parametrize("k, n, rate_text, ns_text", [(64, 512, "45.9 TFLOP/s", "183 ns"),
                                                      (128, 32, "45.9 TFLOP/s", "22.9 ns")])
def test_clockwork_page_in_chromium(chrome, capsys, tmp_path, k, n, rate_text, ns_text):
    out = tmp_path / "cw.html"
    d = run_json(capsys, "clockwork", "--k", str(k), "--n", str(n), "-o", str(out))
    page = chrome.open(out)
    assert page.errors == []
    no_fetches(page)
    nums = dom_numbers(page)
    assert {key for key, _, _ in nums} >= {"P", "rate", "instruction_s", "cycles_per_instruction",
                                           "factors.partition_fill", "factors.issue_rate", "W"}
    for key, value, t in nums:
        assert value == at(d, key), key
        assert_text_shows_value(key, value, t)
    shown = {key: t for key, _, t in nums}
    assert shown["rate"] == rate_text and shown["instruction_s"] == ns_text
    assert shown["P"] == "91.75 TFLOP/s"
    cpi, total = d["cycles_per_instruction"], d["total_cycles"]
    # step cycle by cycle: the page's counter follows, and the FLOPs done are 2KM per column issued
    click(page, "step", 5)
    assert text(page, "cycle") == "5"
    assert text(page, "flops-done") == f"{2 * k * 128 * min(5, n):,}"
    click(page, "back", 2)
    assert text(page, "cycle") == "3"
    click(page, "next")
    assert text(page, "cycle") == f"{cpi:,}" and text(page, "instruction") == f"2 of {d['count']}"
    # the squares of 8 x 8 PEs computing at a cycle: those where some instruction i's moving
    # column j = g - i x cpi - (k + m) is one of its N (one cycle of skew per row and column)
    for g in (5, 100, min(300, total), cpi + 7):
        page.eval(f"(s => {{ s.value = {g}; s.dispatchEvent(new Event('input')); }})(document.getElementById('slider'))")
        busy = page.eval("Array.from(document.querySelectorAll('#array rect[data-r]')).filter("
                         "e => !['var(--idle)', '#dbe5f0'].includes(e.getAttribute('fill'))).length")
        want = sum(any(0 <= g - i * cpi - 8 * (r + c) < n for i in range(d["count"]))
                   for r in range(k // 8) for c in range(128 // 8))
        assert busy == want, g
    if n < 64:  # N = 32: cycles 32..63 of an instruction wait out MM_INIT
        page.eval("(s => { s.value = 40; s.dispatchEvent(new Event('input')); })(document.getElementById('slider'))")
        assert text(page, "phase").startswith("waiting: MM_INIT")
    page.eval(f"(s => {{ s.value = {total}; s.dispatchEvent(new Event('input')); }})(document.getElementById('slider'))")
    assert text(page, "cycle") == f"{total:,}" and text(page, "flops-done") == f"{d['W']:,}"
    assert text(page, "rate-so-far") == rate_text  # W over all the cycles: the effective rate
    # play runs the clock, pause stops it
    page.eval("document.getElementById('slider').value = 0; document.getElementById('slider').dispatchEvent(new Event('input'))")
    click(page, "play")
    page.eval("new Promise(r => setTimeout(r, 300))")
    click(page, "play")
    c1 = int(text(page, "cycle").replace(",", ""))
    page.eval("new Promise(r => setTimeout(r, 200))")
    assert 0 < c1 == int(text(page, "cycle").replace(",", ""))
    page.eval("document.getElementById('slider').value = 100; document.getElementById('slider').dispatchEvent(new Event('input'))")
    shot(page, f"clockwork-k{k}-n{n}.png")
    assert page.errors == []


#: the profiles the report is tested with: the profiler's summary shape, and a bare time
PROFILES = {"summary": {"summary": [{"total_time": 0.000262, "hardware_flops": 17179869184,
                                     "transpose_flops": 0, "hbm_read_bytes": 16777216,
                                     "hbm_write_bytes": 16777216}]},
            "time": {"time_s": 0.0002}}


NKI_BLOCKED = ["tests/nki_kernels/matmul_isa.py::blocked", "--arg", "lhsT=1024x4096",
               "--arg", "rhs=1024x2048", "--kwarg", "TILES_M=2"]


@pytest.mark.parametrize("spec, extra, hw, measured", [
    (NKI4, [], "trn1-core", "summary"),                  # the tutorial's fully optimized kernel
    ("copy", [], "trn2-core", "time"),                   # W = 0; the DMA ceiling in the gap
    ("mlp_unfused", ["--set", "B=256"], "trn1-core", None),  # a program of three kernels
    ("matmul_small_tiles", ["--set", "M=512"], "trn1-core", None),  # lower ceilings bind
    ("matmul_blocked", [], "toy", None),                 # cannot run: exit 3, the page written
    (NKI_BLOCKED[0], NKI_BLOCKED[1:], "trn2-core", None),  # an NKI kernel, traced
])
def test_report_page_in_chromium(chrome, capsys, tmp_path, spec, extra, hw, measured):
    out = tmp_path / "report.html"
    if measured:
        profile = tmp_path / "profile.json"
        profile.write_text(json.dumps(PROFILES[measured]))
    opts = [*extra, "-H", hw] + (["--measured", str(profile)] if measured else [])
    status = main(["report", spec, *opts, "-o", str(out)])
    capsys.readouterr()
    ent = json.loads(_out(capsys, ["entitle", spec, *opts, "--json"]))
    dma = json.loads(_out(capsys, ["dma", spec, *extra, "-H", hw, "--json"]))
    assert status == (0 if ent["feasible"] else 3)
    page = chrome.open(out, width=1100)
    assert page.errors == []
    no_fetches(page)
    nums = dom_numbers(page)
    keys = {key for key, _, _ in nums}
    assert keys >= {"T", "W", "Q", "I", "T_best", "sbuf.peak", "dma.kernels.0.transfers"}
    assert {f"tensors.{t}.r" for t in ent["tensors"]} <= keys
    assert ("measured.gap" in keys) == bool(measured)
    if measured:  # the gap's causes add up to the gap (the measured model's table, shown whole)
        causes = [v for k, v, _ in nums if re.fullmatch(r"measured\.gap_table\.\d+\.seconds", k)]
        assert causes and sum(causes) == pytest.approx(ent["measured"]["gap"], rel=1e-9)
    for key, value, t in nums:  # every number the page shows is the CLI's JSON, exactly
        want = at({"dma": dma}, key) if key.startswith("dma.") else at(ent, key)
        assert value == want, key
        assert_text_shows_value(key, value, t)
    assert page.eval("document.querySelectorAll('figure.roofline svg').length") == 1
    assert text(page, "verdict").startswith(f"T = {fmt_time(ent['T'])}, limited by {ent['limit']}")
    if spec == NKI4:  # T_best = W/P = 2 x 4096 x 2048 x 1024 / (128 x 128 x 2 x 2.8e9) = 187.2 µs
        assert {k: t for k, _, t in nums}["T_best"] == "187.2 µs"
    for name in ent.get("timeline") or {}:  # each predicted timeline: its numbers and its picture
        assert f"timeline.{name}.T" in keys
    assert page.eval("document.querySelectorAll('figure.timeline svg').length") == len(ent.get("timeline") or {})
    if not ent["feasible"]:
        assert "cannot run as written" in text(page, "verdict")
        assert ent["infeasible_reasons"][0] in text(page, "verdict")
    # printed on A4 and Letter: nothing wider than the paper's printable width (12 mm margins)
    for paper, mm in (("A4", 210), ("Letter", 215.9)):
        page.b.send("Emulation.setEmulatedMedia", {"media": "print"}, session=page.session)
        width = int((mm - 24) / 25.4 * 96)
        page.b.send("Emulation.setDeviceMetricsOverride", {"width": width, "height": 1000,
                    "deviceScaleFactor": 1, "mobile": False}, session=page.session)
        assert page.eval("document.documentElement.scrollWidth") <= width, paper
        pdf = page.pdf(paper)
        assert pdf.startswith(b"%PDF") and len(re.findall(rb"/Type\s*/Page[^s]", pdf)) >= 1, paper
    page.b.send("Emulation.setEmulatedMedia", {"media": ""}, session=page.session)
    page.b.send("Emulation.setDeviceMetricsOverride", {"width": 1100, "height": 900,
                "deviceScaleFactor": 1, "mobile": False}, session=page.session)
    shot(page, f"report-{Path(spec.split('::')[0]).stem}-{hw}.png")
    assert page.errors == []


def _out(capsys, argv) -> str:
    main(argv)
    return capsys.readouterr().out
