"""Every bundled spec's ``entitle --json`` on a few sheets, written to one JSON file, and compared.

Used to show that a refactor changes no number: run it before (``--write before.json``) and after
(``--compare before.json``); the comparison prints each (spec, sheet, options) that differs.
Paths of the files read (spec and sheet) are dropped: a move of the package changes them.

    python benchmarks/entitle_snapshot.py --write /tmp/before.json
    python benchmarks/entitle_snapshot.py --compare /tmp/before.json
"""

import argparse
import contextlib
import io
import json
import sys

CASES = [("trn2-core", []), ("trn1-core", []), ("trn2-lnc2", []), ("trn2-core", ["--lnc", "2"]),
         ("trn2-core", ["--policy", "lru"])]
DROP = {"spec_file", "hardware_file", "files", "elapsed_s"}


def _specs() -> list[str]:
    from loopsim.cli.main import main
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        main(["list", "--json"])
    d = json.loads(buf.getvalue())
    return sorted(s["name"] for s in d["specs"])


def _clean(o):
    if isinstance(o, dict):
        return {k: _clean(v) for k, v in o.items() if k not in DROP}
    if isinstance(o, list):
        return [_clean(v) for v in o]
    return o


def snapshot() -> dict:
    from loopsim.cli.main import main
    out = {}
    for spec in _specs():
        for hw, extra in CASES:
            key = " ".join([spec, hw, *extra])
            buf, err = io.StringIO(), io.StringIO()
            with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(err):
                try:
                    rc = main(["entitle", spec, "--hardware", hw, "--json", *extra])
                except SystemExit as e:
                    rc = e.code
            try:
                out[key] = {"rc": rc, "json": _clean(json.loads(buf.getvalue()))}
            except ValueError:
                out[key] = {"rc": rc, "error": err.getvalue().strip().splitlines()[-1:]}
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--write")
    g.add_argument("--compare")
    a = ap.parse_args()
    now = snapshot()
    if a.write:
        with open(a.write, "w") as f:
            json.dump(now, f, indent=1, sort_keys=True)
        print(f"{len(now)} cases written to {a.write}")
        return 0
    before = json.load(open(a.compare))
    diff = [k for k in sorted(set(before) | set(now)) if before.get(k) != now.get(k)]
    for k in diff:
        print("differs:", k)
    print(f"{len(now)} cases, {len(diff)} differ")
    return 1 if diff else 0


if __name__ == "__main__":
    sys.exit(main())
