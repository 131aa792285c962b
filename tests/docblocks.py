"""Executable documentation: every command block in README.md and docs/*.md is run and its output
compared with what the block shows, so the docs cannot drift from the code.

A block is a fenced code block whose first line starts with ``$ `` (shell) or ``>>> `` (Python):

* shell: each ``$ COMMAND`` line is followed by the command's output (stdout and stderr, as a
  terminal shows them) up to the next ``$`` line. ``loopsim ...`` runs in this process through
  ``loopsim.cli.main.main`` (exactly what the console script calls, without a new interpreter's start
  per command); ``loopsim ... | FILTER`` pipes that output through ``FILTER`` in bash; ``echo $?``
  prints the previous command's exit status; anything else runs in bash. A command ending in
  ``<<'EOF'`` takes the following lines up to ``EOF`` as its here-document.
* Python: ``>>>`` / ``...`` lines run as in the interactive interpreter, one namespace per block;
  the lines after a statement are what it prints or displays.

A line ``<!-- docs-test: skip REASON -->`` right before a block's fence leaves that block out (the
reason is shown in the doc). Outputs are compared exactly, after one normalisation: the working
directory's absolute path is written as ``.``.

``python -m tests.refresh_docs`` regenerates docs/cli.md from the parsers and rewrites every block's
output with the real one (from the repository root, so figures written under docs/ are refreshed
too).
"""

from __future__ import annotations

import contextlib
import glob
import io
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SKIP = re.compile(r"^<!--\s*docs-test:\s*skip\b(.*?)-->\s*$")
FENCE = re.compile(r"^(\s*)```")
HEREDOC = re.compile(r"<<-?\s*'?\"?(\w+)'?\"?\s*$")


@dataclass
class Block:
    """One fenced block: ``lines`` between the fences, ``start`` the 1-based line of its first."""

    path: str
    start: int
    lines: list[str]
    kind: str  # "shell" or "python"
    skip: str | None = None
    steps: list[tuple[str, list[str]]] = field(default_factory=list)  # (command, output lines)

    @property
    def name(self) -> str:
        return f"{self.path}:{self.start}"


def parse(text: str, path: str = "<doc>") -> list[Block]:
    """The executable blocks of a markdown text."""
    lines = text.split("\n")
    blocks, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        j = i + 1
        while j < len(lines) and not lines[j].startswith(m.group(1) + "```"):
            j += 1
        body = [ln[len(m.group(1)):] for ln in lines[i + 1:j]]
        first = next((ln for ln in body if ln.strip()), "")
        kind = "shell" if first.startswith("$ ") else "python" if first.startswith(">>> ") else None
        if kind:
            prev = lines[i - 1] if i else ""
            sk = SKIP.match(prev.strip())
            b = Block(path, i + 2, body, kind, sk.group(1).strip() or "marked" if sk else None)
            b.steps = _steps(b)
            blocks.append(b)
        i = j + 1
    return blocks


def _steps(b: Block) -> list[tuple[str, list[str]]]:
    steps: list[tuple[str, list[str]]] = []
    lines, i = b.lines, 0
    if b.kind == "shell":
        while i < len(lines):
            if not lines[i].startswith("$ "):
                raise ValueError(f"{b.path}:{b.start + i}: output before the first '$ ' line")
            cmd = lines[i][2:]
            i += 1
            while cmd.endswith("\\") and i < len(lines):
                cmd += "\n" + lines[i]
                i += 1
            hd = HEREDOC.search(cmd)
            if hd:
                while i < len(lines) and lines[i] != hd.group(1):
                    cmd += "\n" + lines[i]
                    i += 1
                cmd += "\n" + hd.group(1)
                i += 1
            out = []
            while i < len(lines) and not lines[i].startswith("$ "):
                out.append(lines[i])
                i += 1
            steps.append((cmd, out))
    else:
        while i < len(lines):
            if not lines[i].startswith(">>> "):
                raise ValueError(f"{b.path}:{b.start + i}: output before the first '>>> ' line")
            src = [lines[i][4:]]
            i += 1
            while i < len(lines) and (lines[i].startswith("... ") or lines[i] == "..."):
                src.append(lines[i][4:])
                i += 1
            out = []
            while i < len(lines) and not lines[i].startswith(">>> "):
                out.append(lines[i])
                i += 1
            steps.append(("\n".join(src), out))
    # trailing blank lines of the last output belong to the layout, not the output
    if steps:
        while steps[-1][1] and not steps[-1][1][-1].strip():
            steps[-1][1].pop()
    return steps


# ---------------------------------------------------------------------------------------------
# running


def _run_loopsim(argv: list[str]) -> tuple[str, int]:
    from loopsim.cli.main import main

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(buf):
        try:
            rc = main(argv)
        except SystemExit as e:  # argparse: --help, usage errors
            rc = e.code if isinstance(e.code, int) else (0 if e.code is None else 2)
    return buf.getvalue(), rc


def _bash(cmd: str, stdin: str | None = None) -> tuple[str, int]:
    p = subprocess.run(["bash", "-c", cmd], input=stdin, capture_output=False, text=True,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=_env())
    return p.stdout, p.returncode


def _env() -> dict:
    env = dict(os.environ, COLUMNS="100", LC_ALL="C.UTF-8")
    bindir = os.path.dirname(sys.executable)  # this interpreter's loopsim and python first
    env["PATH"] = bindir + os.pathsep + env.get("PATH", "")
    return env


def _expand(word: str) -> list[str]:
    """A path pattern (``tilings/nki_tutorial/*.toml``) as bash expands it; other words as they are."""
    if "/" in word and any(c in word for c in "*?[") and not word.startswith("-"):
        return sorted(glob.glob(word)) or [word]
    return [word]


