"""Self-contained HTML pages: the Tensor Engine clockwork and a kernel report.

One file each, nothing fetched: styles, SVG and script are inline. Every number a page shows that
the JSON model output also gives is written as ``<span class="num" data-key=KEY
data-value=JSON>text</span>``, ``KEY`` its path in the command's ``--json`` object (``a.b.c``), so
a test (tests/test_pages.py) reads the DOM and compares it with the JSON exactly. Print styles
(``@media print``) fit the report on A4 or Letter: no fixed page size, tables and figures kept
whole, the controls hidden.
"""

from __future__ import annotations

import html
import json
import math

from loopsim.base.fmt import fmt_time, si

CSS = """
:root { --ink:#1b1f24; --mute:#5b6570; --line:#d5dae0; --busy:#2f7ed8; --idle:#e9edf1;
        --wait:#e8a33d; --psum:#3aa06b; --bad:#c0392b; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--ink);
       margin: 0 auto; padding: 16px 20px; max-width: 1100px; }
h1 { font-size: 22px; margin: 0 0 4px; } h2 { font-size: 17px; margin: 22px 0 6px;
     border-bottom: 1px solid var(--line); padding-bottom: 3px; }
p.sub { color: var(--mute); margin: 0 0 12px; }
table { border-collapse: collapse; margin: 6px 0 10px; font-variant-numeric: tabular-nums; }
th, td { border-bottom: 1px solid var(--line); padding: 3px 10px 3px 0; text-align: left;
         vertical-align: top; }
th { font-weight: 600; color: var(--mute); font-size: 12px; text-transform: uppercase; }
td.r, th.r { text-align: right; white-space: nowrap; }
.verdict { font-size: 16px; padding: 8px 12px; border-left: 4px solid var(--busy); background: #f3f7fb; }
.verdict.bad { border-color: var(--bad); background: #fbf1f0; }
.note { color: var(--mute); font-size: 12px; }
figure { margin: 8px 0; } figure svg { max-width: 100%; height: auto; }
.controls button { font: inherit; padding: 3px 10px; margin-right: 4px; }
.controls input[type=range] { width: 420px; vertical-align: middle; }
.grid2 { display: flex; gap: 18px; flex-wrap: wrap; align-items: flex-start; }
.grid2 > .side { flex: 1 1 300px; min-width: 280px; }
code, pre { font: 12px ui-monospace, SFMono-Regular, Menlo, monospace; }
pre { background: #f6f8fa; padding: 8px; overflow-x: auto; }
.bar { display: inline-block; height: 10px; background: var(--busy); vertical-align: middle; }
@media print {
  @page { margin: 12mm; }
  body { max-width: none; padding: 0; font-size: 11px; }
  .controls, .noprint { display: none; }
  table, figure, .keep { break-inside: avoid; }
  h2 { break-after: avoid; }
  pre { white-space: pre-wrap; }
}
"""


def esc(text: object) -> str:
    return html.escape(str(text), quote=True)


def _jsonable(v):
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


def num(key: str, value, text: str | None = None) -> str:
    """A number of the model output: shown as ``text`` (default: ``value`` with thousands
    separators), its exact value in ``data-value`` and its JSON path in ``data-key``."""
    if text is None:
        text = f"{value:,}" if isinstance(value, int) else f"{value:.4g}"
    return (f'<span class="num" data-key="{esc(key)}" data-value="{esc(json.dumps(_jsonable(value)))}">'
            f"{esc(text)}</span>")


def table(head: list[str], rows: list[list[str]], right: set[int] = frozenset(), cls: str = "") -> str:
    """An HTML table; cells are HTML already (escape text with :func:`esc`)."""
    th = "".join(f'<th class="r">{h}</th>' if i in right else f"<th>{h}</th>"
                 for i, h in enumerate(head))
    body = "".join("<tr>" + "".join(f'<td class="r">{c}</td>' if i in right else f"<td>{c}</td>"
                                    for i, c in enumerate(r)) + "</tr>" for r in rows)
    return f'<table class="{cls}"><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>'


def page(title: str, body: str, script: str = "") -> str:
    """The whole document."""
    js = f"<script>\n{script}\n</script>" if script else ""
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{esc(title)}</title><style>{CSS}</style></head>\n<body>\n{body}\n{js}\n</body></html>\n")


def tflops(x: float, digits: int = 4) -> str:
    return f"{x / 1e12:.{digits}g} TFLOP/s"


