"""``loopsim calibrate MEASUREMENTS.json --hardware H -o SHEET.toml``: fit the achievable HBM
bandwidth (and Tensor Engine rate, where compute-bound measurements constrain it) to measured times
under loopsim's model T = max(W/P, Q/BW), and write a sheet that is H plus those ``[measured]`` roofs.
Which measurement binds which roof is chosen by in-sample error over every cut in intensity; each
measurement's residual and leave-one-out error are reported, and warnings (a residual over
--threshold, a roof left at its spec value, ...) go to stderr (--strict: exit 1, no sheet). With
``--hardware SHEET.toml --roofs measured`` the time loopsim gives is then a prediction fitted to the
hardware where its limit is a fitted roof, and says so where it is not.

MEASUREMENTS.json is data (nothing in it runs): a list of {"spec": NAME-or-PATH, "set": {"M":
2048}, "time_s": T} (W and Q counted from the nest as written; optional "label", "dtype"; a kernel
file PATH.py::FUNCTION only with --allow-kernel-refs), of {"W", "Q", "time_s"} hand counts, of Neuron
profiler summaries (W and Q from the profile, as ``entitle --measured``), or calibrate --json's own
output. A --predict SPEC that names a kernel file runs it (kernel files are code)."""

from __future__ import annotations

from pathlib import Path

from loopsim.analyses import calibrate
from loopsim.analyses.calibrate import _si
from loopsim.base.errors import InputError
from loopsim.targets import hardware
from loopsim.base.outfile import write_atomic
from loopsim.base.fmt import fmt_time
from loopsim.cli.commands._common import dump_json
from loopsim.targets.neuron.sheet import CALIBRATABLE


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
                   help="a kernel to time under the spec roofs (a bound) and the chosen model (a "
                        "prediction: the fitted roofs, or the timeline on the fitted constants), "
                        "side by side (repeatable); an NKI kernel PATH.py::FUNCTION "
                        "here EXECUTES that file, as python FILE.py would")
    p.add_argument("--allow-kernel-refs", action="store_true",
                   help="let a measurement's \"spec\" name a kernel file PATH.py::FUNCTION, which is "
                        "then EXECUTED to trace it (without this flag such an entry is refused: the "
                        "measurements file is data)")
    p.add_argument("--threshold", type=float, default=calibrate.THRESHOLD, metavar="FRACTION",
                   help="warn when a measurement's in-sample predicted/measured is off by more "
                        "than this (default %(default)s = 10%%)")
    p.add_argument("--strict", action="store_true",
                   help="exit 1, writing no sheet, when the fit warns (a residual over the "
                        "threshold, a roof left at spec, a fitted roof above spec, a tie)")
    p.add_argument("--model", choices=calibrate.MODELS, default="auto",
                   help="what to fit: roofline (measured roofs, T = max(W/P, Q/BW)), timeline (the "
                        "engine timeline's constants: DMA fixed cost and peak, engine and Tensor "
                        "Engine overheads) or auto (default: both, the better by in-sample error)")
    p.add_argument("--constants", default=None, metavar="NAME,...",
                   help="the timeline constants to fit (default every one the sheet gives: "
                        + ", ".join(CALIBRATABLE) + ")")
    p.add_argument("--json", action="store_true", help="print the fit as one JSON object")
    p.set_defaults(func=run)


def _warn(fit) -> None:
    import sys

    sys.stdout.flush()
    for w in fit.warnings:
        print(f"loopsim: warning: {w}", file=sys.stderr)


