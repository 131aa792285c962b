"""Every measured figure quoted in the README and the performance pages names the command that
regenerates it: a ``benchmarks/*.py`` script that exists (or a ``$ loopsim`` command whose output
the block shows). A figure with no generating command beside it cannot be rerun, so it goes
stale unseen (issue 24, "honest figures")."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: a measured time, rate or memory figure
FIGURE = re.compile(r"\d[\d.,]*\s?(?:ns|µs|us|ms|s|GiB|MiB|GB|MB|KB)\b(?! *=)|\d[\d.,]*x (?:faster|libCacheSim)"
                    r"|req(?:uests)?/s|candidates/s")
SCRIPT = re.compile(r"benchmarks/(\w+\.py)")
PAGES = ["docs/performance.md"]


def _sections(text: str):
    """(heading, body) of each markdown section (## or ###)."""
    parts = re.split(r"(?m)^(#{2,3} .*)$", text)
    yield "", parts[0]
    for i in range(1, len(parts), 2):
        yield parts[i], parts[i + 1]


def _missing(text: str, where: str) -> list[str]:
    bad = []
    for head, body in _sections(text):
        scripts = SCRIPT.findall(head + body)
        for s in scripts:
            if not (ROOT / "benchmarks" / s).is_file():
                bad.append(f"{where} {head.strip() or '(top)'}: names benchmarks/{s}, which does not exist")
        if FIGURE.search(body) and not scripts and "$ loopsim" not in body:
            bad.append(f"{where} {head.strip() or '(top)'}: figures with no generating command")
    return bad


def _readme_rows() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    sec = text.split("## Performance", 1)[1].split("\n## ", 1)[0]
    rows = [l for l in sec.splitlines() if l.startswith("|") and not set(l) <= set("|- ")][1:]
    return [f"README.md Performance row {r!r}: no benchmarks/ script in it" for r in rows
            if FIGURE.search(r) and not SCRIPT.search(r)]


def test_every_quoted_figure_names_its_generating_command():
    bad = _readme_rows()
    for p in PAGES:
        bad += _missing((ROOT / p).read_text(encoding="utf-8"), p)
    assert not bad, "\n".join(bad)


def test_the_rule_catches_a_figure_without_a_command():
    assert _missing("## Speed\n\nreplay takes 5.1 ns per request here\n", "x")
    assert not _missing("## Speed (`python benchmarks/bench_trace.py`)\n\n5.1 ns per request\n", "x")
    assert _missing("## Speed (`python benchmarks/no_such_bench.py`)\n\n5.1 ns\n", "x")