def short_time(s: float) -> str:
    """Seconds to 3 significant digits with a prefix: 2.2857e-08 -> "22.9 ns" (the curriculum's
    figures are quoted so)."""
    for f, unit in ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns")):
        if abs(s) >= f or unit == "ns":
            return f"{s / f:.3g} {unit}"


# ---------------------------------------------------------------------------------------------
# the clockwork

_CLOCKWORK_JS = r"""
const CW = JSON.parse(document.getElementById('cw-data').textContent);
const SVGNS = 'http://www.w3.org/2000/svg';
const CELL = 8;                                  // PEs per drawn cell, each way
const NR = Math.ceil(CW.rows / CELL), NC = Math.ceil(CW.cols / CELL);
const PX = 16, X0 = 150, Y0 = 40;                // cell size in px, array origin
const svg = document.getElementById('array');
const cells = [];
function el(tag, attrs, parent) {
  const e = document.createElementNS(SVGNS, tag);
  for (const k in attrs) e.setAttribute(k, attrs[k]);
  (parent || svg).appendChild(e); return e;
}
// the PE array: rows = partitions (K, contraction), columns = stationary free size (M)
for (let r = 0; r < NR; r++) for (let c = 0; c < NC; c++) {
  cells.push(el('rect', {x: X0 + c * PX, y: Y0 + r * PX, width: PX - 1, height: PX - 1,
                         fill: 'var(--idle)', 'data-r': r, 'data-c': c}));
}
el('rect', {x: X0 - 1, y: Y0 - 1, width: Math.ceil(CW.M / CELL) * PX + 1,
            height: Math.ceil(CW.K / CELL) * PX + 1, fill: 'none', stroke: '#1b1f24',
            'stroke-width': 1.5, 'stroke-dasharray': '4 2', id: 'stationary-outline'});
const label = (x, y, t, a) => { const e = el('text', Object.assign({x: x, y: y, 'font-size': 12,
                                                                      fill: '#5b6570'}, a || {}));
                                e.textContent = t; return e; };
label(X0, Y0 - 22, `PE array: ${CW.rows} rows (K) × ${CW.cols} columns (M); a square is ${CELL}×${CELL} PEs`);
label(X0, Y0 - 8, `stationary tile ${CW.K}×${CW.M} (dashed): rows 0–${CW.K - 1}, columns 0–${CW.M - 1}`);
// the moving tile in SBUF, streaming in from the left, one column (K elements) per cycle
const MW = 120, MY = Y0, MH = NR * PX;
label(4, Y0 - 8, `moving tile ${CW.K}×${CW.N}`);
el('rect', {x: 4, y: MY, width: MW, height: MH * CW.K / CW.rows, fill: '#cfe0f5', id: 'moving'});
const movingDone = el('rect', {x: 4, y: MY, width: 0, height: MH * CW.K / CW.rows, fill: '#9bb7d9'});
// PSUM below the array: M partitions, N fp32 columns of the instruction's accumulator
const PY = Y0 + NR * PX + 28;
label(X0, PY - 6, `PSUM: ${CW.M} partitions × ${CW.N} fp32 partial sums`);
el('rect', {x: X0, y: PY, width: NC * PX, height: 16, fill: 'var(--idle)'});
const psumBar = el('rect', {x: X0, y: PY, width: 0, height: 16, fill: 'var(--psum)', id: 'psum-bar'});
// the instruction timeline: one bar per instruction, busy (streaming) and waiting (MM_INIT)
const TY = PY + 50, TW = 600;
label(4, TY - 6, `${CW.count} instructions, each max(N, MM_INIT) × ${CW.slowdown} = ${CW.cycles_per_instruction} cycles` + (CW.count > 64 ? ' (first 64 drawn)' : ''));
const shown = Math.min(CW.count, 64), bw = TW / shown;
const stream = CW.N * CW.slowdown;
for (let i = 0; i < shown; i++) {
  el('rect', {x: 4 + i * bw, y: TY, width: Math.max(1, bw * stream / CW.cycles_per_instruction - 0.5),
              height: 14, fill: 'var(--busy)'});
  if (stream < CW.cycles_per_instruction)
    el('rect', {x: 4 + i * bw + bw * stream / CW.cycles_per_instruction, y: TY,
                width: Math.max(0.5, bw * (1 - stream / CW.cycles_per_instruction) - 0.5), height: 14,
                fill: 'var(--wait)'});
}
const cursor = el('rect', {x: 4, y: TY - 3, width: 2, height: 20, fill: '#1b1f24', id: 'cursor'});
svg.setAttribute('viewBox', `0 0 640 ${TY + 30}`);

const colors = ['#2f7ed8', '#7a4fc9', '#1f9e89', '#d45d79'];
// instructions whose wavefront can still be in the array: its fill takes K + M + N x slowdown cycles
const SPAN = Math.ceil((CW.K + CW.M + CW.N * CW.slowdown) / CW.cycles_per_instruction);
const $ = id => document.getElementById(id);
const slider = $('slider');
slider.max = CW.total_cycles;
let cycle = 0, timer = null;
function fmtInt(x) { return x.toLocaleString('en-US'); }

// cycle g: instruction i = floor(g / cpi) was issued at i * cpi; its moving column j enters
// PE (k, m) at i * cpi + (j * slowdown) + k + m (one cycle of skew per row and column: the
// wavefront of a systolic array, drawn per 8x8 square). Columns j < N stream; after them, for
// N < MM_INIT, the array waits for the next issue.
function draw() {
  const cpi = CW.cycles_per_instruction, g = cycle;
  const i = Math.min(Math.floor(g / cpi), CW.count - 1);
  const t = g - i * cpi;                                // cycle within the instruction
  const done = g >= CW.total_cycles;
  for (const cell of cells) {
    const r = +cell.getAttribute('data-r'), c = +cell.getAttribute('data-c');
    const k = r * CELL, m = c * CELL;
    let fill = 'var(--idle)';
    if (k < CW.K && m < CW.M) {
      fill = '#dbe5f0';                                 // holds stationary values, not computing
      // the newest instruction whose wavefront is in this square now
      for (let ii = Math.floor(g / cpi); ii >= 0 && ii >= Math.floor(g / cpi) - SPAN; ii--) {
        if (ii >= CW.count) continue;
        const j = Math.floor((g - ii * cpi - k - m) / CW.slowdown);
        if (j >= 0 && j < CW.N) { fill = colors[ii % colors.length]; break; }
      }
    }
    cell.setAttribute('fill', fill);
  }
  const streamed = done ? CW.N : Math.min(CW.N, Math.floor(t / CW.slowdown));   // columns issued
  movingDone.setAttribute('width', MW * streamed / CW.N);
  psumBar.setAttribute('width', NC * PX * (CW.M / CW.cols) * streamed / CW.N);
  psumBar.setAttribute('fill', colors[i % colors.length]);
  cursor.setAttribute('x', 4 + bw * Math.min(g / CW.cycles_per_instruction, shown) - 1);
  const cols = done ? CW.count * CW.N : i * CW.N + streamed;   // moving columns issued so far
  const flops = 2 * CW.K * CW.M * cols;
  $('cycle').textContent = fmtInt(g);
  $('instruction').textContent = done ? `${CW.count} of ${CW.count} (done)` : `${i + 1} of ${CW.count}`;
  $('phase').textContent = done ? 'all instructions issued' :
      (t < stream ? `streaming moving column ${streamed + 1} of ${CW.N}` :
       `waiting: MM_INIT holds the array until cycle ${cpi} of the instruction`);
  $('flops-done').textContent = fmtInt(flops);
  $('time-done').textContent = (g / CW.clock_hz * 1e9).toFixed(1) + ' ns';
  $('rate-so-far').textContent = g ? (flops / (g / CW.clock_hz) / 1e12).toPrecision(3) + ' TFLOP/s' : '–';
  slider.value = g;
}
function setCycle(g) { cycle = Math.max(0, Math.min(CW.total_cycles, g)); draw(); }
function stop() { if (timer) { clearInterval(timer); timer = null; } $('play').textContent = 'Play'; }
$('play').onclick = () => {
  if (timer) { stop(); return; }
  if (cycle >= CW.total_cycles) setCycle(0);
  $('play').textContent = 'Pause';
  timer = setInterval(() => {
    const per = +$('speed').value;
    setCycle(cycle + per);
    if (cycle >= CW.total_cycles) stop();
  }, 40);
};
$('step').onclick = () => { stop(); setCycle(cycle + 1); };
$('back').onclick = () => { stop(); setCycle(cycle - 1); };
$('next').onclick = () => { stop(); setCycle((Math.floor(cycle / CW.cycles_per_instruction) + 1) * CW.cycles_per_instruction); };
slider.oninput = () => { stop(); setCycle(+slider.value); };
draw();
"""