def run(args) -> int:
    from loopsim.base.outfile import regular_target, require_suffix

    require_suffix(args.output, (".toml",))
    regular_target(args.output)  # a device, FIFO or folder refused before any work
    hw = hardware.load(args.hardware)
    ms = calibrate.load(args.measurements, hw, allow_kernel_refs=args.allow_kernel_refs)
    names = None
    if args.constants is not None:
        names = [n.strip() for n in args.constants.split(",") if n.strip()]
        if not names:
            raise InputError(f"--constants={args.constants!r} names no constant; known: "
                             f"{', '.join(CALIBRATABLE)}")
    fit = calibrate.fit(ms, hw, threshold=args.threshold, model=args.model, constants=names)
    name = args.name or Path(args.output).stem
    text, origin = calibrate.base_text(hw)
    sheet = calibrate.sheet_text(fit, text, origin, name, hw)
    calibrate.check_sheet(fit, sheet, args.output)  # the written sheet loads, or nothing is written
    failed = args.strict and bool(fit.warnings)
    if not failed:
        write_atomic(args.output, lambda tmp: Path(tmp).write_text(sheet, encoding="utf-8"))
    preds = [calibrate.predict(fit, text, hw) for text in args.predict]
    if args.json:
        _warn(fit)
        dump_json({**fit.as_dict(), "sheet": None if failed else args.output, "name": name,
                   "predictions": [x.as_dict() for x in preds]})
        return 1 if failed else 0
    print(f"calibrated {hw.name} from {len(ms)} measurement(s); chosen model: {fit.model} "
          + ("(the engine timeline with fitted constants; roofs at spec)" if fit.model == "timeline"
             else "(T = max(W/P, Q/BW) with fitted roofs)"))
    print(f"roofline: roofs fitted by least squares in relative time; {fit.candidates} roof "
          "assignment(s) tried, the best by in-sample error" + ("" if fit.model == "roofline"
                                                                else " (not chosen)"))
    n_mem = sum(r.bound == "memory" for r in fit.rows)
    if fit.bw_fitted:
        print(f"  measured bw     {_si(fit.bw, 'B/s'):>14}   ({fit.bw / fit.spec_bw:.4f} x spec "
              f"{_si(fit.spec_bw, 'B/s')}; {n_mem} memory-bound measurement(s))")
    else:
        print(f"  bw (spec)       {_si(fit.spec_bw, 'B/s'):>14}   not fitted: no memory-bound measurement")
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
    print(f"  in-sample error: rms {fit.rms:.2%}" + (
        f"; leave-one-out error: max {fit.loo_max:.2%}, rms {fit.loo_rms:.2%}"
        if fit.loo_max is not None else "; one measurement: no leave-one-out error (the fit "
        "reproduces it exactly)"))
    fc = fit.fixed_cost
    if isinstance(fc, calibrate.FixedCost):
        eff = f", {fc.efficiency:.1%} of the DMA engines' bandwidth" if fc.efficiency else ""
        print(f"  DMA fixed cost  t = Q/BW + transfers x c over {fc.measurements} memory-bound "
              f"measurement(s): BW {_si(fc.bw, 'B/s')}{eff}, c = {fmt_time(fc.c_s)} per transfer; "
              f"in-sample rms {fc.rms:.2%} (Q/BW alone {fc.rms_plain:.2%}); reported, not written "
              "to the sheet")
    elif fc is not None:
        print(f"  DMA fixed cost  {fc}")
    _timeline_lines(fit)
    if preds:
        print(f"  {'prediction':<32}{'Q bytes':>14}{'bound (spec)':>14}{'predicted':>12}{'ratio':>8}"
              "  limit")
        for x in preds:
            print(f"  {x.label:<32}{x.Q:>14,}{fmt_time(x.bound_s):>14}{fmt_time(x.predicted_s):>12}"
                  f"{x.predicted_s / x.bound_s:>8.3f}  {x.how}")
    if fit.warnings:
        print(f"  {len(fit.warnings)} warning(s), on stderr" +
              ("; --strict: no sheet written" if failed else ""), flush=True)
        _warn(fit)
    if failed:
        return 1
    if fit.model == "timeline":
        got = ", ".join(c.name for c in fit.timeline.fitted) or "none (the sheet's values fit)"
        print(f"wrote {args.output} (sheet '{name}': {hw.name} with calibrated timeline constants: "
              f"{got}). With --hardware {args.output}, T is the timeline on them, and every report "
              "says calibrated")
        return 0
    print(f"wrote {args.output} (sheet '{name}': {hw.name} plus [measured] roofs). With "
          f"--hardware {args.output} --roofs measured, T is a prediction where its limit is a "
          "fitted roof, and says so where it is not")
    return 0


def _timeline_lines(fit) -> None:
    """The timeline-constants fit: each constant, each measurement, the errors."""
    tf = fit.timeline
    if tf is None:
        return
    if isinstance(tf, str):
        print(f"timeline constants: {tf}")
        return
    print("timeline: the verdict's T (engine timeline among the roofs and ceilings) with the sheet's "
          f"timeline constants fitted by least squares in relative time ({tf.evaluations} runs)"
          + ("" if fit.model == "timeline" else " (not chosen)"))
    print(f"  {'constant':<20}{'sheet':>20}{'calibrated':>20}  status")
    for c in tf.constants:
        val = f"{c.value:,}" if c.fitted else "-"
        print(f"  {c.name:<20}{c.sheet_value:>20,}{val:>20}  {c.status}: {c.why}")
    print(f"  {'measurement':<32}{'measured':>12}{'sheet':>12}{'predicted':>12}{'pred/meas':>11}"
          f"{'LOO error':>10}")
    for r in tf.rows:
        loo = f"{r.loo_error:+.2%}" if r.loo_error is not None else "-"
        print(f"  {r.label:<32}{fmt_time(r.time_s):>12}{fmt_time(r.sheet_s):>12}"
              f"{fmt_time(r.predicted_s):>12}{r.ratio:>11.4f}{loo:>10}")
    print(f"  in-sample error: rms {tf.rms:.2%} (the sheet's constants: {tf.sheet_rms:.2%})" + (
        f"; leave-one-out error: max {tf.loo_max:.2%}, rms {tf.loo_rms:.2%}"
        if tf.loo_max is not None else "; one measurement: no leave-one-out error"))
