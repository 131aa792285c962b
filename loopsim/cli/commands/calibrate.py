"""``loopsim calibrate MEASUREMENTS.json --hardware H -o SHEET.toml``: fit the achievable HBM
bandwidth (and Tensor Engine rate, where compute-bound measurements constrain it) to measured times
under loopsim's model T = max(W/P, Q/BW), and write a sheet that is H plus those ``[measured]``
roofs. With ``--hardware SHEET.toml --roofs measured`` the time loopsim gives is then a prediction
fitted to the hardware, no longer a bound from its documented roofs.

MEASUREMENTS.json is a list of {"spec": NAME-or-PATH, "set": {"M": 2048}, "time_s": T} (W and Q
counted from the nest as written; optional "label", "dtype"), or of Neuron profiler summaries (W and
Q from the profile, as ``entitle --measured``)."""

from __future__ import annotations

from pathlib import Path

from loopsim.analyses import calibrate
from loopsim.targets import hardware
from loopsim.base.outfile import write_atomic
from loopsim.base.fmt import fmt_time
from loopsim.cli.commands._common import dump_json


def register(sub) -> None:
    p = sub.add_parser("calibrate", help="fit measured roofs (HBM bandwidth, Tensor Engine rate) "
                       "to measured kernel times and write a calibrated hardware sheet",
                       description=__doc__)
    p.add_argument("measurements", metavar="MEASUREMENTS.json")
    p.add_argument("--hardware", "-H", required=True, metavar="NAME",
                   help="the sheet to calibrate (name or .toml path); W and Q are counted on it")
    p.add_argument("-o", "--output", required=True, metavar="SHEET.toml",
                   help="where to write the calibrated sheet")
    p.add_argument("--name", default=None,
                   help="name of the calibrated sheet (default: the output file's stem)")
    p.add_argument("--predict", action="append", default=[], metavar="'SPEC [NAME=INT ...]'",
                   help="a kernel to time under the spec roofs (a bound) and the fitted ones (a "
                        "prediction), side by side (repeatable); an NKI kernel PATH.py::FUNCTION "
                        "here EXECUTES that file, as python FILE.py would")
    p.add_argument("--json", action="store_true", help="print the fit as one JSON object")
    p.set_defaults(func=run)


def _si(x: float, unit: str) -> str:
    for f, pre in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1, "")):
        if abs(x) >= f:
            return f"{x / f:.4g} {pre}{unit}"
    return f"{x:.4g} {unit}"


def run(args) -> int:
    from loopsim.base.outfile import regular_target, require_suffix

    require_suffix(args.output, (".toml",))
    regular_target(args.output)  # a device, FIFO or folder refused before any work
    hw = hardware.load(args.hardware)
    ms = calibrate.load(args.measurements, hw)
    fit = calibrate.fit(ms, hw)
    name = args.name or Path(args.output).stem
    text, origin = calibrate.base_text(hw)
    sheet = calibrate.sheet_text(fit, text, origin, name)
    hardware.loads(sheet, origin=args.output)  # the written sheet loads, or nothing is written
    write_atomic(args.output, lambda tmp: Path(tmp).write_text(sheet, encoding="utf-8"))
    preds = [calibrate.predict(fit, text, hw) for text in args.predict]
    if args.json:
        dump_json({**fit.as_dict(), "sheet": args.output, "name": name,
                   "predictions": [x.as_dict() for x in preds]})
        return 0
    print(f"calibrated {hw.name} from {len(ms)} measurement(s); model T = max(W/P, Q/BW), "
          "roofs fitted by least squares in relative time")
    n_mem = sum(r.bound == "memory" for r in fit.rows)
    print(f"  measured bw     {_si(fit.bw, 'B/s'):>14}   ({fit.bw / fit.spec_bw:.4f} x spec "
          f"{_si(fit.spec_bw, 'B/s')}; " + (f"{n_mem} memory-bound measurement(s))" if fit.bw_fitted
                                          else "not fitted: no memory-bound measurement)"))
    for d, p, fitted in fit.flops:
        spec_p = dict(fit.spec_flops)[d]
        if fitted:
            print(f"  measured P.{d:<5} {_si(p, 'FLOP/s'):>14}   ({p / spec_p:.4f} x spec "
                  f"{_si(spec_p, 'FLOP/s')})")
    unfitted = [d for d, _, f in fit.flops if not f]
    if unfitted:
        print(f"  P.{', P.'.join(unfitted)}: not fitted (no compute-bound measurement); the spec "
              "values are kept")
    print(f"  {'measurement':<32}{'measured':>12}{'predicted':>12}{'pred/meas':>11}  {'bound':<8}"
          f"{'LOO error':>10}")
    for r in fit.rows:
        loo = f"{r.loo_error:+.2%}" if r.loo_error is not None else "-"
        print(f"  {r.measurement.label:<32}{fmt_time(r.measurement.time_s):>12}"
              f"{fmt_time(r.predicted_s):>12}{r.ratio:>11.4f}  {r.bound:<8}{loo:>10}")
    if fit.loo_max is not None:
        print(f"  leave-one-out error: max {fit.loo_max:.2%}, rms {fit.loo_rms:.2%}")
    else:
        print("  one measurement: no leave-one-out error (the fit reproduces it exactly)")
    if preds:
        print(f"  {'prediction':<32}{'Q bytes':>14}{'bound (spec)':>14}{'predicted':>12}{'ratio':>8}"
              "  limit")
        for x in preds:
            how = "fitted" if x.limit_fitted else "spec roof: not fitted, still a bound"
            print(f"  {x.label:<32}{x.Q:>14,}{fmt_time(x.bound_s):>14}{fmt_time(x.predicted_s):>12}"
                  f"{x.predicted_s / x.bound_s:>8.3f}  {x.limit} ({how})")
    print(f"wrote {args.output} (sheet '{name}': {hw.name} plus [measured] roofs). With "
          f"--hardware {args.output} --roofs measured, T is a prediction, not a bound")
    return 0