def clockwork_page(cw) -> str:
    """The clockwork page of a :class:`loopsim.analyses.clockwork.Clockwork`; its numbers carry
    the keys of ``loopsim clockwork --json``."""
    f = dict(cw.factors)
    cyc_ns = cw.cycle_s * 1e9
    assumed = " (ASSUMED on this sheet)" if cw.init_assumed else ""
    rows = [
        ["peak P (bf16, one core)",
         f"{num('rows', cw.rows)} × {num('cols', cw.cols)} PEs × 2 FLOP × "
         f"{num('clock_hz', cw.clock_hz, f'{cw.clock_hz / 1e9:g} GHz')}",
         num("P", cw.P, tflops(cw.P))],
        [f"dtype {esc(cw.dtype)}", num('factors.dtype', f['dtype'], f"{f['dtype']:g}") + " × P"
         + (f"; each instruction takes {num('slowdown', cw.slowdown)}× the cycles" if cw.slowdown > 1 else ""),
         num("P_dtype", cw.P_dtype, tflops(cw.P_dtype))],
        ["rows used (partition fill)",
         f"K = {num('K', cw.K)} of {num('rows_eff', cw.rows_eff)} PE rows",
         num("factors.partition_fill", f["partition_fill"])],
        ["columns used (column fill)", f"M = {num('M', cw.M)} of {cw.cols} PE columns",
         num("factors.column_fill", f["column_fill"])],
        ["cycles per instruction",
         f"max(N = {num('N', cw.N)}, MM_INIT = {num('init_cycles', cw.init_cycles)}{assumed})"
         f" × {cw.slowdown}", num("cycles_per_instruction", cw.cycles_per_instruction)],
        ["issue rate", f"N / max(N, MM_INIT)",
         num("factors.issue_rate", f["issue_rate"])],
        ["time per instruction", f"{cw.cycles_per_instruction:,} cycles × {cyc_ns:.4g} ns",
         num("instruction_s", cw.instruction_s, short_time(cw.instruction_s))],
        ["instructions", "back to back, same tiles", num("count", cw.count)],
        ["total cycles", f"{cw.count:,} × {cw.cycles_per_instruction:,}", num("total_cycles", cw.total_cycles)],
        ["work W", f"2 × K × M × N × {cw.count:,}", num("W", cw.W)],
        ["time T", "W / effective rate", num("T", cw.T, fmt_time(cw.T))],
        ["<b>effective rate</b>", "P × every factor above (the combined ceiling)",
         "<b>" + num("rate", cw.rate, tflops(cw.rate, 3)) + "</b>"],
    ]
    data = json.dumps(cw.as_dict()).replace("</", "<\\/")
    body = f"""
<h1>Tensor Engine clockwork</h1>
<p class="sub">{esc(cw.hardware)} ({esc(cw.scope)}): {cw.count:,} back-to-back matmul instructions,
stationary {cw.K}×{cw.M}, moving {cw.K}×{cw.N}, {esc(cw.dtype)}. Numbers from the ceilings model of
<code>loopsim ceilings</code> on the spec below.</p>
<div class="controls">
 <button id="play">Play</button><button id="back">◀ cycle</button><button id="step">cycle ▶</button>
 <button id="next">next instruction ▶▶</button>
 speed <select id="speed"><option value="1">1 cycle/frame</option><option value="4" selected>4</option>
 <option value="16">16</option><option value="64">64</option></select><br>
 <input type="range" id="slider" min="0" max="{cw.total_cycles}" value="0" step="1" aria-label="cycle">
</div>
<div class="grid2">
<figure><svg id="array" xmlns="http://www.w3.org/2000/svg" width="640" role="img"
 aria-label="PE array"></svg></figure>
<div class="keep side">
<table id="state"><tbody>
<tr><th>cycle</th><td id="cycle">0</td></tr>
<tr><th>instruction</th><td id="instruction">1</td></tr>
<tr><th>now</th><td id="phase"></td></tr>
<tr><th>FLOPs done</th><td id="flops-done">0</td></tr>
<tr><th>time</th><td id="time-done">0 ns</td></tr>
<tr><th>rate so far</th><td id="rate-so-far">–</td></tr>
</tbody></table>
<p class="note">Colour: the instruction whose moving column is in that square of PEs; pale blue:
stationary values held, no multiply this cycle; grey: PEs the tiles leave unused. The bar under
PSUM fills as the instruction's output columns are written. Timeline: blue cycles stream moving
columns, orange cycles wait out MM_INIT. Each instruction's stationary tile is loaded into the
array before its moving tile streams; like the model, the picture gives that load no cycles of its
own beyond max(N, MM_INIT) (the guide's initiation interval for back-to-back instructions). The
wavefront is drawn with one cycle of skew per PE row and column (a systolic array's fill,
overlapped with the previous instruction); the model charges only the issue interval.</p>
</div></div>
<h2>The numbers</h2>
{table(["", "how", "value"], rows, right={2}, cls="numbers")}
<p class="note">Curriculum Day 3: K = 64 fills half the rows (P × 0.5); N = 32 still costs
MM_INIT = 64 cycles ({64 / (cw.clock_hz / 1e9):.3g} ns at {cw.clock_hz / 1e9:g} GHz), so the issue rate is 0.5 too.</p>
<h2>The spec these numbers come from</h2>
<pre>{esc(cw.spec)}</pre>
<script type="application/json" id="cw-data">{data}</script>
"""
    return page(f"Tensor Engine clockwork: {cw.hardware} K={cw.K} M={cw.M} N={cw.N} {cw.dtype}",
                body, _CLOCKWORK_JS)


