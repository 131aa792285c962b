"""A kernel back to a spec file: TOML that reads like one written by hand.

The parameters keep their names and expressions (``BLOCK_M = "TILE_M * TILES_IN_BLOCK_M"``), the
tensors their shapes as written, the nest its loop headers as written (``for mb in M by BM:``) in
the kernel's order, with each load, matmul and store on the line of its loop level. A program of
ops keeps its text, with new parameter values.
"""

from __future__ import annotations

import json
import re

from loopsim.ir.kernel import Kernel, Loop, Node
from loopsim.analyses.search.space import Template


def _toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, str):
        return json.dumps(v)  # a basic TOML string: JSON escapes are TOML escapes
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{k} = {_toml_value(x)}" for k, x in v.items()) + " }"
    raise TypeError(f"cannot write {v!r} as TOML")


def _nest_lines(body: tuple[Node, ...], headers: dict, indent: int) -> list[str]:
    """Lines of the nest; ``headers`` maps (variable, extent, step) to the texts as written."""
    out = []
    pad = "  " * indent
    for node in body:
        if isinstance(node, Loop):
            e, s = headers.get((node.var, node.extent, node.step), (str(node.extent), str(node.step)))
            out.append(f"{pad}for {node.var} in {e} by {s}:")
            out += _nest_lines(node.body, headers, indent + 1)
        else:
            out.append(f"{pad}{node}")
    return out


def _params(tpl: Template, values: dict[str, int]) -> list[str]:
    raw = dict(tpl.raw)
    raw.update(values)
    width = max((len(n) for n in raw), default=0)
    vw = max((len(_toml_value(v)) for v in raw.values()), default=0)
    lines = []
    for n, v in raw.items():
        text = _toml_value(v)
        lines.append(f"{n:<{width}} = {text:<{vw}}   # searched" if n in values else
                     f"{n:<{width}} = {text}")
    return lines


def write_spec(tpl: Template, values: dict[str, int], kernel: Kernel | None, *,
               header: str = "", name: str | None = None, program=None) -> str:
    """Spec text for ``kernel`` (the template's nest at ``values``, arranged); ``kernel`` None (a
    program of ops): the template's own text with ``values`` in its [params] and, given
    ``program`` (the program at those values with its loads placed), each [nest.KERNEL] body whose
    loads moved written again. ``name``: the written kernel's name (default the template's)."""
    head = "".join(f"# {line}\n" for line in header.splitlines())
    if kernel is None:
        text = _replace_params(tpl.spec.text, {**dict(tpl.sets), **values})  # --set too
        if program is not None:
            text = _replace_bodies(tpl, text, program)
        return head + _rename(text, name)
    data = tpl.spec.data
    k = data["kernel"]
    lines = ["[kernel]", f"name = {_toml_value(name or k.get('name', kernel.name))}"]
    about = str(k.get("about", "")).strip()
    lines.append(f'about = """{about}"""' if about else 'about = ""')
    lines += ["", "[params]", *_params(tpl, values), "", "[tensors]"]
    for name, t in data["tensors"].items():
        lines.append(f"{name} = {_toml_value(t)}")
    from loopsim.analyses.search.space import loop_sizes, resolve

    sizes = loop_sizes(tpl, resolve(tpl, values)) or []
    headers = {size: (e, s) for size, (_, e, s) in zip(sizes, tpl.loop_text)}
    lines += ["", "[nest]", "body = '''", *_nest_lines(kernel.body, headers, 0), "'''"]
    for table in ("lnc", "parallel", "check"):
        if isinstance(data.get(table), dict):
            lines += ["", f"[{table}]"] + [f"{key} = {_toml_value(v)}" for key, v in data[table].items()]
    return head + "\n".join(lines) + "\n"


_KEY = re.compile(r"^(\s*)([A-Za-z_]\w*)(\s*=\s*)([^#\n]*?)(\s*(#.*)?)$")


def _replace_params(text: str, values: dict[str, int]) -> str:
    """``text`` with the [params] table's values for ``values``' names replaced."""
    out, in_params = [], False
    for line in text.splitlines():
        s = line.strip()
        if s.startswith("["):
            in_params = s.split("#", 1)[0].strip() == "[params]"
        m = _KEY.match(line) if in_params else None
        if m and m.group(2) in values:
            line = f"{m.group(1)}{m.group(2)}{m.group(3)}{values[m.group(2)]}{m.group(5)}"
        out.append(line)
    return "\n".join(out) + "\n"


_NAME = re.compile(r"^(\s*name\s*=\s*)(\"[^\"]*\"|'[^']*')(.*)$")


def _rename(text: str, name: str | None) -> str:
    """``text`` with its [kernel] table's ``name`` set to ``name`` (None: unchanged)."""
    if name is None:
        return text
    out, table = [], ""
    for line in text.splitlines():
        s = line.split("#", 1)[0].strip()
        if s.startswith("["):
            table = s
        m = _NAME.match(line) if table == "[kernel]" else None
        out.append(f"{m.group(1)}{_toml_value(name)}{m.group(3)}" if m else line)
    return "\n".join(out) + "\n"


def _replace_bodies(tpl: Template, text: str, program) -> str:
    """``text`` with the body of every [nest.KERNEL] table whose kernel in ``program`` differs from
    the template's written again from that kernel (loop headers as written, by their order)."""
    base = {st.name: st.kernel.body for st in tpl.program.stages}
    texts = dict(tpl.stage_text)
    for st in program.stages:
        if st.name not in texts or _same_shape(base.get(st.name), st.kernel.body):
            continue
        written = texts[st.name]
        by_var = {v: (e, s) for v, e, s in written}
        headers = iter(written)
        distinct = len(by_var) == len(written)   # a reordered nest: its headers by variable

        def lines(body, indent):
            out = []
            for node in body:
                if isinstance(node, Loop):
                    _, e, s = next(headers)
                    if distinct:
                        e, s = by_var[node.var]
                    out.append(f"{'  ' * indent}for {node.var} in {e} by {s}:")
                    out += lines(node.body, indent + 1)
                else:
                    out.append(f"{'  ' * indent}{node}")
            return out

        body = "\n".join(lines(st.kernel.body, 0))
        pat = re.compile(r"(^\[nest\." + re.escape(st.name) + r"\][^\[]*?body\s*=\s*''')(.*?)(''')",
                         re.S | re.M)
        text = pat.sub(lambda m: m.group(1) + "\n" + body + "\n" + m.group(3), text, count=1)
    return text


def _same_shape(a, b) -> bool:
    """Whether two nests hold the same statements in the same places (loop sizes aside)."""
    if a is None or len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if isinstance(x, Loop) != isinstance(y, Loop):
            return False
        if isinstance(x, Loop):
            if x.var != y.var or not _same_shape(x.body, y.body):
                return False
        elif str(x) != str(y):
            return False
    return True