def _plain(head: str) -> list[str] | None:
    """The words of ``loopsim ...`` when it is one simple command (no operator, redirection or
    expansion outside quotes), else None."""
    if "$" in head or "`" in head or "\n" in head:
        return None
    lex = shlex.shlex(head, posix=True, punctuation_chars=True)
    lex.whitespace_split = True
    try:
        words = list(lex)
    except ValueError:
        return None
    if words[:1] != ["loopsim"] or any(w and set(w) <= set("();<>|&") for w in words):
        return None
    return words


def run_shell(cmd: str, last_rc: int) -> tuple[str, int]:
    """One ``$`` command: its output (stdout and stderr together) and exit status."""
    if cmd.strip() == "echo $?":
        return f"{last_rc}\n", 0
    head, _, filt = cmd.partition(" | ")
    words = _plain(head)
    if words:
        argv = [w for word in words[1:] for w in _expand(word)]
        out, rc = _run_loopsim(argv)
        if filt:
            out, rc = _bash(filt, out)
        return out, rc
    return _bash(cmd)


def run_python(src: str, ns: dict) -> str:
    """One interactive statement: what the interpreter would print after it."""
    buf = io.StringIO()
    code = compile(src + "\n", "<doc>", "single")
    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(buf):
        try:
            exec(code, ns)
        except Exception as e:  # shown as the interpreter shows it, first and last line
            print(f"Traceback (most recent call last):\n  ...\n{type(e).__name__}: {e}")
    return buf.getvalue()


def actual(b: Block, cwd: Path) -> list[tuple[str, list[str]]]:
    """Run a block in ``cwd``; returns (command, real output lines) per step."""
    res, rc, ns = [], 0, {"__name__": "__doc__"}
    old = os.getcwd()
    os.chdir(cwd)
    try:
        for cmd, _ in b.steps:
            if b.kind == "shell":
                out, rc = run_shell(cmd, rc)
            else:
                out = run_python(cmd, ns)
            out = out.replace(str(cwd), ".").replace(os.path.realpath(cwd), ".")
            lines = out.split("\n")
            if lines and lines[-1] == "":
                lines.pop()
            res.append((cmd, lines))
    finally:
        os.chdir(old)
    return res


def render(b: Block, steps) -> list[str]:
    """The block's lines with ``steps``' outputs."""
    out = []
    p1, p2 = ("$ ", "") if b.kind == "shell" else (">>> ", "... ")
    for cmd, lines in steps:
        first, *rest = cmd.split("\n")
        out.append(p1 + first)
        if b.kind == "shell":
            out += rest
        else:
            out += [(p2 + ln) if ln else "..." for ln in rest]
        out += lines
    return out


def _rstrip_blank(lines: list[str]) -> list[str]:
    out = list(lines)
    while out and not out[-1].strip():
        out.pop()
    return out


def expected(b: Block) -> list[str]:
    return render(b, b.steps)


def sandbox(tmp: Path, real_docs: bool = False) -> Path:
    """A working directory for the blocks: the repository's folders linked in, and docs/ empty
    (tests: figures a block writes land in the sandbox) or the real one (the refresh: figures
    are rendered into the tracked docs/). Other files a block writes stay in ``tmp``."""
    for name in ("tilings", "hardware", "benchmarks", "tests", "loopsim", "pyproject.toml",
                 "README.md") + (("docs",) if real_docs else ()):
        dst = tmp / name
        if not dst.exists():
            dst.symlink_to(ROOT / name)
    (tmp / "docs" / "days").mkdir(parents=True, exist_ok=True)  # docs/days/: the days' figures
    return tmp


def refresh_file(path: Path, cwd: Path) -> int:
    """Rewrite the outputs of every non-skipped block of ``path``; returns the blocks changed."""
    text = path.read_text(encoding="utf-8")
    lines = text.split("\n")
    changed = 0
    for b in reversed(parse(text, str(path))):  # from the end, so earlier line numbers hold
        if b.skip:
            continue
        new = render(b, actual(b, cwd))
        blanks = len(b.lines) - len(_rstrip_blank(b.lines))
        new += [""] * blanks
        indent = re.match(r"\s*", lines[b.start - 2]).group(0)
        new = [indent + ln if ln else ln for ln in new]
        old = lines[b.start - 1:b.start - 1 + len(b.lines)]
        if new != old:
            lines[b.start - 1:b.start - 1 + len(b.lines)] = new
            changed += 1
    if changed:
        path.write_text("\n".join(lines), encoding="utf-8")
    return changed


# ---------------------------------------------------------------------------------------------
# the CLI reference


def cli_reference() -> str:
    """docs/cli.md: every command's ``--help``, generated from ``loopsim.cli.main.create_parser()``."""
    import argparse

    from loopsim.cli.main import COMMANDS, create_parser

    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "100"
    try:
        p = create_parser()
        sub = next(a for a in p._actions if isinstance(a, argparse._SubParsersAction))
        parts = ["# CLI reference", "",
                 "Generated from the argument parsers (`loopsim.cli.main.create_parser()`) by "
                 "`python -m tests.refresh_docs`;",
                 "do not edit by hand: `tests/test_docs.py` fails when this file and the parsers "
                 "differ.", "",
                 "| command | what it does |", "|---|---|"]
        helps = {a.dest: a.help for a in sub._choices_actions}
        parts += [f"| [`loopsim {n}`](#loopsim-{n}) | {helps.get(n, '')} |" for n in COMMANDS]
        parts += ["", "```text", p.format_help().rstrip(), "```"]
        for n in COMMANDS:
            parts += ["", f"## loopsim {n}", "", "```text", sub.choices[n].format_help().rstrip(), "```"]
        return "\n".join(parts) + "\n"
    finally:
        if old is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = old