def check_path(path: str, flag: str = "-o") -> None:
    """An InputError for a page path not ending in .html/.htm (before any work is done)."""
    from loopsim.base.errors import InputError

    if not path.lower().endswith((".html", ".htm")):
        raise InputError(f"{flag} {path}: a page is written as .html")


def write(path: str, text: str, flag: str = "-o") -> None:
    """Write a page whole or not at all; a path not ending in .html/.htm is refused."""
    from loopsim.base.outfile import write_atomic

    check_path(path, flag)

    def put(tmp: str) -> None:
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(text)

    write_atomic(path, put, flag)


# ---------------------------------------------------------------------------------------------
# the kernel report


def figure_svg(fig) -> str:
    """A matplotlib figure as inline SVG (its text drawn as paths: no font is fetched)."""
    import io

    import matplotlib

    buf = io.StringIO()
    with matplotlib.rc_context({"svg.hashsalt": "loopsim"}):  # the same ids every run
        fig.savefig(buf, format="svg", metadata={"Date": None})
    text = buf.getvalue()
    return text[text.index("<svg"):]


def _t(key: str, s) -> str:
    return num(key, s, fmt_time(s)) if s is not None else "–"


def _b(key: str, n: int) -> str:
    return num(key, n, f"{n:,}")


def _pct(key: str, x) -> str:
    return num(key, x, f"{x:.1%}") if x is not None else "–"


