"""Regression table of the fuzz campaign's named cases (issue 14): each bad input is refused with
exit 2 and one ``loopsim: error:`` line whose wording is pinned, never a traceback or exit 0."""

import json
import re

import pytest

from loopsim.frontends import spec
from loopsim.cli.main import main

BASE = spec.locate("matmul").read_text(encoding="utf-8")
COPY = spec.locate("copy").read_text(encoding="utf-8")


def sub(pattern: str, repl: str, text: str = BASE) -> str:
    out = re.sub(pattern, repl, text, count=1, flags=re.M)
    assert out != text, pattern  # the mutation applied
    return out


def deep_nest(depth: int) -> str:
    loops = "".join("  " * i + f"for v{i} in M by TM:\n" for i in range(depth))
    return sub(r"^body = '''\n(.|\n)*?'''", "body = '''\n" + loops + "  " * depth + "load A[v0, v0]\n'''")


#: name -> (file text, str or bytes, or None to use the argv as is), argv after the spec, pinned message
SPEC_CASES = {
    "inf param": (sub(r"^M = .*$", "M = inf"), [], r"params\.M=inf is not a number"),
    "nan param": (sub(r"^M = .*$", "M = nan"), [], r"params\.M=nan is not a number"),
    "1e400 param": (sub(r"^M = .*$", "M = 1e400"), [], r"params\.M=inf is not a number"),
    "float param": (sub(r"^M = .*$", "M = 1024.0"), [], r"params\.M=1024\.0 is a float"),
    "10**30 tile": (sub(r"^TK = .*$", "TK = " + str(10**30)), [],
                    r"params\.TK=a 31-digit integer exceeds the largest integer .*2\^62"),
    "2**63 step": (sub(r"^TK = .*$", "TK = '2**63'"), [], r"params\.TK=9223372036854775808 exceeds .*2\^62"),
    "5000 digits": (sub(r"^M = .*$", "M = " + "9" * 5000), [], r"malformed TOML: an integer of more than 4,300 digits"),
    "20000-term param": (sub(r"^M = .*$", "M = '" + "+".join(["1"] * 20000) + "'"), [],
                         r"params\.M: an expression of 39,999 characters; loopsim takes at most 10,000"),
    "2000-term param": (sub(r"^M = .*$", "M = '" + "+".join(["1"] * 2000) + "'"), [],
                        r"params\.M: an expression nested more than 100 levels deep"),
    "nest 1000 deep": (deep_nest(1000), [], r"the nest is more than 32 loops deep"),
    "non-UTF-8": (BASE.replace("matmul", "matmul \xe9", 1).encode("latin-1"), [],
                  r"not UTF-8 text \(byte 0xe9 at offset \d+\)"),
    "UTF-16": (BASE.encode("utf-16"), [], r"not UTF-8 text \(byte 0xff at offset 0\)"),
    "binary": (bytes(range(256)) * 16, [], r"not UTF-8 text \(byte 0x80 at offset 128\)"),
    "dotted key 100000 deep": ("a" + ".a" * 100000 + " = 1\n", [], r"line 1: a dotted key of more than 64 parts"),
    "array 100000 deep": ("a = " + "[" * 100000 + "]" * 100000 + "\n", [], r"malformed TOML: arrays or inline tables nested too deeply"),
    "params a list": ("params = [1, 2]\n" + sub(r"^\[params\].*\n(.|\n)*?\n\n", ""), [], r"params=\[1, 2\] must be a table"),
    "params an int": ("params = 5\n" + sub(r"^\[params\].*\n(.|\n)*?\n\n", ""), [], r"params=5 must be a table"),
    "tensor an int": (sub(r"^A = .*$", "A = 3"), [], r"tensors\.A=3 must be a table"),
    "dtype a list": (BASE.replace('dtype = "bf16"', 'dtype = ["bf16"]', 1), [], r"tensors\.A\.dtype=\['bf16'\] must be a dtype name"),
    "int8 matmul": (BASE.replace('dtype = "bf16"', 'dtype = "int8"'), [], r"tensors\.A\.dtype='int8': the Tensor Engine's matmul takes no int8 operands"),
    "bool partition axis": (BASE.replace("output = true", "output = true, partition_axis = true"), [],
                            r"tensors\.C\.partition_axis=True must be a dimension index"),
    "duplicated matmul": (BASE.replace("      matmul C[m, n] += A[k, m] @ B[k, n]\n",
                                       "      matmul C[m, n] += A[k, m] @ B[k, n]\n" * 2), [],
                          r"repeats the product of nest line \d+: it would be accumulated into C twice"),
    "unknown nest key": (BASE.replace("[nest]\n", "[nest]\nbuffer = 2\n"), [], r"nest: unknown key buffer; known: body, buffers"),
    "a [check] table (never read)": (BASE + "\n[check]\nformula = \"M\"\n", [], r"unknown table \[check\]"),
    "50 MB about": (sub(r"^about = .*$", "about = '" + "x" * (50 << 20) + "'"), [],
                    r"the spec file is larger than 1,048,576 bytes"),
    "lnc 1000000 cores": (BASE.replace("[nest]", "[lnc]\nsplit = \"m\"\ncores = 1000000\n\n[nest]"), [],
                          r"lnc\.cores=1000000 must be between 1 and 64"),
    "chips 0": (BASE + "\n[parallel]\nchips = 0\nover = \"K\"\n", [], r"parallel\.chips=0 must be an integer >= 2"),
    "chips 1": (BASE + "\n[parallel]\nchips = 1\nover = \"K\"\n", [], r"parallel\.chips=1 must be an integer >= 2"),
    "chips 2.5": (BASE + "\n[parallel]\nchips = 2.5\nover = \"K\"\n", [], r"parallel\.chips=2\.5 must be an integer >= 2"),
    "over Z": (BASE + "\n[parallel]\nchips = 2\nover = \"Z\"\n", [], r"parallel\.over='Z' must be one of: K, N"),
}
COMMANDS = {  # the same spec refused by every command that reads one
    "entitle": ["entitle", "{spec}", "-H", "trn2-core"],
    "compare": ["compare", "{spec}", "matmul", "-H", "trn2-core"],
    "formula": ["formula", "{spec}", "-H", "trn2-core"],
    "ceilings": ["ceilings", "{spec}", "-H", "trn2-core"],
}


