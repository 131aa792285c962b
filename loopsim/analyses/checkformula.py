"""Property-test a hand-written Q formula against the simulator, with hypothesis.

A formula is an :mod:`loopsim.ir.expr` expression in the spec's parameter names (``2*(ceil(N/TN)*M*K
+ ceil(M/TM)*K*N + M*N)``), in bytes. hypothesis draws parameter values, the simulator counts Q
for them, and the two must be equal; on a mismatch hypothesis shrinks to the smallest
counterexample, reported with both values and each tensor's simulated bytes and r, so the wrong
term shows.

Which values are drawn
    ``vary`` gives a parameter a range ``lo..hi`` or a list of values; ``sets`` pins one. Every
    other integer parameter of the spec is drawn too: a tile parameter (the step of some loop) from
    the powers of two between a sixteenth of its spec value and its spec value, any other from 1 to
    its spec value. Parameters the spec defines by an expression are computed, not drawn. A tile
    parameter that sets a matmul's K_t, M_t or N_t is kept within the target's limit for it
    (``tile_limits``; none on a flat machine). Drawn values the spec rejects (a blocked step that
    does not divide its outer step), traces beyond 2 million tile accesses, and capacities too small for
    one instruction's tiles are discarded, not counted as examples.

Usable from a user's own pytest suite::

    from loopsim.analyses.checkformula import assert_formula
    def test_my_q():
        assert_formula("matmul", "2*(ceil(N/TN)*M*K + ceil(M/TM)*K*N + M*N)",
                       hardware="trn2-core", sets={"TM": 128, "TK": 128, "TN": 512})

hypothesis, a run-time dependency, draws the examples.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from fractions import Fraction
from functools import partial
from typing import Mapping, Sequence

from loopsim.base import values
from loopsim.ir import expr
from loopsim.frontends import spec as spec_mod
from loopsim.base.errors import CapacityError, InputError, LoopsimError, SpecError
from loopsim.ir.kernel import Kernel, Loop, Matmul, walk

#: discard drawn parameters whose nest expands beyond this many tile accesses (keeps examples fast)
MAX_ACCESSES = 2_000_000


@dataclass(frozen=True, slots=True)
class Counterexample:
    """Parameters at which the formula and the simulator disagree; bytes."""

    params: tuple[tuple[str, int], ...]
    formula_bytes: Fraction
    simulated_Q: int
    tensors: tuple[tuple[str, int, int, int], ...]  # (name, bytes, read bytes, written bytes)

    def describe(self, formula: str, policy: str) -> str:
        shown = ", ".join(f"{k}={v}" for k, v in self.params)
        fb = self.formula_bytes
        fv = f"{int(fb):,}" if fb.denominator == 1 else f"{fb} (not an integer)"
        lines = [f"counterexample: {shown}",
                 f"  formula   {formula} = {fv} bytes",
                 f"  simulated Q ({policy}) = {self.simulated_Q:,} bytes "
                 f"(formula - simulated = {_fmt(fb - self.simulated_Q)})"]
        for name, size, rd, wr in self.tensors:
            lines.append(f"    {name:<6} {size:>14,} bytes   read {rd:>14,} (r = {rd / size:.6g})   "
                         f"written {wr:>14,} (k = {wr / size:.6g})")
        return "\n".join(lines)

    def as_dict(self) -> dict:
        fb = self.formula_bytes
        return {"params": dict(self.params),
                "formula_bytes": int(fb) if fb.denominator == 1 else float(fb),
                "simulated_Q": self.simulated_Q,
                "tensors": {n: {"bytes": s, "read_bytes": r, "write_bytes": w, "r": r / s}
                            for n, s, r, w in self.tensors}}


def _fmt(x: Fraction) -> str:
    return f"{int(x):,}" if x.denominator == 1 else f"{float(x):.6g}"


@dataclass(frozen=True, slots=True)
class CheckResult:
    """Outcome of :func:`check_formula`. ``held``: equal on every one of ``examples`` distinct
    examples; ``examples_asked`` is ``--examples``. When the formula fails, ``examples`` counts the
    ones that passed before the first counterexample (hypothesis's shrinking runs are not counted)."""

    spec: str
    formula: str
    policy: str
    hardware: str
    held: bool
    examples: int
    ranges: tuple[tuple[str, str], ...]
    counterexample: Counterexample | None
    examples_asked: int = 0

    def message(self) -> str:
        where = ", ".join(f"{k} {r}" for k, r in self.ranges)
        if self.held:
            fewer = (f" (of {self.examples_asked} asked: every distinct one the ranges allow)"
                     if self.examples < self.examples_asked else "")
            return (f"the formula held on {self.examples} examples{fewer} ({self.spec}, "
                    f"{self.policy}, {self.hardware}; {where})")
        return (f"the formula does not match {self.spec}'s simulated Q ({self.policy}, "
                f"{self.hardware}): {self.examples} example(s) passed, then a counterexample; smallest "
                + self.counterexample.describe(self.formula, self.policy))

    def as_dict(self) -> dict:
        return {"spec": self.spec, "formula": self.formula, "policy": self.policy,
                "hardware": self.hardware, "held": self.held, "examples": self.examples,
                "examples_asked": self.examples_asked,
                "ranges": dict(self.ranges),
                "counterexample": self.counterexample.as_dict() if self.counterexample else None}


# ---------------------------------------------------------------------------------------------
# ranges


def parse_vary(items: Sequence[str] | None) -> dict[str, range | tuple[int, ...]]:
    """``["M=1..4096", "TN=128,256,512"]`` -> {"M": range(1, 4097), "TN": (128, 256, 512)}: the one
    ``NAME=values`` grammar (:mod:`loopsim.base.values`; ``LO..HI:STEP`` and ``LO..HI:x2`` too).
    A range stays a :class:`range` (hypothesis draws from it; it is never walked)."""
    return values.parse_all(items, "--vary")


def _tile_limits(kernel: Kernel, hw) -> dict[str, tuple[int, str]]:
    """Loop-step text of each matmul tile extent -> (limit, what): K_t, M_t, N_t."""
    from loopsim.ir.tiles import matmul_roles

    steps, limits = {}, hw.tile_limits()
    for stmt, loops in kernel.statements():
        if not isinstance(stmt, Matmul):
            continue
        r = matmul_roles(stmt, kernel)
        bound = {l.var: l for l in loops}
        for acc, axis, role, what in ((stmt.stationary, r.k_stationary, "K", "contraction tile (K_t)"),
                                      (stmt.stationary, r.m_stationary, "M", "stationary free size (M_t)"),
                                      (stmt.moving, r.n_moving, "N", "moving free size (N_t)")):
            lim = limits.get(role)
            terms = acc.index[axis]
            if terms and lim:
                steps[id(min((bound[v] for v in terms), key=lambda l: l.step))] = (lim, what)
    return steps


def _ranges(specfile, kernel: Kernel, hw, sets: Mapping[str, int], vary: Mapping) -> dict:
    """Parameter -> a sequence of candidate values (range or tuple), hardware limits applied."""
    from loopsim.count.formula import loop_symbols

    sym = loop_symbols(kernel)
    limits = _tile_limits(kernel, hw)
    step_params: dict[str, tuple[int, str] | None] = {}
    for n, _ in walk(kernel.body):
        if isinstance(n, Loop):
            text = sym[id(n)][1]
            if text.isidentifier():
                lim = limits.get(id(n))
                old = step_params.get(text)
                step_params[text] = min(filter(None, (lim, old)), default=None)
    raw = specfile.params
    for name in vary:
        if name not in raw:
            raise InputError(f"--vary {name}: {specfile.path} has no parameter {name}; it has: "
                             f"{', '.join(raw)}")
        if name in sets:
            raise InputError(f"--vary {name} and --set {name}: give one or the other")
    out = {}
    for name, default in raw.items():
        if name in sets or (isinstance(default, str) and name not in vary):
            continue
        lim = step_params.get(name)
        if name in vary:
            vals = vary[name]
        elif name in step_params:
            top = default if not lim else min(default, lim[0])
            vals = tuple(v for v in (2**i for i in range(top.bit_length())) if v * 16 >= top) + \
                ((top,) if top & (top - 1) else ())
        else:
            vals = range(1, default + 1)
        if lim:
            kept = [v for v in vals if v <= lim[0]] if not isinstance(vals, range) else \
                range(vals.start, min(vals.stop, lim[0] + 1))
            if not len(kept):
                raise InputError(f"--vary {name}: every value exceeds {hw.name}'s limit of "
                                 f"{lim[0]} ({lim[1]}) for this tile")
            vals = kept if isinstance(kept, range) else tuple(kept)
        out[name] = vals
    return out


def _shown(vals) -> str:
    if isinstance(vals, range):
        return f"{vals.start}..{vals.stop - 1}"
    return "{" + ",".join(map(str, vals)) + "}"


def _accesses(kernel: Kernel) -> int:
    """Tile accesses the nest expands to (statement executions x accesses; blocks not counted)."""
    total = 0
    for stmt, loops in kernel.statements():
        total += math.prod(l.trips for l in loops) * len(stmt.accesses())
    return total


# ---------------------------------------------------------------------------------------------
# the check


class _DivZero(Exception):
    def __init__(self, err, params):
        super().__init__(str(err))
        self.err, self.params = err, params


class _Stop(BaseException):
    """Ends a speculative run early (a BaseException: hypothesis does not shrink it)."""


def _simulate(example: tuple[dict, Kernel], *, f, hw, policy: str, sbuf_bytes: int | None) -> tuple:
    """One drawn example (bound parameters, kernel) simulated by a worker: ("ok", Q, per-tensor
    bytes, whether the formula ``f`` gives Q), ("reject", why) for a kernel the simulator
    refuses, or ("unknown",) for anything else (the check then meets it again, in order, so it
    fails exactly as it would on one process)."""
    from loopsim.model.pipeline import analyze_kernel as analyze

    params, kernel = example
    try:
        rep = analyze(kernel, hw, policy=policy, sbuf_bytes=sbuf_bytes)
    except (SpecError, CapacityError) as e:
        return ("reject", str(e))
    except Exception:  # noqa: BLE001 -- reproduced, in order, by the check itself
        return ("unknown",)
    q = rep.counts.Q
    try:
        holds = f.evaluate(params) == q
    except expr.ExprError:
        holds = False
    return ("ok", q, _tensors(rep), holds)


def _tensors(rep) -> tuple[tuple[str, int, int, int], ...]:
    """(name, bytes, read bytes, written bytes) of each tensor of an analysis."""
    return tuple((t.name, t.bytes, t.read_bytes, t.write_bytes) for t in rep.counts.tensors)


def check_formula(spec: str, formula: str, *, hardware="trn2-core", policy: str = "as-written",
                  sets: Mapping[str, int] | None = None, vary: Mapping | Sequence[str] | None = None,
                  examples: int = 100, sbuf_bytes: int | None = None, seed: int | None = None,
                  jobs: int | None = 1, scheduler: str | None = None,
                  quiet: bool = True) -> CheckResult:
    """Compare ``formula`` (bytes) with the simulated Q over drawn parameters.

    ``hardware``: a sheet name, path or :class:`loopsim.targets.hardware.Hardware`. ``vary``: a mapping
    name -> range or list, or ``--vary`` strings. Deterministic unless ``seed`` is given.
    Raises :class:`loopsim.base.errors.LoopsimError` subclasses for bad input (unknown names, syntax
    errors, division by zero at some drawn values, empty ranges).

    ``jobs`` local processes or the Dask cluster at ``scheduler`` simulate the examples. The
    examples run here, in order, while the rest at the pace so far would take under
    :func:`loopsim.analyses.parallel.here_s` CPU seconds (with ``jobs`` or ``scheduler`` given: the first
    only); past that, while every example so far passed, hypothesis draws the rest as guesses
    (each assumed to pass) and the workers simulate them, in order, up to the first that does not
    pass. If every guess was right, that run was the run; if not, hypothesis runs again, in order,
    with the results known, and shrinks here. Either way the result is that of one process.
    ``quiet``: no progress bar.
    """
    try:
        import hypothesis
        from hypothesis import HealthCheck, Phase, given, settings
        from hypothesis import strategies as st
        from hypothesis.errors import FailedHealthCheck, Unsatisfiable, UnsatisfiedAssumption
        from hypothesis.reporting import with_reporter
    except ImportError:  # pragma: no cover
        raise InputError("loopsim check needs hypothesis (a dependency of loopsim): pip install hypothesis") from None
    from loopsim.targets import hardware as hw_mod
    from loopsim.count.counts import check_tiles
    from loopsim.model.pipeline import analyze_kernel as analyze

    if isinstance(examples, bool) or not isinstance(examples, int) or examples < 1:
        raise InputError(f"--examples={examples!r} must be a positive integer")
    hw = hw_mod.load(hardware) if isinstance(hardware, str) else hardware
    specfile = spec_mod.read(spec)
    from loopsim.count.formula import refuse_program

    refuse_program(specfile, "loopsim check tests a Q formula of")
    sets = dict(sets or {})
    vary = parse_vary(vary) if vary is None or not isinstance(vary, Mapping) else dict(vary)
    base = spec_mod.bind_params(specfile, sets)
    f = expr.parse(formula, "--formula")
    unknown = sorted(f.names - base.keys())
    if unknown:
        raise InputError(f"--formula '{f.text}': unknown name {', '.join(unknown)}; the names of "
                         f"{specfile.path} are: {', '.join(base)}")
    kernel0 = spec_mod.kernel_from(specfile, base)
    ranges = _ranges(specfile, kernel0, hw, sets, vary)
    strategies = {n: (st.integers(v.start, v.stop - 1) if isinstance(v, range) else st.sampled_from(v))
                  for n, v in ranges.items()}
    simulate = partial(_simulate, f=f, hw=hw, policy=policy, sbuf_bytes=sbuf_bytes)
    found: list[Counterexample] = []
    passed: set[tuple] = set()  # distinct examples that held before the first counterexample
    rejected: list[str] = []
    # values -> ("reject", why) | ("ok", params, Q, tensors): results known before hypothesis asks
    known: dict[tuple, tuple] = {}
    drawn: list[tuple] = []  # speculative run: (values, params, kernel) in the order drawn

    def kernel_of(values) -> tuple[dict, Kernel]:
        """Bound parameters and kernel of drawn values; SpecError/CapacityError: not an example."""
        params = spec_mod.bind_params(specfile, {**sets, **values})
        kernel = spec_mod.kernel_from(specfile, params)
        if _accesses(kernel) > MAX_ACCESSES:
            raise SpecError(f"more than {MAX_ACCESSES:,} tile accesses")
        check_tiles(kernel, hw)
        return params, kernel

    def speculate(values):
        """Draw only: record the example, assume it passes (one run already is: a pass, or a
        rejection; a failure ends the guessing)."""
        key = tuple(sorted(values.items()))
        if key in known:
            if known[key][0] == "reject":
                hypothesis.reject()
            return
        try:
            params, kernel = kernel_of(values)
        except (SpecError, CapacityError) as e:
            known[key] = ("reject", str(e))
            hypothesis.reject()
        except Exception:  # noqa: BLE001 -- the run in order meets it again
            raise _Stop from None
        drawn.append((key, params, kernel))

    def check(values):
        """One example, its simulation from ``known`` when there."""
        key = tuple(sorted(values.items()))
        hit = known.get(key)
        if hit is None:
            try:
                params, kernel = kernel_of(values)
                rep = analyze(kernel, hw, policy=policy, sbuf_bytes=sbuf_bytes)
            except (SpecError, CapacityError) as e:
                hit = ("reject", str(e))
            else:
                hit = ("ok", params, rep.counts.Q, _tensors(rep))
            known[key] = hit
        if hit[0] == "reject":
            rejected.append(hit[1])
            hypothesis.reject()
        _, params, q, tensors = hit
        try:
            value = f.evaluate(params)
        except expr.ExprError as e:
            raise _DivZero(e, params) from None
        if value != q:
            found.append(Counterexample(tuple(params.items()), value, q, tensors))
            raise AssertionError("formula != simulated Q")
        if not found:
            passed.add(key)

    from loopsim.analyses.parallel import check_jobs, here_s

    # examples run here, in order, while the rest at the pace so far would take under ``budget``
    # CPU seconds (parallel.here_s); past that, and only while every example so far passed, the
    # rest are drawn as guesses (``speculate``) and simulated by the workers (:func:`_confirm`)
    budget = here_s(jobs, scheduler) if scheduler or check_jobs(jobs) > 1 else float("inf")
    pace = {"calls": 0, "t0": None, "guessing": False, "frozen": False}

    def adaptive(values):
        if pace["guessing"]:
            return speculate(values)
        if pace["t0"] is None:
            pace["t0"] = time.process_time()
        pace["calls"] += 1
        try:
            check(values)
        except UnsatisfiedAssumption:
            raise
        except BaseException:
            pace["frozen"] = True  # a failure: hypothesis shrinks it, every example real
            raise
        left = examples - pace["calls"]
        if not pace["frozen"] and left > 0 and \
                (time.process_time() - pace["t0"]) / pace["calls"] * left >= budget:
            pace["guessing"] = True

    step = [adaptive]

    def one(values):
        step[0](values)

    test = given(st.fixed_dictionaries(strategies))(one)
    test = settings(max_examples=examples, deadline=None, database=None, derandomize=seed is None,
                    suppress_health_check=list(HealthCheck), report_multiple_bugs=False,
                    print_blob=False, phases=[p for p in Phase if p is not Phase.explain])(test)
    if seed is not None:
        test = hypothesis.seed(seed)(test)
    shown = tuple((n, _shown(v)) for n, v in ranges.items()) + tuple((n, f"= {v}") for n, v in sets.items())

    def attempt() -> BaseException | None:
        """Run hypothesis; what it raised (None: nothing). Ctrl-C is not caught."""
        try:
            with with_reporter(lambda *a, **k: None):
                test()
        except (Exception, _Stop) as e:  # noqa: BLE001 -- read by verdict()
            return e
        return None

    raised = attempt()
    if pace["guessing"]:
        if raised is None and _confirm(drawn, known, simulate, jobs, scheduler, quiet):
            # every guess was right: that run was the run
            passed.update(key for key, _, _ in drawn)
            raised = None
        else:  # hypothesis again, in order, with what is known: the run of one process
            step[0] = check
            found.clear(), passed.clear(), rejected.clear()
            raised = attempt()
    try:
        if raised is not None:
            raise raised
    except _DivZero as e:
        vals = ", ".join(f"{k}={v}" for k, v in e.params.items())
        raise InputError(f"--formula: {e.err} (drawn values: {vals})") from None
    except AssertionError:
        if not found:
            raise
        return CheckResult(specfile.path, f.text, policy, hw.name, False, len(passed), shown,
                           found[-1], examples)
    except (Unsatisfiable, FailedHealthCheck):
        why = f"; the last rejection: {rejected[-1]}" if rejected else ""
        raise InputError(f"{specfile.path}: no valid parameters could be drawn from "
                         f"{', '.join(f'{n} {r}' for n, r in shown) or 'the spec'}{why}; "
                         "narrow them with --vary or pin them with --set") from None
    except LoopsimError:
        raise
    if not passed:
        why = f" (the last rejection: {rejected[-1]})" if rejected else ""
        raise InputError(f"{specfile.path}: every drawn example was rejected{why}; "
                         "narrow the ranges with --vary or pin parameters with --set")
    return CheckResult(specfile.path, f.text, policy, hw.name, True, len(passed), shown, None, examples)


def _confirm(drawn, known, simulate, jobs, scheduler, quiet) -> bool:
    """Simulate the examples drawn as guesses, in the order drawn, on ``jobs`` processes or the
    Dask cluster at ``scheduler``, up to the first that does not pass; store the results in
    ``known``. True when every one passed."""
    from loopsim.analyses.parallel import Pool, Progress

    todo = list({key: (key, params, kernel) for key, params, kernel in drawn}.values())
    if not todo:
        return True
    with Pool(jobs, scheduler) as pool, \
            Progress(len(todo), "check", quiet=quiet, unit="example") as bar:
        got = pool.map(simulate, [(params, kernel) for _, params, kernel in todo], progress=bar,
                       here_s=0.0, until=lambda r: not (r[0] == "ok" and r[3]))
    for (key, params, _), r in zip(todo, got):
        if r[0] != "unknown":
            known[key] = r if r[0] == "reject" else ("ok", params, r[1], r[2])
    return len(got) == len(todo) and got[-1][0] == "ok" and got[-1][3]


def assert_formula(spec: str, formula: str, **kwargs) -> CheckResult:
    """:func:`check_formula`, raising AssertionError with the smallest counterexample if any."""
    res = check_formula(spec, formula, **kwargs)
    if not res.held:
        raise AssertionError(res.message())
    return res