def report_page(d: dict, dma: list[dict], roofline_svg: str, *, ceilings_of_stages=(),
                timeline_figures: dict[str, str] | None = None, measured_lines: list[str] = ()) -> str:
    """The report of one kernel. ``d``: ``entitle --json``'s object (``measured`` included when
    measured); ``dma``: ``dma --json``'s ``kernels``; ``roofline_svg``: the plot;
    ``timeline_figures``: each kernel's timeline picture (SVG) by stage name; ``ceilings_of_stages``: (stage name,
    ceilings dicts) of a multi-kernel program (a single kernel's are in ``d``)."""
    feasible = d["feasible"]
    parts = [f"<h1>{esc(d['kernel'])} on {esc(d['hardware'])}</h1>",
             f'<p class="sub">{esc(d["scope"])}; {esc(d["dtype"])}; roofs {esc(d["roofs"])}; '
             f'policy {esc(d["policy"])}; spec <code>{esc(d["spec_file"])}</code>; '
             + ", ".join(f"{esc(k)} = {num('params.' + k, v)}" for k, v in d["params"].items())
             + "</p>"]
    # verdict and why
    v_cls = "verdict" if feasible else "verdict bad"
    rate = d.get("attainable_rate")
    parts.append(f'<h2>Verdict</h2><div class="{v_cls}" id="verdict">'
                 f"T = <b>{_t('T', d['T'])}</b>, limited by <b>{num('limit', d['limit'], d['limit'])}</b>"
                 f" ({esc(d['limit_detail'])})"
                 + (f"; attainable rate {num('attainable_rate', rate, tflops(rate))}" if rate else "")
                 + ("" if feasible else "; <b>cannot run as written</b>: "
                    + "; ".join(esc(r) for r in d["infeasible_reasons"])) + "</div>")
    times = sorted(d["times"].items(), key=lambda kv: -kv[1])
    top = times[0][1] if times else 0
    parts.append("<p>Why: every roof and ceiling gives a time; the slowest sets T.</p>" + table(
        ["roof or ceiling", "time", ""],
        [[esc(k), _t(f"times.{k}", t),
          f'<span class="bar" style="width:{200 * t / top if top else 0:.1f}px"></span>']
         for k, t in times], right={1}, cls="times"))
    # W and Q
    e_rows = [["W", _b("W", d["W"]) + " FLOPs", f"{num('matmul_instructions', d['matmul_instructions'])} matmul instructions"],
              ["Q", _b("Q", d["Q"]) + " bytes",
               f"compulsory {_b('compulsory_Q', d['compulsory_Q'])} bytes; Q / compulsory = "
               + (num("Q_over_compulsory", d["Q_over_compulsory"]) if d["Q_over_compulsory"] is not None else "–")
               + (f"; lower bound {_b('lower_bound_Q', d['lower_bound_Q'])}" if d.get("lower_bound_Q") else "")],
              ["I = W / Q", (num("I", d["I"]) + " FLOPs/byte") if d["I"] is not None else "–",
               f"ridge P / BW = {num('ridge', d['ridge'])}"],
              ["P", num("P", d["P"], tflops(d["P"])), esc(d["dtype"])],
              ["BW", num("BW", d["BW"], f"{d['BW'] / 1e9:.4g} GB/s"), ""],
              ["T_best = max(W/P, Q/BW)", _t("T_best", d["T_best"]),
               f"W/P = {_t('T_compute', d['T_compute'])}, Q/BW = {_t('T_memory', d['T_memory'])}; "
               f"{num('bound', d['bound'], d['bound'])}-bound"],
              ["T_worst = W/P + Q/BW", _t("T_worst", d["T_worst"]), "no overlap"]]
    parts.append("<h2>Work and traffic</h2>" + table(["", "value", ""], e_rows, right={1}, cls="entitlement"))
    t_rows = [[esc(n), esc(t["role"]), _b(f"tensors.{n}.bytes", t["bytes"]),
               _b(f"tensors.{n}.read_bytes", t["read_bytes"]), _b(f"tensors.{n}.write_bytes", t["write_bytes"]),
               num(f"tensors.{n}.r", t["r"], f"{t['r']:.4g}") if t["r"] is not None else "–"]
              for n, t in d["tensors"].items()]
    parts.append(table(["tensor", "role", "size (bytes)", "read (bytes)", "written (bytes)", "r"],
                       t_rows, right={2, 3, 4, 5}, cls="tensors")
                 + '<p class="note">r: times each byte of the tensor crosses HBM (read bytes / size).</p>')
    parts.append(f'<h2>Roofline</h2><figure class="roofline">{roofline_svg}</figure>')
    # lower ceilings
    if "ceilings" in d:
        parts.append("<h2>Lower ceilings</h2>" + _ceilings_table(d["ceilings"], "ceilings")
                     + f"<p>binding Tensor Engine ceiling: {num('lowest_ceiling', d['lowest_ceiling'], str(d['lowest_ceiling']))}"
                     + (f"; {num('instruction_s', d['instruction_s'], fmt_time(d['instruction_s']))} per instruction"
                        if d.get("instruction_s") else "") + "</p>")
    if "kernels" in d:  # a program of several kernels: each one's counts and verdict
        parts.append("<h2>Kernels of the program</h2>" + table(
            ["kernel", "ops", "W (FLOPs)", "Q (bytes)", "T", "limit"],
            [[esc(k["kernel"]), esc(", ".join(k["ops"])), _b(f"kernels.{i}.W", k["W"]),
              _b(f"kernels.{i}.Q", k["Q"]), _t(f"kernels.{i}.T", k["T"]),
              num(f"kernels.{i}.limit", k["limit"], k["limit"])] for i, k in enumerate(d["kernels"])],
            right={2, 3, 4}, cls="kernels"))
        if d.get("intermediates"):
            parts.append(table(["intermediate", "bytes", "k (HBM crossings)", "fused", "spilled"],
                               [[esc(n), _b(f"intermediates.{n}.bytes", im["bytes"]),
                                 num(f"intermediates.{n}.k", im["k"], f"{im['k']:.4g}"),
                                 "yes" if im["fused"] else "no", "yes" if im["spilled"] else "no"]
                                for n, im in d["intermediates"].items()], right={1, 2}, cls="intermediates"))
    for name, cs in ceilings_of_stages:
        parts.append(f"<h2>Lower ceilings: kernel {esc(name)}</h2>"
                     + (_ceilings_table(cs, None) if cs else
                        '<p class="note">no matmul instructions: no Tensor Engine ceilings</p>'))
    # SBUF / PSUM
    s = d["sbuf"]
    unit = s["unit"]
    bufs = [[esc(n), _b(f"sbuf.largest_buffers.{n}", b)] for n, b in s["largest_buffers"].items()]
    parts.append("<h2>SBUF and PSUM</h2>" + table(["", "value"], [
        ["SBUF", f"{'fits' if s['fits'] else '<b>does not fit</b>'}: peak {_b('sbuf.peak', s['peak'])} of "
                 f"{_b('sbuf.capacity', s['capacity'])} {esc(unit)} ({esc(s['what'])})"],
        ["SBUF, whole", f"peak {_b('sbuf.peak_bytes', s['peak_bytes'])} of {_b('sbuf.capacity_bytes', s['capacity_bytes'])} bytes"],
        ["PSUM", _psum(d["psum"])]], cls="sbuf")
        + (f"<p>Largest SBUF buffers ({esc(unit)}):</p>" + table(["tensor", unit], bufs, right={1}, cls="buffers")
           if bufs else ""))
    # DMA
    for i, k in enumerate(dma):
        pre = f"dma.kernels.{i}"
        head = f"<h2>DMA transfers{': kernel ' + esc(k['stage']) if len(dma) > 1 else ''}</h2>"
        summary = (f"<p>{_b(pre + '.transfers', k['transfers'])} transfers, {_b(pre + '.bytes', k['bytes'])} bytes; "
                   + (f"T_dma = {_t(pre + '.T_dma', k['T_dma'])} at {k['dma_bw'] / 1e9:.4g} GB/s; " if k["T_dma"] else "")
                   + f"{_pct(pre + '.small_share', k['small_share'])} of the bytes in transfers below "
                   f"{k['small_threshold_bytes_per_partition']:,} bytes per partition.</p>")
        bands = table(["bytes per partition", "guidance", "transfers", "bytes"],
                      [[esc(b["band"]), esc(b["guidance"]), _b(f"{pre}.bands.{j}.transfers", b["transfers"]),
                        _b(f"{pre}.bands.{j}.bytes", b["bytes"])] for j, b in enumerate(k["bands"])],
                      right={2, 3}, cls="dma-bands")
        sizes = table(["bytes per partition", "transfers", "bytes"],
                      [[_b(f"{pre}.bytes_per_partition.{j}.bytes", x["bytes"]),
                        _b(f"{pre}.bytes_per_partition.{j}.transfers", x["transfers"]),
                        _b(f"{pre}.bytes_per_partition.{j}.total_bytes", x["total_bytes"])]
                       for j, x in enumerate(k["bytes_per_partition"])], right={0, 1, 2}, cls="dma-sizes")
        stm = table(["statement", "line", "transfers", "bytes"],
                    [[f"<code>{esc(x['statement'])}</code>", esc(x["line"]),
                      _b(f"{pre}.statements.{j}.transfers", x["transfers"]),
                      _b(f"{pre}.statements.{j}.bytes", x["bytes"])] for j, x in enumerate(k["statements"])],
                    right={2, 3}, cls="dma-statements")
        parts.append(head + summary + '<div class="grid2">' + bands + sizes + "</div>" + stm
                     + f'<p class="note">Bands: {esc(k["bands_source"])}.</p>')
    parts.append('<h2>Timeline</h2><div id="timeline">' + _timeline(d.get("timeline") or {}, timeline_figures or {})
                 + "</div>")
    m = d.get("measured")
    if m is not None:
        parts.append("<h2>Measured: the gap</h2>" + _gap_table(d, m)
                     + ("<pre>" + esc("\n".join(measured_lines)) + "</pre>" if measured_lines else ""))
    parts.append('<p class="note">Written by loopsim report; the numbers are those of '
                 "<code>loopsim entitle --json</code> and <code>loopsim dma --json</code> with the "
                 "same options.</p>")
    return page(f"loopsim report: {d['kernel']} on {d['hardware']}", "\n".join(parts))


