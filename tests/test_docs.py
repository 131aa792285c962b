"""The docs cannot drift: every command block of the documented files is run and its output
compared with the block's (see tests/docblocks.py); docs/cli.md is the parsers' own help.
Refresh them all with ``python -m tests.refresh_docs``."""

import difflib
from pathlib import Path

import pytest

from tests import docblocks

ROOT = docblocks.ROOT
#: the files whose blocks are executed (a docs/ page joins once its blocks pass)
DOC_FILES = ("README.md", "docs/index.md", "docs/tutorial.md", "docs/spec.md", "docs/hardware.md",
             "docs/counting.md", "docs/fusion.md", "docs/ceilings.md", "docs/plots.md",
             "docs/formulas.md", "docs/api.md", "docs/development.md", "docs/nki.md",
             "docs/fidelity.md", "docs/model.md", "docs/search.md", "docs/pages.md", "docs/timeline.md",
             *(f"docs/days/day{d}.md" for d in range(1, 8)))

BLOCKS = [b for f in DOC_FILES if (ROOT / f).exists()
          for b in docblocks.parse((ROOT / f).read_text(encoding="utf-8"), f)]


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory):
    return docblocks.sandbox(tmp_path_factory.mktemp("docs"))


def _compare(b, cwd):
    want = docblocks.expected(b)
    got = docblocks.render(b, docblocks.actual(b, cwd))
    return list(difflib.unified_diff(want, got, f"{b.name} (as written)", "real output", lineterm=""))


@pytest.mark.parametrize("block", [b for b in BLOCKS if not b.skip], ids=lambda b: b.name)
def test_block_output_is_the_real_output(block, sandbox):
    diff = _compare(block, sandbox)
    assert not diff, "\n".join(diff[:60]) + "\nrefresh with: python -m tests.refresh_docs"


def test_every_documented_file_exists_and_has_blocks():
    for f in DOC_FILES:
        assert (ROOT / f).is_file(), f
    assert len([b for b in BLOCKS if not b.skip]) >= 20
    skipped = [b for b in BLOCKS if b.skip]
    assert all(b.skip.strip() for b in skipped)  # each skip says why


def test_cli_reference_is_generated_from_the_parsers():
    from loopsim.cli.main import COMMANDS

    text = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    assert text == docblocks.cli_reference(), "refresh with: python -m tests.refresh_docs"
    for name in COMMANDS:
        assert f"## loopsim {name}\n" in text and f"usage: loopsim {name}" in text


DOC = """# t

```console
$ loopsim list | grep -c trn2
$ loopsim entitle matmul --hardware nope
$ echo $?
```

```pycon
>>> from loopsim.targets import hardware
>>> hw = hardware.load("trn2-core")
>>> hw.P("bf16") == 128 * 128 * 2 * 2_400_000_000
>>> for d in ("bf16", "fp32"):
...     print(d, hw.P(d))
```
"""


def test_a_hand_edited_output_fails_and_refresh_restores_it(tmp_path, sandbox):
    doc = tmp_path / "t.md"
    doc.write_text(DOC, encoding="utf-8")
    assert docblocks.refresh_file(doc, sandbox) == 2  # fills in the real outputs
    real = doc.read_text(encoding="utf-8")
    blocks = docblocks.parse(real, str(doc))
    assert [b.kind for b in blocks] == ["shell", "python"]
    outs = [out for b in blocks for _, out in b.steps]
    # independent of the refresh: the three trn2 sheets, a one-line error with status 2, and
    # trn2-core's P by hand (128 x 128 PEs x 2 FLOPs x 2.4 GHz; fp32 a quarter of it)
    assert outs[0] == ["3"] and outs[1][0].startswith("loopsim: error: unknown hardware 'nope'")
    assert outs[2] == ["2"] and outs[5] == ["True"]
    assert outs[6] == ["bf16 78643200000000", "fp32 19660800000000"]
    assert all(not _compare(b, sandbox) for b in blocks)  # as refreshed: the real output
    # edit each output line by hand, as a drifting doc would: the comparison fails, and the
    # refresh writes the real output back
    lines = [ln for out in outs for ln in out]
    assert len(lines) == 6
    for ln in lines:
        bad = real.replace("\n" + ln + "\n", "\n" + ln.replace("0", "1").replace("2", "4") + "x\n", 1)
        assert bad != real
        assert any(_compare(b, sandbox) for b in docblocks.parse(bad, str(doc))), ln
        doc.write_text(bad, encoding="utf-8")
        assert docblocks.refresh_file(doc, sandbox) == 1
        assert doc.read_text(encoding="utf-8") == real


def test_skip_marker_and_heredoc_are_parsed():
    text = ("<!-- docs-test: skip takes minutes -->\n```\n$ sleep 600\n```\n\n"
            "```\n$ python - <<'EOF'\nprint(6 * 7)\nEOF\n42\n```\n")
    skipped, heredoc = docblocks.parse(text)
    assert skipped.skip == "takes minutes" and heredoc.skip is None
    assert heredoc.steps == [("python - <<'EOF'\nprint(6 * 7)\nEOF", ["42"])]
    assert docblocks.render(heredoc, docblocks.actual(heredoc, Path.cwd())) == heredoc.lines
