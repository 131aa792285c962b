"""Calibrating the timeline's constants end to end, as a user would, on the four NKI tutorial
matmul kernels (tiled, hoisted loads, blocked free dimension, fully optimized) at the tutorial's
shapes (lhsT 1024 x 4096, rhs 1024 x 2048, bf16), on trn1-core.

No measured Trainium times exist here: the "measured" times are the verdict's T on the sheet with
two constants changed (DMA fixed cost 1300 -> 900 ns, the DMA engines' peak to 4/5 of the sheet's),
so the fit has a known answer. It writes the measurements file, runs ``loopsim calibrate`` on it
(the fit and the leave-one-out figures), then ``loopsim entitle`` on the calibrated sheet, and
prints each kernel's time on the sheet, on the calibrated sheet, and the synthetic time; then
fits the same times off by a few percent (:data:`NOISE`), for leave-one-out figures a real timer's
spread would give.

    python benchmarks/calib_tutorial.py                       # the bundled tilings/nki_tutorial specs
    python benchmarks/calib_tutorial.py PATH/matrix_multiplication_nki_kernels.py   # the kernels themselves

With the tutorial's own file the kernels are traced (the file is EXECUTED, as python FILE.py
would), so the measurements carry ``--allow-kernel-refs`` and their inputs (``"args"``).
Prints figures; asserts nothing (tests/test_calibrate_constants.py holds the checks)."""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from loopsim.analyses import calibrate_constants as cc  # noqa: E402
from loopsim.cli.main import main  # noqa: E402
from loopsim.targets import hardware  # noqa: E402

HW = "trn1-core"
SPECS = ["1_tiled", "2_hoist_load", "3_block_free_dimension", "4_fully_optimized"]
FUNCS = ["nki_matmul_tiled_", "nki_matmul_hoist_load_", "nki_matmul_block_free_dimension_",
         "nki_matmul_fully_optimized_"]
ARGS = ["lhsT=1024x4096", "rhs=1024x2048"]
#: the factors the noisy run scales the synthetic times by
NOISE = (1.03, 0.98, 1.02, 0.97)


def entries(tutorial: str | None) -> list[dict]:
    if tutorial is None:
        return [{"spec": f"nki_tutorial/{s}", "label": s} for s in SPECS]
    return [{"spec": f"{Path(tutorial).resolve()}::{f}", "args": ARGS, "label": s}
            for s, f in zip(SPECS, FUNCS)]


def main_(argv: list[str]) -> int:
    tutorial = argv[0] if argv else None
    hw = hardware.load(HW)
    changed = {"dma_fixed_ns": 900, "dma_core_bw": hw.constants()["dma_core_bw"] * 4 // 5}
    es = entries(tutorial)
    kernels = [(e["label"], e["spec"], (), None, (tuple(e["args"]), (), None) if "args" in e else None)
               for e in es]
    ev = cc.Evaluator(kernels, hw)
    times = [ev.T(i, {**hw.constants(), **changed}) for i in range(len(es))]
    print(f"synthetic times: the verdict's T on {HW} with {changed} (sheet: "
          f"{ {k: hw.constants()[k] for k in changed} })")
    with tempfile.TemporaryDirectory() as d:
        m, cal = Path(d) / "tutorial.json", Path(d) / "trn1-tutorial.toml"
        m.write_text(json.dumps([{**e, "time_s": t} for e, t in zip(es, times)], indent=1))
        refs = ["--allow-kernel-refs"] if tutorial else []
        for constants in (["--constants", "dma_fixed_ns,dma_core_bw"], []):
            print(f"\n$ loopsim calibrate tutorial.json -H {HW} -o trn1-tutorial.toml --model timeline "
                  + " ".join(refs + constants))
            main(["calibrate", str(m), "-H", HW, "-o", str(cal), "--model", "timeline", *refs, *constants])
        # the same times off by a few percent each (what a real timer gives): the leave-one-out
        # error is then the spread to expect of a prediction
        noisy = [t * x for t, x in zip(times, NOISE)]
        m.write_text(json.dumps([{**e, "time_s": t} for e, t in zip(es, noisy)], indent=1))
        print(f"\nthe same times x {NOISE}:\n$ loopsim calibrate tutorial.json -H {HW} -o "
              "trn1-tutorial.toml --model timeline --constants dma_fixed_ns,dma_core_bw " + " ".join(refs))
        main(["calibrate", str(m), "-H", HW, "-o", str(Path(d) / "noisy.toml"), "--model", "timeline",
              *refs, "--constants", "dma_fixed_ns,dma_core_bw"])
        sys.stdout.flush()
        print(f"\nthe calibrated sheet reused (entitle -H trn1-tutorial.toml):")
        print(f"  {'kernel':<24}{'sheet T':>12}{'calibrated T':>14}{'synthetic':>12}")
        for e, t, (_, ref, _, _, inputs) in zip(es, times, kernels):
            extra = [a for x in (inputs[0] if inputs else ()) for a in ("--arg", x)]
            got = []
            for sheet in (HW, str(cal)):
                import contextlib
                import io

                buf = io.StringIO()
                with contextlib.redirect_stdout(buf):
                    main(["entitle", ref, "-H", sheet, "--json", *extra])
                got.append(json.loads(buf.getvalue()[buf.getvalue().index("{"):])["T"])
            print(f"  {e['label']:<24}{got[0] * 1e6:>10.2f}µs{got[1] * 1e6:>12.2f}µs{t * 1e6:>10.2f}µs")
    return 0


if __name__ == "__main__":
    raise SystemExit(main_(sys.argv[1:]))