def _timeline(tl: dict, figures: dict[str, str]) -> str:
    """The predicted timeline of each kernel (``entitle --json``'s ``timeline``): T against
    T_best and T_serial, instructions per engine, the gap's parts, and the picture."""
    if not tl:
        return '<p class="note">No timeline: the kernel was entitled with the roofline model alone.</p>'
    out = []
    for name, t in tl.items():
        k = f"timeline.{name}"
        head = f"<h3>kernel {esc(name)}</h3>" if len(tl) > 1 else ""
        rows = [["T predicted", _t(f"{k}.T", t["T"]), f"critical path mostly on {esc(t['critical'])}"],
                ["T_best (roofline)", _t(f"{k}.T_best", t["T_best"]), ""],
                ["T_serial (no overlap)", _t(f"{k}.T_serial", t["T_serial"]), ""],
                ["instructions", "", ", ".join(f"{esc(e)} {_b(f'{k}.instructions.{e}', n)}"
                                               for e, n in t["instructions"].items())]]
        rows += [[f"&nbsp;&nbsp;gap: {esc(c.replace('_', ' '))}", _t(f"{k}.gap.{c}", v), ""]
                 for c, v in (t.get("gap") or {}).items()]
        if not t.get("exact", True):
            rows.append(["", "", "extrapolated from runs of the nest cut to a few iterations"])
        out.append(head + table(["", "time", ""], rows, right={1}, cls="timeline")
                   + (f'<figure class="timeline">{figures[name]}</figure>' if name in figures else ""))
    return "".join(out)


