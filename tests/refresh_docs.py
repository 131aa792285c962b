"""Refresh the docs from the code: ``python -m tests.refresh_docs [FILE.md ...]`` (from the
repository root, with loopsim installed).

Writes docs/cli.md from the argument parsers, then runs every executable block of README.md and
docs/*.md (or of the files named) and rewrites each block's output with the real one; figures the
blocks write under docs/ are rendered again. Prints what changed; ``git diff`` shows it.
See tests/docblocks.py for the block format and docs/development.md for the workflow.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from tests import docblocks
from tests.test_docs import DOC_FILES


def main(argv: list[str]) -> int:
    root = docblocks.ROOT
    cli = root / "docs" / "cli.md"
    text = docblocks.cli_reference()
    if not cli.exists() or cli.read_text(encoding="utf-8") != text:
        cli.write_text(text, encoding="utf-8")
        print("wrote docs/cli.md")
    files = [Path(a).resolve() for a in argv] or [root / f for f in DOC_FILES]
    with tempfile.TemporaryDirectory() as tmp:
        cwd = docblocks.sandbox(Path(tmp), real_docs=True)
        for f in files:
            t = time.perf_counter()
            n = docblocks.refresh_file(f, cwd)
            print(f"{f.relative_to(root)}: {n} block(s) changed ({time.perf_counter() - t:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