def refused(capsys, argv, pattern) -> str:
    assert main([str(a) for a in argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("loopsim: error: "), err[:300]
    assert re.search(pattern, err), err[:300]
    return err


@pytest.mark.parametrize("name", SPEC_CASES)
def test_named_spec_case(tmp_path, capsys, name):
    text, extra, pattern = SPEC_CASES[name]
    p = tmp_path / "case.toml"
    p.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
    commands = COMMANDS if name in ("chips 0", "chips 2.5", "over Z", "lnc 1000000 cores", "int8 matmul") else {"entitle": COMMANDS["entitle"]}
    for argv in commands.values():
        err = refused(capsys, [a.format(spec=p) for a in argv] + extra, pattern)
        assert str(p) in err  # the file is named


ARGV_CASES = {
    "formula 1e400": (["check", "matmul", "-H", "trn2-core", "--formula", "1e400"], r"--formula: '1e400' column 1: 1e400 is inf"),
    "formula huge power": (["check", "matmul", "-H", "trn2-core", "--formula", "((((M**64)**64)**64)**64)"],
                           r"can reach more than 4096 bits with parameters up to 2\^62"),
    "formula 20000 terms": (["check", "matmul", "-H", "trn2-core", "--formula", "+".join(["M"] * 20000)],
                            r"an expression of 39,999 characters"),
    "formula power 65": (["check", "matmul", "-H", "trn2-core", "--formula", "M**65", "--examples", "1"],
                         r"--formula: .M\*\*65. column 1: exponent 65 must be an integer of at most 64"),
    "300-char sheet": (["entitle", "matmul", "-H", "x" * 300], r"unknown hardware 'x{77}\.\.\.'; known: .*trn2-core"),
    "capacity samples 1e5": (["capacity", "matmul", "-H", "trn2-core", "--samples", "100000"],
                             r"--samples=100000 must be between 2 and 1,000"),
    "set 5000 digits": (["entitle", "matmul", "-H", "trn2-core", "--set", "M=" + "9" * 5000],
                        r"--set M=<5000 digits> exceeds the largest integer loopsim accepts \(2\^62"),
    "set 2**62+1": (["entitle", "matmul", "-H", "trn2-core", "--set", f"M={2**62 + 1}"],
                    r"--set M=4611686018427387905 exceeds the largest integer"),
    "copy int64 wrap 3037000500": (["entitle", "copy", "-H", "toy", *(f"--set={n}=3037000500" for n in ("R", "C", "TR", "TC")),
                                    "--sbuf-bytes", str(2**62)],
                                   r"tensors\.X: 3,037,000,500 x 3,037,000,500 bf16 is " + f"{3037000500**2 * 2:,}" + " bytes, more than the largest tensor"),
    "copy int64 wrap 2**32": (["entitle", "copy", "-H", "toy", *(f"--set={n}=4294967296" for n in ("R", "C", "TR", "TC"))],
                              r"tensors\.X: 4,294,967,296 x 4,294,967,296 bf16 is .* bytes, more than the largest tensor"),
}


@pytest.mark.parametrize("name", ARGV_CASES)
def test_named_argv_case(capsys, name):
    argv, pattern = ARGV_CASES[name]
    refused(capsys, argv, pattern)


def test_a_folder_or_file_named_like_a_bundled_spec_does_not_hide_it(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "matmul").mkdir()
    (tmp_path / "toy").write_text("not a sheet")
    assert main(["entitle", "matmul", "-H", "toy", "--json"]) == 0
    assert '"kernel": "matmul"' in capsys.readouterr().out
    refused(capsys, ["entitle", "./matmul", "-H", "toy"], r"\./matmul: no such spec file")
    refused(capsys, ["entitle", "matmul", "-H", "./toy"], r"\./toy: \(file\)=<unparsable> is not valid TOML")


SHEET_CASES = {  # (sheet, (old, new) in hardware/SHEET.toml ...) -> pinned message
    "bw rounds to 0": ("toy", ("device_bw = { value = 100000000000,", "device_bw = { value = 1,"),
                       ("cores_per_device = { value = 1,", "cores_per_device = { value = 2,")),
    "mm_init_cycles 2^63": ("trn2-core", ("mm_init_cycles = { value = 64,", f"mm_init_cycles = {{ value = {2**63},"),),
    "mm_init_cycles 2^62": ("trn2-core", ("mm_init_cycles = { value = 64,", f"mm_init_cycles = {{ value = {2**62},"),),
    "factor 1e999999": ("toy", ('fp16 = { factor = 1,', 'fp16 = { factor = "1e999999",'),),
    "factor 1e99999999": ("toy", ('fp16 = { factor = 1,', 'fp16 = { factor = "1e99999999",'),),
    "unknown family": ("toy", ('family = "flat"', 'family = "gpu"'),),
    "flat sheet with a PE array": ("toy", ("[compute]\n", "[compute]\npe_rows = { value = 128, defined = \"x\" }\n"),),
}
SHEET_MESSAGES = {
    "bw rounds to 0": r"hbm\.device_bw\.value=1 ÷ cores_per_device 2 × physical_cores 1 rounds to 0 bytes/s",
    "mm_init_cycles 2^63": r"tensor\.mm_init_cycles\.value=9223372036854775808 exceeds the largest number",
    "mm_init_cycles 2^62": r"tensor\.mm_init_cycles\.value=4611686018427387904 exceeds 1,000,000 cycles",
    "factor 1e999999": r"compute\.dtypes\.fp16\.factor\.value='1e999999' must be an integer or a fraction",
    "factor 1e99999999": r"compute\.dtypes\.fp16\.factor\.value='1e99999999' must be an integer or a fraction",
    "unknown family": r"sheet\.toml: family='gpu' is not a known machine family; expected one of: neuron, flat",
    "flat sheet with a PE array": r"sheet\.toml: compute\.pe_rows=\{'value': 128, 'defined': 'x'\} is not a known key",
}


@pytest.mark.parametrize("name", SHEET_CASES)
def test_named_sheet_case(tmp_path, capsys, name):
    from loopsim.targets import hardware

    sheet, *edits = SHEET_CASES[name]
    text = (hardware._bundled_dir() / f"{sheet}.toml").read_text(encoding="utf-8")
    for old, new in edits:
        assert old in text
        text = text.replace(old, new)
    p = tmp_path / "sheet.toml"
    p.write_text(text, encoding="utf-8")
    refused(capsys, ["entitle", "matmul", "-H", str(p)], SHEET_MESSAGES[name])


def test_unreadable_sheet_and_spec(tmp_path, capsys):
    d = tmp_path / "folder.toml"
    d.mkdir()  # reading a folder fails with an OSError, as an unreadable file does
    refused(capsys, ["entitle", "matmul", "-H", str(d)], r"folder\.toml: no such hardware sheet file")
    refused(capsys, ["entitle", str(d), "-H", "toy"], r"folder\.toml: no such spec file")


@pytest.mark.parametrize("command", ["ceilings", "entitle"])
def test_a_tile_over_a_sheets_limit_cannot_run(capsys, command):
    # trn2-core bounds K_t by its 128 partitions and PE rows: a tile over the limit is a kernel
    # that cannot run (exit 3, the reason first), and no ceiling claims more than the peak
    assert main([command, "matmul", "-H", "trn2-core", "--set", "TK=512", "--json"]) == 3
    d = json.loads(capsys.readouterr().out)
    assert any(re.search(r"K_t=512 exceeds trn2-core's limit of 128", r) for r in d["infeasible_reasons"])
    assert all(c["factor"] is None or c["factor"] <= 1 for c in d["ceilings"])
    # the flat Day 1 machine has no tile limits: the same tiling runs there
    assert main([command, "matmul", "-H", "toy", "--set", "TK=512", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["infeasible_reasons"] == []


def test_no_work_has_no_rate(capsys):
    # W = Q = 0: neither roof binds and there is no rate (it was "rate = P, compute-bound")
    assert main(["entitle", "--flops", "0", "--bytes", "0", "-H", "toy", "--json"]) == 0
    out = capsys.readouterr().out
    assert '"rate": 0.0' in out and '"bound": "none"' in out
    assert main(["entitle", "--flops", "0", "--bytes", "0", "-H", "toy"]) == 0
    assert "T_best = 0 s (W = Q = 0: no work, no rate)" in capsys.readouterr().out


def test_memory_exhaustion_is_one_line_with_the_size(capsys, monkeypatch):
    from loopsim.sim import trace

    def build(*args, **kwargs):  # what numpy raises when the trace's arrays do not fit
        raise MemoryError("Unable to allocate 7.28 TiB for an array with shape (1000000000000,) "
                          "and data type int64")

    monkeypatch.setattr(trace, "build", build)
    refused(capsys, ["entitle", "matmul", "-H", "trn2-core", "--policy", "lru"],
            r"out of memory: Unable to allocate 7\.28 TiB for an array .*; use larger tiles")