def _ceilings_table(cs: list[dict], key: str | None) -> str:
    def k(i, f):
        return f"{key}.{i}.{f}" if key else None

    def n(i, f, v, text):
        return num(k(i, f), v, text) if key else esc(text)

    rows = [[esc(c["name"]), n(i, "factor", c["factor"], f"{c['factor']:.4g}") if c["factor"] is not None else "–",
             n(i, "P", c["P"], tflops(c["P"])), n(i, "T", c["T"], fmt_time(c["T"])),
             esc(c["explanation"]) + (" <b>ASSUMED</b>" if c.get("assumed") else "")]
            for i, c in enumerate(cs)]
    return table(["ceiling", "factor of P", "rate", "time", "why"], rows, right={1, 2, 3}, cls="ceilings")


def _psum(p: dict) -> str:
    if "kernels" in p:
        return "; ".join(f"{esc(k)}: {esc(v['verdict'])}" for k, v in p["kernels"].items())
    out = esc(p["verdict"]) + f" ({_b('psum.needed_banks', p['needed_banks'])} of {_b('psum.banks', p['banks'])} banks)"
    if p.get("evacuation_engine"):
        out += (f"; evacuation PSUM → SBUF on the {esc(p['evacuation_engine'])} engine: "
                f"{_b('psum.evacuated_elements', p['evacuated_elements'])} elements, "
                f"{_t('psum.T_evacuate', p['T_evacuate'])}")
    return out


