"""The environment cannot break a run (issue 14): a read-only HOME, an unwritable or corrupt numba
cache, a terminal that cannot print µ, a full disk, a closed pipe. Each run is a subprocess whose
output is compared with a clean run's."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from loopsim.base import numba_env
from loopsim.sim._jit import PLAIN_BUDGET  # read at import: tests/conftest.py sets it to 0 in tests

ROOT = Path(__file__).resolve().parent.parent
#: an opt replay (numba: next_use_kernel and opt_kernel) on a small matmul whose trace is long
#: enough (459,776 request slots, over loopsim.sim._jit.PLAIN_BUDGET) to run compiled, not as plain
#: Python
ARGV = ["entitle", "matmul", "-H", "trn2-core", "--policy", "opt", "--set", "M=1024", "--set", "N=1024",
        "--set", "K=2048", "--set", "TM=32", "--set", "TK=32", "--set", "TN=32", "--sbuf-bytes", "300000"]


def loopsim(argv=ARGV, env=None, stdout=subprocess.PIPE):
    e = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    e.pop("NUMBA_DISABLE_JIT", None)
    return subprocess.run([sys.executable, "-m", "loopsim.cli.main", *argv], env=e, stdout=stdout,
                          stderr=subprocess.PIPE, text=True, timeout=300)


def test_the_run_compiles():
    # over the plain-Python budget in one walk, so these tests meet numba's cache
    from loopsim.frontends import spec
    from loopsim.sim import trace

    sets = dict(a.split("=") for a in ARGV[ARGV.index("--set") + 1::2] if "=" in a)
    nest = trace.compile_nest(spec.load_kernel("matmul", {k: int(v) for k, v in sets.items()}))
    assert nest.slots > PLAIN_BUDGET


@pytest.fixture(scope="module")
def clean():
    r = loopsim()
    assert r.returncode == 0 and r.stderr == ""
    return r.stdout


def test_read_only_home_and_unwritable_cache_dir(clean, tmp_path):
    # HOME a regular file (nothing can be made under it; root ignores chmod) and NUMBA_CACHE_DIR
    # under it: numba falls back to the package's own __pycache__, which holds the kernels
    home = tmp_path / "home"
    home.write_text("")
    r = loopsim(env={"HOME": str(home), "XDG_CACHE_HOME": "", "NUMBA_CACHE_DIR": str(home / "numba")})
    assert (r.returncode, r.stderr, r.stdout) == (0, "", clean)


def test_corrupt_cache_files_are_rebuilt_with_identical_results(clean, tmp_path, monkeypatch):
    # a private cache (NUMBA_CACHE_DIR comes first in numba's order) holding copies of the
    # package's cache files, two of them damaged: a truncated .nbc and a garbage .nbi
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    sub = numba_env.cache_dirs()[0]
    assert sub.parent == tmp_path
    sub.mkdir()
    for f in (numba_env.SIM_DIR / "__pycache__").glob("_kernels.*.nb?"):
        shutil.copy(f, sub / f.name)
    nbc = sorted(sub.glob("_kernels.next_use_kernel-*.nbc"))[0]
    nbc.write_bytes(nbc.read_bytes()[:500])
    nbi = sorted(sub.glob("_kernels.next_use_kernel-*.nbi"))[0]
    nbi.write_bytes(b"not a pickle at all")
    assert not numba_env.intact(nbc) and not numba_env.intact(nbi)
    r = loopsim()
    assert (r.returncode, r.stderr, r.stdout) == (0, "", clean)
    rebuilt = sorted(sub.glob("_kernels.next_use_kernel-*.nb?"))
    assert len(rebuilt) >= 2 and all(numba_env.intact(f) for f in rebuilt)


def test_no_writable_cache_folder_runs_for_this_run_only_with_one_warning(monkeypatch, capsys):
    monkeypatch.setattr(numba_env, "_prepared", False)
    monkeypatch.setattr(numba_env, "writable", lambda d: False)
    monkeypatch.delenv("NUMBA_DISABLE_JIT", raising=False)
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    if "numba.core.config" in sys.modules:
        monkeypatch.setattr(sys.modules["numba.core.config"], "CACHE_DIR", sys.modules["numba.core.config"].CACHE_DIR)
    numba_env.prepare()
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("loopsim: warning: no writable numba cache folder")
    tmp = os.environ["NUMBA_CACHE_DIR"]
    assert Path(tmp).is_dir() and Path(tmp).name.startswith("loopsim-numba-")
    shutil.rmtree(tmp)


#: text reports with µ (ceilings) and with § × ÷ — ≈ (hardware)
TEXT = ["ceilings", "matmul", "-H", "trn2-core"]
SHEET = ["hardware", "trn2-core"]


@pytest.mark.parametrize("argv", [TEXT, SHEET], ids=["ceilings", "hardware"])
def test_ascii_terminal_gets_ascii_spellings(argv):
    utf8 = loopsim(argv, env={"PYTHONIOENCODING": "utf-8"}).stdout
    r = loopsim(argv, env={"PYTHONIOENCODING": "ascii"})
    assert r.returncode == 0 and r.stderr == ""
    expected = utf8
    for sym, spelled in (("µ", "u"), ("×", "x"), ("≥", ">="), ("÷", "/"), ("—", "-"), ("≈", "~"), ("§", "S")):
        expected = expected.replace(sym, spelled)
    assert expected != utf8 and r.stdout == expected


def test_full_device_is_one_line_and_status_2():
    with open("/dev/full", "w") as full:
        r = loopsim(TEXT, stdout=full)
    assert r.returncode == 2
    assert r.stderr == "loopsim: error: cannot write the output (No space left on device)\n"
