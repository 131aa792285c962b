"""The installed package is the whole package: every module of the source tree is importable from
the environment (CI installs non-editably and runs the tests from the checkout, where the checkout
would hide a subpackage missing from pyproject.toml's list)."""

import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _source_packages() -> set[str]:
    return {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "loopsim").rglob("__init__.py")}


def test_pyproject_lists_every_package():
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    missing = _source_packages() - listed
    assert not missing, f"pyproject.toml [tool.setuptools] packages lacks {sorted(missing)}"


def test_every_source_package_imports_outside_the_checkout(tmp_path):
    # run from an empty folder: the loopsim imported is the installed one, not the checkout's
    code = ("import importlib, sys\n"
            "for name in sys.argv[1:]:\n"
            "    importlib.import_module(name)\n"
            "import loopsim; print(loopsim.__file__)")
    r = subprocess.run([sys.executable, "-c", code, *sorted(_source_packages())], cwd=tmp_path,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr.strip().splitlines()[-1:]