def _gap_table(d: dict, m: dict) -> str:
    """T_best (roofs) -> T predicted (every roof and ceiling) -> T_measured, and the gap split into
    its causes as the measured model gives them (``measured.gap_table``)."""
    T_best, Tp, Tm, gap = m["T_best"], m["T_predicted"], m["T"], m["gap"]
    share = (lambda x: f" ({x / gap:.0%} of the gap)") if gap > 0 else (lambda x: "")
    rows = [["T_best = max(W/P, Q/BW)", _t("measured.T_best", T_best), "", "the roofline's entitlement"],
            ["T predicted (the verdict)", _t("measured.T_predicted", Tp), fmt_time(Tp - T_best) + share(Tp - T_best),
             f"explained by the model: {esc(m['predicted_limit'])} binds"],
            [f"T_measured ({esc(m.get('T_from', 'time'))})", _t("measured.T", Tm), fmt_time(Tm - Tp) + share(Tm - Tp),
             "measured against predicted"],
            ["gap = T_measured − T_best", _t("measured.gap", gap), "", ""]]
    rows += [[f"&nbsp;&nbsp;{esc(g['cause'])}", _t(f"measured.gap_table.{i}.seconds", g["seconds"]),
              share(g["seconds"]).strip(" ()"), esc(g.get("note", ""))]
             for i, g in enumerate(m.get("gap_table", []))]
    rows += [["fraction of entitlement", _pct("measured.fraction_of_entitlement", m["fraction_of_entitlement"]), "", "T_best / T_measured"],
             ["MFU = W / T_measured / P", _pct("measured.MFU", m["MFU"]), "", ""],
             ["achieved BW = Q / T_measured", num("measured.achieved_BW", m["achieved_BW"], f"{m['achieved_BW'] / 1e9:.4g} GB/s"),
              "", _pct("measured.BW_share", m["BW_share"]) + " of BW"]]
    rows += [[esc(x["what"]), "", "", esc(x["line"])] for x in m["disagreements"]]
    return table(["", "time", "share", "what it means"], rows, right={1, 2}, cls="gap")
