"""Random cases over the surfaces of issue 25 for the fuzz test (tests/test_fuzz_surfaces.py) and
the long campaign (benchmarks/fuzz_campaign.py): generated NKI kernel files, search flags,
calibrate measurements, profiles and replay files.

Each :class:`Case` is one in-process ``loopsim.cli.main.main`` run with the files it needs, what
it must do (``expect``: "ok", "refuse" or "any") and, where the answer is known independently, an
``oracle`` that checks the numbers (a copy kernel's Q = 2 x its bytes, a brute-force LRU/OPT miss
count, a search's best against ``entitle`` of the same tiling). :func:`run` classifies the
outcome: ``ok`` / ``refused`` (the contract held), or a failure: ``traceback`` (an exception
escaped, or one printed), ``hang`` (over the time limit), ``contract`` (exit 2 without exactly
one error line, an unknown status) or ``wrong`` (accepted what must be refused, refused what must
run, or numbers the oracle disagrees with).
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import random
import re
import signal
import tempfile
import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from loopsim.base import limits
from loopsim.cli.main import main

#: a kernel that traces longer than this is stopped by loopsim (an endless loop costs this much)
TRACE_LIMIT_S = 1.0
#: a run that takes longer than this is a hang
HANG_S = 60.0
#: lines the fuzz test adds for the session summary (tests/conftest.py prints them)
SUMMARY: list[str] = []


@dataclass
class Case:
    kind: str
    argv: list
    files: dict = field(default_factory=dict)  # name -> str | bytes, written to the run's folder
    expect: str = "any"  # ok | refuse | any
    oracle: Callable[[str, str], str | None] | None = None  # (stdout, folder) -> why wrong, or None
    about: str = ""


class _Hang(BaseException):
    pass


def run(case: Case, folder: Path, hang_s: float = HANG_S) -> tuple[str, str]:
    """(outcome, detail) of one case; outcome ok | refused | traceback | hang | contract | wrong."""
    for name, data in case.files.items():  # "{dir}" in a file's text or the argv: the run's folder
        if isinstance(data, str):
            data = data.replace("{dir}", str(folder)).encode("utf-8", "surrogatepass")
        (folder / name).write_bytes(data)
    argv = [str(a).replace("{dir}", str(folder)) for a in case.argv]
    out, err = io.StringIO(), io.StringIO()

    def ring(signum, frame):
        raise _Hang()

    old = signal.signal(signal.SIGALRM, ring)
    signal.setitimer(signal.ITIMER_REAL, hang_s)
    saved = limits.MAX_TRACE_S
    limits.MAX_TRACE_S = TRACE_LIMIT_S
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                rc = main(argv)
            except SystemExit as e:  # argparse's own usage errors
                rc = e.code
    except _Hang:
        return "hang", f"over {hang_s:g} s: {_show(argv)}"
    except BaseException as e:  # noqa: BLE001  anything escaping main is a traceback
        return "traceback", f"{type(e).__name__}: {e} in {_show(argv)}"
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
        limits.MAX_TRACE_S = saved
    o, e = out.getvalue(), err.getvalue()
    if "Traceback" in e:
        return "traceback", e[-600:]
    if rc not in (0, 1, 2, 3):
        return "contract", f"exit {rc!r}: {_show(argv)}"
    errors = [line for line in e.splitlines() if re.match(r"loopsim(: error| \w+: error):", line)]
    if rc == 2 and (len(errors) != 1 or not e.rstrip("\n").splitlines()[-1:] == errors):
        return "contract", f"exit 2 with {len(errors)} error lines (last lines {e[-300:]!r}): {_show(argv)}"
    if case.expect == "refuse" and rc != 2:
        return "wrong", f"exit {rc} where a refusal was due ({case.about}): {_show(argv)}"
    if case.expect == "ok" and rc not in (0, 3):
        return "wrong", f"refused what must run ({case.about}): {e.strip()[:300]} :: {_show(argv)}"
    if rc == 0 and case.oracle is not None:
        why = case.oracle(o, str(folder))
        if why:
            return "wrong", f"{why} ({case.about}): {_show(argv)}"
    return ("refused" if rc == 2 else "ok"), ""


def _show(argv) -> str:
    text = " ".join(str(a) for a in argv)
    return text if len(text) < 300 else text[:300] + "..."


# ---------------------------------------------------------------------------------------------
# generated kernel files

DTYPES = {"bf16": 2, "fp32": 4, "fp16": 2}


def kernel_case(rng: random.Random) -> Case:
    """A copy kernel of R x C (tiles of T rows) with, by chance, a side effect: an unmodelled call,
    an exit, prints, an endless loop, an exception, a module-level effect, or a bad --kwarg."""
    R = rng.choice([128, 256, 512, 1024, 384]) if rng.random() < 0.8 else rng.choice([100, 0, 10**30, 2**62])
    C = rng.choice([64, 128, 512, 2048, 1, 7])
    T = rng.choice([32, 64, 128, 128, 256])
    dt = rng.choice(list(DTYPES))
    effect = rng.choice(["none"] * 6 + ["print", "print_many", "unmodelled", "exit0", "exit3",
                         "exit_str", "loop", "raise", "top_print", "top_exit", "kwarg", "kwarg_bad",
                         "range_huge", "recursion", "keyword0"])
    body = [f"    print('kernel says', {rng.randint(0, 99)})"] if effect == "print" else []
    if effect == "print_many":
        body.append("    for _ in range(5000):\n        print('x' * 50)")
    side = {"unmodelled": "    nl.some_call_loopsim_does_not_model(a)",
            "exit0": "    sys.exit(0)", "exit3": "    raise SystemExit(3)", "exit_str": "    sys.exit('bye')",
            "loop": "    while True:\n        pass", "raise": "    raise ValueError('the kernel failed')",
            "range_huge": "    for j in nl.affine_range(10**40):\n        pass",
            "recursion": "    def f(n):\n        return f(n + 1)\n    f(0)"}.get(effect)
    if side:
        body.append(side)
    top = {"top_print": "print('imported')", "top_exit": "sys.exit(1)"}.get(effect, "")
    src = f'''import sys
import nki
import nki.language as nl

{top}

@nki.jit
def copy(a, T={T}, offset=0):
{chr(10).join(body) if body else "    pass"}
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(a.shape[0] // T):
        t = nl.load(a[i * T:(i + 1) * T, :])
        nl.store(out[i * T:(i + 1) * T, :], t)
    return out
'''
    argv = ["entitle", "{dir}/kern.py::copy", "--arg", f"a={R}x{C}:{dt}", "-H", "trn2-core", "--json"]
    if effect == "kwarg":
        argv += ["--kwarg", f"T={T}"]
    if effect == "kwarg_bad":
        argv += ["--kwarg", "T=" + rng.choice(["True", "2.5", "'x'", "None", "(1, 2)", "1e400", str(2**63), "[1]"])]
    if effect == "keyword0":
        argv += ["--kwarg", f"offset={rng.choice([0, -1, 5])}"]
    valid_shape = isinstance(R, int) and 0 < R <= 2**40 and R % T == 0 and T <= 128
    fails = effect in ("unmodelled", "exit0", "exit3", "exit_str", "loop", "raise", "top_exit",
                       "kwarg_bad", "range_huge", "recursion") or R <= 0 or R > 2**62
    expect = "refuse" if fails else ("ok" if valid_shape else "any")
    nbytes = 2 * R * C * DTYPES[dt] if valid_shape else None

    def oracle(out: str, folder: str) -> str | None:
        try:
            d = json.loads(out)  # a kernel's prints never reach stdout
        except ValueError:
            return f"stdout is not one JSON object: {out[:120]!r}"
        if nbytes is not None and (d["W"], d["Q"]) != (0, nbytes):
            return f"W, Q = {d['W']}, {d['Q']}; a copy of {R} x {C} {dt} moves Q = {nbytes} bytes, W = 0"
        return None

    return Case("kernel", argv, {"kern.py": src}, expect, oracle, f"kernel {effect}, R={R} C={C} T={T}")


# ---------------------------------------------------------------------------------------------
# search spaces and flags

def search_case(rng: random.Random) -> Case:
    """``search matmul`` over a small random space with random flags (some out of bounds)."""
    tiles = [16, 32, 64, 128, 256, 512, 0, 3, 2**63]
    space = []  # every tile parameter given (1-2 values): a default space is thousands of candidates
    for name in rng.sample(["TM", "TN", "TK"], 3):
        how = rng.random()
        if how < 0.6:
            space.append(f"{name}={','.join(str(v) for v in rng.sample(tiles[:6], rng.randint(1, 2)))}")
        elif how < 0.8:
            space.append(f"{name}={rng.choice(['1..2^63', '64..128', '2^40..2^41', '0..4', '128..64', 'x'])}")
        else:
            space.append(f"{name}={rng.choice(tiles)}")
    argv = ["search", "matmul", "-H", "trn2-core", "--json", "--quiet", "--jobs", "1"]
    for s in space:
        argv += ["--space", s]
    if rng.random() < 0.7:
        argv += ["--keep-order"]
    top = rng.choice([1, 3, 10]) if rng.random() < 0.85 else rng.choice([0, 10**9, -1])
    argv += ["--top", str(top)]
    if rng.random() < 0.2:
        argv += ["--sbuf-bytes", str(rng.choice([4096, 1 << 20, 2**62, 2**70, 0]))]
    if rng.random() < 0.15:
        argv += ["--policy", rng.choice(["lru", "as-written", "bogus"])]
    sbuf = argv[argv.index("--sbuf-bytes") + 1] if "--sbuf-bytes" in argv else "1"
    bad = top < 1 or top > limits.MAX_TOP or not 1 <= int(sbuf) <= limits.MAX_INT or "bogus" in argv
    check = rng.random() < 0.3

    def oracle(out: str, folder: str) -> str | None:
        d = json.loads(out)
        rows = d["top"]
        if len(rows) > top:
            return f"{len(rows)} rows for --top {top}"
        ts = [r["T"] for r in rows if r["feasible"]]
        if any(b < a * (1 - 1e-9) for a, b in zip(ts, ts[1:])):  # equal T (to rounding) may tie-break
            return f"the feasible rows are not ranked by T: {ts}"
        if check and rows and rows[0]["feasible"] and "--policy" not in argv and "--sbuf-bytes" not in argv \
                and rows[0]["structure"]["order"] == ["m", "n", "k"] and "--keep-order" in argv:
            e = io.StringIO()
            with contextlib.redirect_stdout(e), contextlib.redirect_stderr(io.StringIO()):
                rc = main(["entitle", "matmul", "-H", "trn2-core", "--json",
                           *(f"--set={k}={v}" for k, v in rows[0]["params"].items())])
            got = json.loads(e.getvalue()) if rc == 0 else {}
            if got.get("Q") != rows[0]["Q"] or not math.isclose(got.get("T") or 0, rows[0]["T"], rel_tol=1e-9):
                return f"the best's Q, T = {rows[0]['Q']}, {rows[0]['T']} but entitle of its tiling gives " \
                       f"{got.get('Q')}, {got.get('T')}"
        return None

    return Case("search", argv, {}, "refuse" if bad else "any", oracle, f"search {space}")


# ---------------------------------------------------------------------------------------------
# calibrate measurements and profiles (JSON data: nothing in them executes)

HOSTILE_NUMBERS = ["5e-324", "1e-400", "1e400", "1" + "0" * 400, "1" + "0" * 5001, "-1", "0", "NaN",
                   "Infinity", "1e-300", "true", '"1e-4"', "null", "[]", "{}"]


def _nested(rng, depth):
    return "[" * depth + "1" + "]" * depth


def calibrate_case(rng: random.Random) -> Case:
    """A measurements file: valid entries, hostile numbers, deep nesting, kernel references
    (never executed: the file is data), random bytes."""
    entries, bad = [], False
    for _ in range(rng.randint(0, 3)):
        t = rng.choice(["1e-4", "2.5e-5", "0.001"]) if rng.random() < 0.7 else rng.choice(HOSTILE_NUMBERS)
        bad |= t not in ("1e-4", "2.5e-5", "0.001")
        spec = rng.choice(['"matmul"', '"copy"', '"{dir}/evil.py::f"', '"nosuch"', "3"]) if rng.random() < 0.3 else '"matmul"'
        bad |= spec != '"matmul"' and spec != '"copy"'
        extra = ""
        if rng.random() < 0.15:
            extra = ', "set": {"M": %s}' % rng.choice(["2048", "0", str(2**63), "2.5", '"x"'])
            bad |= "2048" not in extra or spec != '"matmul"'
        entries.append('{"spec": %s, "time_s": %s%s}' % (spec, t, extra))
    text = "[" + ", ".join(entries) + "]"
    bad |= not entries
    if rng.random() < 0.1:
        text, bad = _nested(rng, rng.choice([65, 1000, 100000])), True
    if rng.random() < 0.05:
        text, bad = bytes(rng.getrandbits(8) for _ in range(rng.randint(0, 200))), True
    evil = "open(__file__ + '.EXECUTED', 'w').write('x')\ndef f():\n    pass\n"
    argv = ["calibrate", "{dir}/m.json", "-H", "trn2-core", "-o", "{dir}/out.toml", "--json"]

    def oracle(out: str, folder: str) -> str | None:
        if Path(folder, "evil.py.EXECUTED").exists():
            return "a kernel file named in a measurements file was executed"
        if not Path(folder, "out.toml").is_file():
            return "exit 0 but no sheet written"
        return None

    return Case("calibrate", argv, {"m.json": text, "evil.py": evil}, "refuse" if bad else "ok", oracle,
                "calibrate")


def profile_case(rng: random.Random) -> Case:
    """``entitle --measured`` of a profile with random and hostile values."""
    keys = ["time_s", "hbm_read_bytes", "hbm_write_bytes", "flops", "summary", "x"]
    parts, bad = [], False
    chosen = (["time_s"] if rng.random() < 0.8 else []) + rng.sample(keys[1:], rng.randint(0, 3))
    for k in chosen:
        v = (("1e-4" if k == "time_s" else rng.choice(["1048576", "2147483648"])) if rng.random() < 0.8
             else rng.choice(HOSTILE_NUMBERS))
        parts.append(f'"{k}": {v}')
    text = "{" + ", ".join(parts) + "}"
    if rng.random() < 0.15:
        text = '{"time_s": 1e-4, "x": %s}' % _nested(rng, rng.choice([65, 1000, 100000]))
        bad = True
    if not any(p.startswith('"time_s": ') for p in parts) and not bad:
        bad = True
    return Case("profile", ["entitle", "matmul", "-H", "trn2-core", "--measured", "{dir}/p.json"],
                {"p.json": text}, "refuse" if bad else "any", None, "profile")


# ---------------------------------------------------------------------------------------------
# replay files, with a brute-force LRU / OPT oracle

def _brute_misses(obj: list[int], slots: int, policy: str) -> int:
    """Misses of a cache of ``slots`` equal-size objects (every miss admitted), by hand."""
    if slots == 0:
        return len(obj)
    cache: list[int] = []
    misses = 0
    for i, o in enumerate(obj):
        if o in cache:
            if policy == "lru":
                cache.remove(o)
                cache.append(o)
            continue
        misses += 1
        if len(cache) == slots:
            if policy == "lru":
                cache.pop(0)
            else:  # Belady: farthest next use, never-again first (the smaller id among those)
                def nxt(x):
                    try:
                        return obj.index(x, i + 1)
                    except ValueError:
                        return len(obj) + 1 + (-x) * 1e-9
                cache.remove(max(cache, key=lambda x: (nxt(x), -x)))
        cache.append(o)
    return misses


def replay_case(rng: random.Random) -> Case:
    """A random trace file: valid ones checked against the brute-force count; broken ones refused."""
    n = rng.randint(1, 300)
    obj = [rng.randint(0, rng.choice([3, 10, 40])) for _ in range(n)]
    size = rng.choice([4, 8, 64])
    slots = rng.randint(0, 12)
    capacity = max(1, slots * size + rng.randint(0, size - 1))
    policy = rng.choice(["lru", "opt"])
    buf = io.BytesIO()
    how = rng.random()
    arrays = {"obj": np.array(obj, np.int64), "size": np.full(n, size, np.int64)}
    expect = "ok"
    if how < 0.15:
        i = rng.randrange(n)
        arrays["size"][i] = rng.choice([0, -1, size + 1])  # not > 0, or two sizes of one object
        expect = "refuse" if arrays["size"][i] <= 0 or obj.count(obj[i]) > 1 else "any"
    elif how < 0.25:
        arrays["obj"][rng.randrange(n)] = -1
        expect = "refuse"
    elif how < 0.3:
        del arrays["size"]
        expect = "refuse"
    (np.savez_compressed if rng.random() < 0.5 else np.savez)(buf, **arrays)
    data = buf.getvalue()
    if rng.random() < 0.1:  # damaged bytes
        data = bytearray(data)
        for _ in range(rng.randint(1, 20)):
            data[rng.randrange(len(data))] = rng.getrandbits(8)
        data, expect = bytes(data), "any"
    want = _brute_misses(obj, capacity // size, policy)

    def oracle(out: str, folder: str) -> str | None:
        d = json.loads(out)
        if expect == "ok" and d["misses"] != want:
            return f"{d['misses']} {policy} misses; by brute force {want} (capacity {capacity}, size {size})"
        return None

    return Case("replay", ["replay", "{dir}/t.npz", "--capacity", str(capacity), "--policy", policy, "--json"],
                {"t.npz": data}, expect, oracle, f"replay {policy} n={n}")


GENERATORS = {"kernel": kernel_case, "search": search_case, "calibrate": calibrate_case,
              "profile": profile_case, "replay": replay_case}


def campaign(seed: int, runs: dict[str, int], hang_s: float = HANG_S, on_failure=None) -> dict:
    """Run ``runs[kind]`` cases of each generator from ``seed``; returns, per kind, the counts of
    each outcome, the seconds taken and the failures (kind, detail, case seed)."""
    table = {}
    for kind, n in runs.items():
        counts = {k: 0 for k in ("ok", "refused", "traceback", "hang", "contract", "wrong")}
        failures = []
        t = time.perf_counter()
        for i in range(n):
            case_seed = zlib.crc32(f"{seed}:{kind}:{i}".encode())
            case = GENERATORS[kind](random.Random(case_seed))
            with tempfile.TemporaryDirectory(prefix="loopsim-fuzz-") as d:
                outcome, detail = run(case, Path(d), hang_s)
            counts[outcome] += 1
            if outcome not in ("ok", "refused"):
                failures.append((outcome, detail, case_seed))
                if on_failure:
                    on_failure(kind, outcome, detail, case_seed)
        table[kind] = {**counts, "runs": n, "seconds": time.perf_counter() - t, "failures": failures}
    return table
