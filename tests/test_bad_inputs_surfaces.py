"""Regression table of issue 25 (the surfaces added since issue 14: kernel files, search flags,
calibrate and profile JSON, outputs): each bad input is refused with exit 2 and one pinned
``loopsim: error:`` line, never a traceback, a hang or a silently wrong answer; each input that
was wrongly refused now runs, with its numbers checked against a hand count."""

import json
import os
import pickle
import re
import shutil
import signal
import stat
import subprocess
import textwrap
import sys
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest

from loopsim.base import limits, numba_env
from loopsim.cli.main import main

ROOT = Path(__file__).resolve().parent.parent
MATMUL = str(ROOT / "tests" / "nki_kernels" / "matmul_isa.py")
BLOCKED = [f"{MATMUL}::blocked", "--arg", "lhsT=1024x4096", "--arg", "rhs=1024x2048", "-H", "trn2-core"]

#: a copy kernel in the NKI idiom: 128-row tiles of a (R x C) loaded and stored; its keywords
#: are ints with default 0 (offset, code) and its side effects are chosen by ``code``
KERNEL = '''
import sys
import nki
import nki.language as nl


@nki.jit
def copy(a, offset=0, code=0, note="x"):
    print("a line the kernel prints")
    if code == 1:
        sys.exit(0)
    if code == 2:
        raise SystemExit(3)
    if code == 3:
        while True:
            pass
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(a.shape[0] // 128):
        t = nl.load(a[i * 128:(i + 1) * 128, :])
        nl.store(out[i * 128:(i + 1) * 128, :], t)
    return out


def huge(a, trips=10**30):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(trips):
        t = nl.load(a[i * 128:(i + 1) * 128, :])
        nl.store(out[i * 128:(i + 1) * 128, :], t)
    return out
'''


@pytest.fixture
def kernel(tmp_path) -> str:
    p = tmp_path / "copy_kernel.py"
    p.write_text(KERNEL)
    return str(p)


def refused(capsys, argv, pattern) -> str:
    assert main([str(a) for a in argv]) == 2
    out, err = capsys.readouterr()
    assert err.count("\n") == 1 and err.startswith("loopsim: error: "), err[:400]
    assert "Traceback" not in err and re.search(pattern, err), err[:400]
    return err


# ---------------------------------------------------------------------------------------------
# kernel files (rows 3, 4, 5, 7, 8, 9)

#: --kwarg VALUE on blocked's integer TILES_M (default 2) -> pinned message; it was replaced by 2
KWARG_CASES = {
    "True": r"matmul_isa\.py: kernel blocked: parameter TILES_M=True must be an integer, as its default 2 is",
    "2.5": r"parameter TILES_M=2\.5 must be an integer",
    "'x'": r"parameter TILES_M='x' must be an integer",
    "None": r"parameter TILES_M=None must be an integer",
    "(1,2)": r"parameter TILES_M=\(1, 2\) must be an integer",
    "1e400": r"parameter TILES_M=inf must be an integer",
    str(10**30): r"params\.TILES_M=a 31-digit integer exceeds the largest parameter .*2\^62",
}


@pytest.mark.parametrize("value", KWARG_CASES)
def test_a_kwarg_is_passed_as_given_or_refused(capsys, value):
    err = refused(capsys, ["entitle", *BLOCKED, "--kwarg", f"TILES_M={value}"], KWARG_CASES[value])
    assert err.count("matmul_isa.py") == 1  # the file named once


