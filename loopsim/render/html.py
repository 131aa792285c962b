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
td.r, th.r { text-align: right; }
.verdict { font-size: 16px; padding: 8px 12px; border-left: 4px solid var(--busy); background: #f3f7fb; }
.verdict.bad { border-color: var(--bad); background: #fbf1f0; }
.note { color: var(--mute); font-size: 12px; }
figure { margin: 8px 0; } figure svg { max-width: 100%; height: auto; }
.controls button { font: inherit; padding: 3px 10px; margin-right: 4px; }
.controls input[type=range] { width: 420px; vertical-align: middle; }
.grid2 { display: flex; gap: 18px; flex-wrap: wrap; align-items: flex-start; }
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


def _ns(s: float) -> str:
    return f"{s * 1e9:.3g} ns"


# ---------------------------------------------------------------------------------------------
# the clockwork

_CLOCKWORK_JS = r"""
const CW = JSON.parse(document.getElementById('cw-data').textContent);
const SVGNS = 'http://www.w3.org/2000/svg';
const CELL = 8;                                  // PEs per drawn cell, each way
const NR = Math.ceil(CW.pe_rows / CELL), NC = Math.ceil(CW.pe_cols / CELL);
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
label(X0, Y0 - 22, `PE array: ${CW.pe_rows} rows (K) × ${CW.pe_cols} columns (M); a square is ${CELL}×${CELL} PEs`);
label(X0, Y0 - 8, `stationary tile ${CW.K}×${CW.M} (dashed): rows 0–${CW.K - 1}, columns 0–${CW.M - 1}`);
// the moving tile in SBUF, streaming in from the left, one column (K elements) per cycle
const MW = 120, MY = Y0, MH = NR * PX;
label(4, Y0 - 8, `moving tile ${CW.K}×${CW.N}`);
el('rect', {x: 4, y: MY, width: MW, height: MH * CW.K / CW.pe_rows, fill: '#cfe0f5', id: 'moving'});
const movingDone = el('rect', {x: 4, y: MY, width: 0, height: MH * CW.K / CW.pe_rows, fill: '#9bb7d9'});
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
      for (let ii = Math.floor(g / cpi); ii >= 0 && ii > Math.floor(g / cpi) - 8; ii--) {
        if (ii >= CW.count) continue;
        const j = Math.floor((g - ii * cpi - k - m) / CW.slowdown);
        if (j >= 0 && j < CW.N) { fill = colors[ii % colors.length]; break; }
      }
    }
    cell.setAttribute('fill', fill);
  }
  const streamed = done ? CW.N : Math.min(CW.N, Math.floor(t / CW.slowdown));   // columns issued
  movingDone.setAttribute('width', MW * streamed / CW.N);
  psumBar.setAttribute('width', NC * PX * (CW.M / CW.pe_cols) * streamed / CW.N);
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
    assumed = " (ASSUMED on this sheet)" if cw.mm_init_assumed else ""
    rows = [
        ["peak P (bf16, one core)",
         f"{num('pe_rows', cw.pe_rows)} × {num('pe_cols', cw.pe_cols)} PEs × 2 FLOP × "
         f"{num('clock_hz', cw.clock_hz, f'{cw.clock_hz / 1e9:g} GHz')}",
         num("P", cw.P, tflops(cw.P))],
        [f"dtype {esc(cw.dtype)}", num('factors.dtype', f['dtype'], f"{f['dtype']:g}") + " × P"
         + (f"; each instruction takes {num('slowdown', cw.slowdown)}× the cycles" if cw.slowdown > 1 else ""),
         num("P_dtype", cw.P_dtype, tflops(cw.P_dtype))],
        ["rows used (partition fill)",
         f"K = {num('K', cw.K)} of {num('rows_eff', cw.rows_eff)} PE rows",
         num("factors.partition_fill", f["partition_fill"])],
        ["columns used (column fill)", f"M = {num('M', cw.M)} of {cw.pe_cols} PE columns",
         num("factors.column_fill", f["column_fill"])],
        ["cycles per instruction",
         f"max(N = {num('N', cw.N)}, MM_INIT = {num('mm_init_cycles', cw.mm_init_cycles)}{assumed})"
         f" × {cw.slowdown}", num("cycles_per_instruction", cw.cycles_per_instruction)],
        ["issue rate", f"N / max(N, MM_INIT)",
         num("factors.issue_rate", f["issue_rate"])],
        ["time per instruction", f"{cw.cycles_per_instruction:,} cycles × {cyc_ns:.4g} ns",
         num("instruction_s", cw.instruction_s, _ns(cw.instruction_s))],
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
<div class="keep">
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
columns, orange cycles wait out MM_INIT. The wavefront is drawn with one cycle of skew per PE row
and column (a systolic array's fill, overlapped with the previous instruction); the model charges
only the issue interval.</p>
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


def write(path: str, text: str, flag: str = "-o") -> None:
    """Write a page whole or not at all; a path not ending in .html/.htm is refused."""
    from loopsim.base.errors import InputError
    from loopsim.base.outfile import write_atomic

    if not path.lower().endswith((".html", ".htm")):
        raise InputError(f"{flag} {path}: a page is written as .html")

    def put(tmp: str) -> None:
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(text)

    write_atomic(path, put, flag)
