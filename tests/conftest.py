"""Shared test configuration: hypothesis profiles, registered once.

deadline=None everywhere: the first call of a numba kernel compiles (or loads from cache) and
would trip hypothesis's default per-example deadline.
"""

import os
import subprocess
import sys

from hypothesis import HealthCheck, settings

settings.register_profile("ci", deadline=None, max_examples=60, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", deadline=None, max_examples=100, suppress_health_check=[HealthCheck.too_slow])
# the suite (CI and the README's command alike) runs the ci profile: the suite stays under 5
# minutes on a 2-core machine; LOOPSIM_HYPOTHESIS=dev draws 100 examples a property
settings.load_profile(os.environ.get("LOOPSIM_HYPOTHESIS", "ci"))

# The tests run against this checkout even where the package is not installed.
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)


import pytest  # noqa: E402


@pytest.fixture
def split_projection(tmp_path):
    """Path of the bundled projection spec with ``[lnc] split = "b"`` over 2 cores."""
    from loopsim.frontends import spec

    text = spec.locate("projection").read_text().replace(
        "[nest]", '[lnc]\nsplit = "b"\ncores = 2\n\n[nest]', 1)
    p = tmp_path / "proj_lnc.toml"
    p.write_text(text)
    return str(p)


@pytest.fixture(autouse=True)
def compiled_kernels(monkeypatch):
    """In-process tests run the compiled walker and replay kernels at every size, so every oracle
    comparison exercises numba's code; tests/test_walker.py compares the plain-Python twins that
    short traces use (loopsim/sim/_jit.py) with them."""
    from loopsim.sim import _jit

    monkeypatch.setattr(_jit, "PLAIN_BUDGET", 0)


# The fuzz tests draw from a new random seed on every run, printed in the session header so that a
# failure can be replayed (LOOPSIM_FUZZ_SEED=N). Set here, before any test module reads it.
os.environ.setdefault("LOOPSIM_FUZZ_SEED", str(int.from_bytes(os.urandom(4), "little")))


def pytest_report_header(config):
    return (f"loopsim fuzz seed: {os.environ['LOOPSIM_FUZZ_SEED']} "
            f"(replay a failure with LOOPSIM_FUZZ_SEED={os.environ['LOOPSIM_FUZZ_SEED']})")


def pytest_terminal_summary(terminalreporter):
    fuzz = sys.modules.get("tests.fuzzgen")
    if fuzz is not None and fuzz.SUMMARY:
        terminalreporter.write_line(f"loopsim fuzz (seed {os.environ['LOOPSIM_FUZZ_SEED']}): " + "; ".join(fuzz.SUMMARY))


# The engine timeline's compiled walk takes ~40 s CPU to compile on a cold numba cache (a fresh
# clone, CI). It compiles in a process of its own from the start of the session, on another core
# while the other tests run; the tests that walk compiled wait for it (``walk_warm``).
_WARM: list = []


def pytest_sessionstart(session):
    if os.environ.get("LOOPSIM_NO_WARM") or hasattr(session.config, "workerinput"):
        return
    _WARM.append(subprocess.Popen([sys.executable, "-m", "tests._warm_walk"], cwd=ROOT,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE))


@pytest.fixture(scope="session")
def walk_warm():
    """Waits for the session's background compile of the compiled walk (its failure is the
    test's: the stderr is shown)."""
    for proc in _WARM:
        _, err = proc.communicate()
        assert proc.returncode == 0, err.decode(errors="replace")[-2000:]


def pytest_sessionfinish(session):
    for proc in _WARM:
        if proc.poll() is None:
            proc.kill()