def test_an_integer_kwarg_is_the_one_traced(capsys):
    # TILES_M=4: blocks of 4 x 2 output tiles; lhsT (4096 x 1024 elements... K x M = 1024 x 4096)
    # is read once per M-block: Q_lhsT = 2 * 1024 * 4096 = 8 MiB; rhs (1024 x 2048) once per
    # (M-block, N-block) = (4096 / 512) = 8 M-blocks -> 8 * 4 MiB = 32 MiB; C written once, 16 MiB
    assert main(["entitle", *BLOCKED, "--kwarg", "TILES_M=4", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["params"]["TILES_M"] == 4
    assert d["Q"] == 2 * 1024 * 4096 + 8 * 2 * 1024 * 2048 + 2 * 4096 * 2048


def test_a_kernel_keyword_with_default_0_runs(capsys, kernel):
    # was: "params.offset=0 must be > 0". The copy moves R x C bf16 in and out: Q = 2 * 2 * R * C
    assert main(["entitle", f"{kernel}::copy", "--arg", "a=1024x512", "-H", "trn2-core", "--json"]) == 0
    out, err = capsys.readouterr()
    d = json.loads(out)  # the kernel's print went to stderr: stdout is one JSON object
    assert (d["W"], d["Q"], d["params"]["offset"]) == (0, 2 * 2 * 1024 * 512, 0)
    assert err == "a line the kernel prints\n"
    assert main(["entitle", f"{kernel}::copy", "--arg", "a=1024x512", "-H", "trn2-core", "--kwarg",
                 "offset=-3", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["params"]["offset"] == -3


KERNEL_CASES = {  # name -> (function, extra argv, pinned message)
    "sys.exit(0)": ("copy", ["--kwarg", "code=1"],
                    r"copy_kernel\.py:11: kernel copy: the kernel called sys\.exit\(0\): a kernel ends by returning, "
                    r"and its exit is an error of the kernel \(the kernel printed 1 line before; the last: "
                    r"'a line the kernel prints'\)$"),
    "SystemExit(3)": ("copy", ["--kwarg", "code=2"], r"copy_kernel\.py:13: kernel copy: the kernel called sys\.exit\(3\)"),
    "kwarg of a str": ("copy", ["--kwarg", "note=3"], r"parameter note=3 must be a string, as its default 'x' is"),
    "kwarg 200,000 brackets": ("copy", ["--kwarg", "note=" + "(" * 100000 + ")" * 100000],
                               r"--kwarg note='\(\(\(.*\.\.\.<200,000 characters>' is not a Python literal loopsim takes"),
    "affine_range(10**30)": ("huge", [], r"copy_kernel\.py:26: kernel huge: affine_range bound=a 31-digit integer "
                                         r"exceeds the largest loop bound"),
    "affine_range(2**62) over 1,024 rows": ("huge", ["--kwarg", f"trips={2**62}"],
                                            r"out of memory: numpy cannot allocate an array that large"),
    "5000-digit --arg": ("copy", ["--arg", "b=1024x" + "9" * 5000], r"--arg b=<5,000 digits> exceeds the largest integer"),
    "--grid 2^63x2": ("copy", ["--grid", f"{2**63}x2"], r"--grid=9223372036854775808 exceeds the largest integer"),
    "--grid 2^62x2": ("copy", ["--grid", f"{2**62}x2"], r"--grid 4611686018427387904x2 \(launches in all\)=9223372036854775808 exceeds"),
    "--grid 9 dims": ("copy", ["--grid", "x".join(["2"] * 9)], r"--grid '2x2x2x2x2x2x2x2x2' must look like G0\[xG1...\], 1 to 8"),
}


@pytest.mark.parametrize("name", KERNEL_CASES)
def test_named_kernel_case(capsys, kernel, name):
    func, extra, pattern = KERNEL_CASES[name]
    args = ["--arg", "a=1024x512"] if "--arg" not in extra else []
    refused(capsys, ["entitle", f"{kernel}::{func}", *args, *extra, "-H", "trn2-core"], pattern)


def test_an_endless_kernel_is_stopped_at_the_time_limit(capsys, kernel, monkeypatch):
    monkeypatch.setattr(limits, "MAX_TRACE_S", 0.5)
    t = time.perf_counter()
    refused(capsys, ["entitle", f"{kernel}::copy", "--arg", "a=1024x512", "--kwarg", "code=3", "-H", "trn2-core"],
            r"copy_kernel\.py:1[56]: kernel copy: the kernel ran for more than 0\.5 s under the shim \(an endless loop\?\)")
    assert time.perf_counter() - t < 10


def test_an_int8_matmul_operand_is_refused_for_kernels_as_for_specs(capsys):
    refused(capsys, ["entitle", f"{MATMUL}::blocked", "--arg", "lhsT=1024x4096:int8", "--arg", "rhs=1024x2048",
                     "-H", "trn2-core"],
            r"matmul_isa\.py:88: kernel blocked: --arg lhsT=\.\.\.:int8: the Tensor Engine's matmul takes no int8 operands")


def test_crossover_of_a_kernel_dimension(capsys):
    # was refused at K=1 (K // 128 = 0 tiles); over multiples of 128 the answer must be where the
    # bound flips, checked with entitle at the value found and the multiple below it
    argv = [f"{MATMUL}::blocked", "--arg", "lhsT=Kx4096", "--arg", "rhs=Kx2048", "--set", "K=1024", "-H", "trn2-core"]
    err = refused(capsys, ["crossover", *argv, "--dim", "K", "--quiet"], r"give --multiple-of N")
    assert "--dim K=1, where the search starts" in err
    assert main(["crossover", *argv, "--dim", "K", "--multiple-of", "128", "--json", "--quiet"]) == 0
    k = json.loads(capsys.readouterr().out)["value"]
    assert k % 128 == 0 and k > 128

    def bound(v):
        assert main(["entitle", *[a if a != "K=1024" else f"K={v}" for a in argv], "--json"]) == 0
        d = json.loads(capsys.readouterr().out)
        return d["W"] * d["BW"] >= d["Q"] * d["P"]

    assert bound(k) and not bound(k - 128)


# ---------------------------------------------------------------------------------------------
# flags: limits at the boundary (rows 6, 7, 9)

FLAG_CASES = {
    "--top 10^9": (["search", "matmul", "-H", "trn2-core", "--top", str(10**9)], r"--top 1000000000 is not between 1 and 1,000"),
    "--lnc 10^6": (["entitle", "matmul", "-H", "trn2-core", "--lnc", "1000000"], r"--lnc 1000000 is not between 1 and 64"),
    "--sbuf-bytes 2^70": (["entitle", "matmul", "-H", "trn2-core", "--sbuf-bytes", str(2**70)],
                          r"--sbuf-bytes <22 digits> is not between 1 and 2\^62"),
    "--sbuf-bytes 0": (["entitle", "matmul", "-H", "trn2-core", "--sbuf-bytes", "0"], r"--sbuf-bytes 0 is not between 1 and 2\^62"),
    "--link-bw x": (["entitle", "matmul", "-H", "trn2-core", "--link-bw", "x"], r"--link-bw 'x' is not an integer"),
    "--jobs 10^6": (["compare", "matmul", "-H", "trn2-core", "--vary", "TN=64,128", "--jobs", "1000000"],
                    r"--jobs 1000000 is not between 1 and 4,096"),
    "--examples 10^6": (["check", "matmul", "-H", "trn2-core", "--formula", "M", "--examples", "1000000"],
                        r"--examples 1000000 is not between 1 and 100,000"),
    "--capacity 2^63": (["replay", "x.npz", "--capacity", str(2**63)], r"--capacity 9223372036854775808 is not between 1 and 2\^62"),
    "--scheduler garbage": (["compare", "matmul", "-H", "trn2-core", "--vary", "TN=64,128", "--scheduler", "garbage"],
                            r"--scheduler garbage: not a Dask scheduler address \(missing port number"),
    "--scheduler port 10^8": (["compare", "matmul", "-H", "trn2-core", "--vary", "TN=64,128", "--scheduler", "tcp://h:99999999"],
                              r"port 99999999 is not between 1 and 65535"),
}


@pytest.mark.parametrize("name", FLAG_CASES)
def test_named_flag_case(capsys, name):
    argv, pattern = FLAG_CASES[name]
    refused(capsys, argv, pattern)


def test_jobs_are_capped_at_the_cores():
    from loopsim.analyses.parallel import check_jobs, default_jobs

    assert check_jobs(1000) == default_jobs() and check_jobs(1) == 1 and check_jobs(None) == default_jobs()


def test_a_replay_estimated_over_the_limit_is_refused_without_force(capsys, monkeypatch):
    # the estimate is measured on the trace itself before the replay; with the note threshold and
    # the limit at 0 every replay is "long": refused with its estimate, run with --force
    from loopsim.sim import stream

    from loopsim.count import counts

    monkeypatch.setattr(counts, "STREAM_ABOVE", 0)
    monkeypatch.setattr(stream, "NOTE_ABOVE", 0)
    monkeypatch.setattr(stream, "SAMPLE", 1 << 10)
    monkeypatch.setattr(limits, "MAX_WORK_S", 0.0)
    argv = ["entitle", "matmul", "-H", "trn2-core", "--policy", "lru", "--json",
            *(f"--set={n}=32" for n in ("TM", "TK", "TN"))]  # ~10^5 requests, over 2 samples
    refused(capsys, argv, r"tilings/matmul\.toml: the lru replay of [\d,]+ requests: estimated [\d,]+ s on one "
                          r"core, more than loopsim runs without --force \(0 s; see docs/errors\.md\)")
    assert main([*argv, "--force"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["Q"] > 0 and "loopsim: note: matmul replays up to" in err
    assert main(argv) == 2  # --force holds for its own run only
    capsys.readouterr()


def test_the_big_matmul_replay_is_refused_with_an_estimate_in_seconds(capsys):
    # 262144^3 in 64 x 64 x 128 tiles under lru: (262144/64)^2 x 262144/128 = 3.4e10 matmul
    # instructions, 2.4e11 requests, hours; refused after a short measurement, not run (the
    # measurement's arrays hold every tile: 1048576^3 in the default tiles took 13 s of the suite)
    t = time.perf_counter()
    refused(capsys, ["entitle", "matmul", "-H", "trn2-core", "--policy", "lru",
                     *(f"--set={n}=262144" for n in "MNK"), "--set=TM=64", "--set=TK=64",
                     "--set=TN=128"],
            r"the lru replay of 240,526,557,184 requests: estimated [\d,]+ s on one core")
    assert time.perf_counter() - t < 60


def test_a_100001_digit_sheet_value_is_one_line_quickly(tmp_path, capsys):
    from loopsim.targets import hardware

    text = (hardware._bundled_dir() / "toy.toml").read_text(encoding="utf-8")
    i = text.index("value = ", text.index("device_bw"))
    j = text.index(",", i)
    for name, value, pattern in (("int", "1" + "0" * 100000, r"an integer of more than 4,300 digits"),
                                 ("float", "1" + "0" * 100000 + ".0", r"hbm\.device_bw\.value=inf must be an integer")):
        p = tmp_path / f"{name}.toml"
        p.write_text(text[:i] + "value = " + value + text[j:], encoding="utf-8")
        t = time.perf_counter()
        refused(capsys, ["entitle", "matmul", "-H", str(p)], pattern)
        assert time.perf_counter() - t < 5  # the dotted-key scan was quadratic in a long value


# ---------------------------------------------------------------------------------------------
# data files: calibrate measurements and profiles (row 8)

JSON_CASES = {  # name -> (file text, pinned message)
    "5e-324": ('[{"spec": "matmul", "time_s": 5e-324}]', r"the JSON number 5e-324 is subnormal"),
    "1e-400": ('[{"spec": "matmul", "time_s": 1e-400}]', r"the JSON number 1e-400 rounds to 0"),
    "1e400": ('[{"spec": "matmul", "time_s": 1e400}]', r"the JSON number 1e400 is too large for a float"),
    "401 digits": ('[{"spec": "matmul", "time_s": 1%s}]' % ("0" * 400), r"a JSON number of 401 characters .*at most 100"),
    "5001 digits": ('[{"spec": "matmul", "time_s": 1%s}]' % ("0" * 5000), r"a JSON number of 5,001 characters"),
    "NaN": ('[{"spec": "matmul", "time_s": NaN}]', r"NaN is not JSON \(a number must be finite\)"),
    "nested 1000": ("[" * 1000 + "]" * 1000, r"JSON nested 1,000 levels deep; loopsim reads at most 64"),
    "nested 100000": ("[" * 100000 + "]" * 100000, r"JSON nested 100,000 levels deep"),
    "1e-300 s": ('[{"spec": "matmul", "time_s": 1e-300}]', r"time_s=1e-300 (s )?is (outside 1e-12 \.\. 604800 s|below 1e-12 s)"),
}


@pytest.mark.parametrize("name", JSON_CASES)
@pytest.mark.parametrize("reader", ["calibrate", "measured"])
def test_named_json_case(tmp_path, capsys, name, reader):
    text, pattern = JSON_CASES[name]
    if reader == "measured":  # the same number inside a profile
        text = text.replace('[{"spec": "matmul", ', "{").replace("}]", "}") if "spec" in text else text
    p = tmp_path / "data.json"
    p.write_text(text)
    argv = (["calibrate", p, "-H", "trn2-core", "-o", tmp_path / "out.toml"] if reader == "calibrate"
            else ["entitle", "matmul", "-H", "trn2-core", "--measured", p])
    err = refused(capsys, argv, pattern)
    assert "data.json" in err
    assert not (tmp_path / "out.toml").exists()


def test_an_npz_claiming_a_zip_version_zipfile_lacks(tmp_path, capsys):
    # found by the fuzz campaign (seed 1340679858): a damaged central directory naming zip
    # version 12.3 made zipfile raise NotImplementedError, a traceback
    p = tmp_path / "v.npz"
    np.savez(p, obj=np.arange(4), size=np.full(4, 8))
    raw = bytearray(p.read_bytes())
    at = raw.find(b"PK\x01\x02")  # first central directory entry: "version needed to extract"
    raw[at + 6:at + 8] = (123).to_bytes(2, "little")
    p.write_bytes(bytes(raw))
    refused(capsys, ["replay", p, "--capacity", "16", "--policy", "opt"],
            r"v\.npz: not an \.npz archive .*NotImplementedError: zip file version 12\.3")


def test_an_npy_header_with_a_negative_shape(tmp_path, capsys):
    import io

    def header(shape):
        buf = io.BytesIO()
        np.lib.format.write_array_header_1_0(buf, {"descr": "<i8", "fortran_order": False, "shape": shape})
        return buf.getvalue()

    p = tmp_path / "neg.npz"
    with zipfile.ZipFile(p, "w") as z:
        z.writestr("obj.npy", header((2, -2)) + bytes(32))
        z.writestr("size.npy", header((3,)) + bytes(24))
    refused(capsys, ["replay", p, "--capacity", "100", "--policy", "lru"],
            r"neg\.npz: array 'obj': its header declares shape \(2, -2\), with a negative dimension")


# ---------------------------------------------------------------------------------------------
# outputs (row 2)

def test_outputs_refuse_what_is_not_a_regular_file(tmp_path, capsys):
    m = tmp_path / "m.json"
    m.write_text('[{"spec": "matmul", "time_s": 1e-4}]')
    fifo = tmp_path / "fifo.toml"
    os.mkfifo(fifo)
    (tmp_path / "folder.toml").mkdir()
    (tmp_path / "null.toml").symlink_to("/dev/null")
    cases = {
        fifo: r"fifo\.toml is a FIFO: loopsim writes its output to a regular file only",
        tmp_path / "folder.toml": r"folder\.toml is a folder",
        tmp_path / "null.toml": r"null\.toml \(-> /dev/null\) is a device",
        tmp_path / "noext": r"-o .*noext: no extension; the file written is \.toml",
        "/dev/stdout": r"-o /dev/stdout: no extension",
    }
    for target, pattern in cases.items():
        refused(capsys, ["calibrate", m, "-H", "trn2-core", "-o", target], pattern)
    assert stat.S_ISFIFO(os.stat(fifo).st_mode) and os.path.islink(tmp_path / "null.toml")
    refused(capsys, ["search", "matmul", "-H", "trn2-core", "-o", tmp_path / "best"], r"no extension; the file written is \.toml")
    (tmp_path / "fig.png").symlink_to("/dev/null")
    refused(capsys, ["plot", "matmul", "-H", "trn2-core", "-o", tmp_path / "fig.png"], r"fig\.png \(-> /dev/null\) is a device")


def test_a_symlink_output_writes_its_target_and_keeps_link_and_mode(tmp_path, capsys):
    m = tmp_path / "m.json"
    m.write_text('[{"spec": "matmul", "time_s": 1e-4}]')
    real = tmp_path / "real.toml"
    real.write_text("old")
    os.chmod(real, 0o640)
    (tmp_path / "link.toml").symlink_to(real)
    assert main(["calibrate", str(m), "-H", "trn2-core", "-o", str(tmp_path / "link.toml")]) == 0
    capsys.readouterr()
    assert os.path.islink(tmp_path / "link.toml") and "[measured]" in real.read_text()
    assert stat.S_IMODE(os.stat(real).st_mode) == 0o640


# ---------------------------------------------------------------------------------------------
# the process: closed stdout, Ctrl-C, a wrong numba cache (row 8); subprocesses

def _loopsim(argv, **kw):
    env = {**os.environ, "PYTHONPATH": str(ROOT), **kw.pop("env", {})}
    return subprocess.run([sys.executable, "-m", "loopsim.cli.main", *argv], env=env, text=True,
                          capture_output=kw.pop("capture_output", True), timeout=300, **kw)


def test_list_with_stdout_closed():
    r = subprocess.run(f"{sys.executable} -m loopsim.cli.main list >&-", shell=True, capture_output=False,
                       stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120)
    assert (r.returncode, r.stderr) == (2, "loopsim: error: cannot write the output (stdout is closed)\n")


#: an OPT replay of several seconds (~50 M requests, streamed in compiled chunks)
LONG_OPT = ["entitle", "matmul", "-H", "trn2-core", "--policy", "opt", "--set", "M=4096", "--set", "N=4096",
            "--set", "K=4096", "--set", "TM=16", "--set", "TK=16", "--set", "TN=16", "--sbuf-bytes", "300000"]


@pytest.mark.parametrize("delay_s", [1.5, 3.0])
def test_ctrl_c_during_an_opt_replay_exits_130(delay_s):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    p = subprocess.Popen([sys.executable, "-m", "loopsim.cli.main", *LONG_OPT], env=env, text=True,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    time.sleep(delay_s)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=120)
    if p.returncode == 0:
        pytest.skip("the replay finished before the signal (a fast machine)")
    assert p.returncode == 130 and err.endswith("loopsim: interrupted\n") and "Traceback" not in err, err[-600:]


def test_ctrl_c_swallowed_inside_numbas_compiler_still_ends_as_interrupted():
    """Ctrl-C while numba compiles lands in a ctypes callback, where Python can only ignore it
    (it printed "Exception ignored ... Traceback" and the compile then failed as "replay: no
    compiled object yet", exit 2). The CLI's unraisable hook keeps such an interrupt silently,
    and the error that follows it ends the run as interrupted (130)."""
    code = textwrap.dedent("""
        import sys, types
        from loopsim.base.errors import LoopsimError
        from loopsim.cli import main as m
        def run(args):
            sys.unraisablehook(types.SimpleNamespace(exc_value=KeyboardInterrupt(), exc_type=KeyboardInterrupt,
                                                     exc_traceback=None, err_msg=None, object=None))
            raise LoopsimError("replay: no compiled object yet")
        real = m.create_parser
        def parser(*a, **k):
            p = real(*a, **k)
            parse = p.parse_args
            p.parse_args = lambda argv: types.SimpleNamespace(**{**vars(parse(argv)), "func": run})
            return p
        m.create_parser = parser
        sys.argv = ["loopsim", "list"]
        sys.exit(m.main())
    """)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    p = subprocess.run([sys.executable, "-c", code], env=env, text=True, capture_output=True, timeout=120)
    assert (p.returncode, p.stderr) == (130, "loopsim: interrupted\n")


def test_a_numba_cache_entry_replaced_by_a_wrong_pickle_is_rebuilt(tmp_path):
    # 459,776 request slots: over loopsim.sim._jit.PLAIN_BUDGET, so the replay runs compiled
    argv = ["entitle", "matmul", "-H", "trn2-core", "--policy", "opt", "--set", "M=1024", "--set", "N=1024",
            "--set", "K=2048", "--set", "TM=32", "--set", "TK=32", "--set", "TN=32", "--sbuf-bytes", "300000"]
    env = {"NUMBA_CACHE_DIR": str(tmp_path)}
    clean = _loopsim(argv, env=env)
    assert clean.returncode == 0
    os.environ["NUMBA_CACHE_DIR"], saved = str(tmp_path), os.environ.get("NUMBA_CACHE_DIR")
    try:
        sub = numba_env.cache_dirs()[0]
    finally:
        os.environ.pop("NUMBA_CACHE_DIR") if saved is None else os.environ.__setitem__("NUMBA_CACHE_DIR", saved)
    entries = sorted(sub.glob("_kernels.*.nbc"))
    assert entries
    for f in entries:  # a valid pickle (pickletools parses it) that is not what numba wrote
        f.write_bytes(pickle.dumps((1, 2, "wrong")))
        assert numba_env.intact(f)
    r = _loopsim(argv, env=env)
    assert (r.returncode, r.stderr, r.stdout) == (0, "", clean.stdout)
    assert all(pickle.dumps((1, 2, "wrong")) != f.read_bytes() for f in entries)  # rewritten


# ---------------------------------------------------------------------------------------------
# kernel files are code, data files are data (issue 25, point 4)

#: commands with a SPEC argument: whether a kernel reference there runs the file is measured by a
#: kernel that leaves a mark; each that runs it says so in its --help
SPEC_COMMANDS = {
    "entitle": [], "compare": [], "ceilings": [], "dma": [], "capacity": ["--samples", "2"],
    "plot": ["-o", "{tmp}/f.png"], "crossover": ["--dim", "N"], "formula": [], "check": ["--formula", "M"],
    "graph": ["-o", "{tmp}/g.png"], "search": [],
}


@pytest.mark.parametrize("command", SPEC_COMMANDS)
def test_every_help_that_can_reach_a_kernel_file_says_it_executes(tmp_path, capsys, command):
    mark = tmp_path / "EXECUTED"
    k = tmp_path / "marks.py"
    k.write_text(f"open({str(mark)!r}, 'w').write('x')\n\ndef f(N=128):\n    pass\n")
    extra = [a.format(tmp=tmp_path) for a in SPEC_COMMANDS[command]]
    main([command, f"{k}::f", "-H", "trn2-core", *extra])
    capsys.readouterr()
    with pytest.raises(SystemExit):
        main([command, "--help"])
    text = " ".join(capsys.readouterr().out.split())
    if mark.exists():
        assert "EXECUTES" in text, command


def test_calibrate_predict_of_a_kernel_file_says_it_executes(tmp_path, capsys):
    mark = tmp_path / "EXECUTED"
    k = tmp_path / "marks.py"
    k.write_text(f"open({str(mark)!r}, 'w').write('x')\n\ndef f(N=128):\n    pass\n")
    m = tmp_path / "m.json"
    m.write_text('[{"spec": "matmul", "time_s": 1e-4}]')
    main(["calibrate", str(m), "-H", "trn2-core", "-o", str(tmp_path / "c.toml"), "--predict", f"{k}::f"])
    capsys.readouterr()
    assert mark.exists()  # --predict is the user's own command line: code, run as asked
    with pytest.raises(SystemExit):
        main(["calibrate", "--help"])
    assert "EXECUTES" in " ".join(capsys.readouterr().out.split())


def test_a_search_repeated_in_one_process_gives_the_entitle_time(capsys):
    # found by the fuzz campaign (seed 731052595): the timeline's geometry cache was keyed by the
    # ids of loops that a later search had freed and reused, so one tiling's T varied from run to
    # run in one process (4 values in 10 runs); each run must give entitle's T for its tiling
    argv = ["search", "matmul", "-H", "trn2-core", "--json", "--quiet", "--jobs", "1", "--keep-order", "--top", "1"]
    seen = set()
    for _ in range(6):
        assert main(argv) == 0
        best = json.loads(capsys.readouterr().out)["top"][0]
        seen.add((best["T"], best["Q"]))
    assert main(["entitle", "matmul", "-H", "trn2-core", "--json",
                 *(f"--set={k}={v}" for k, v in best["params"].items())]) == 0
    d = json.loads(capsys.readouterr().out)
    assert seen == {(d["T"], d["Q"])}
