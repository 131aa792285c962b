"""Loops bounded by NeuronCore registers (tests/nki_kernels/dynamic_loops.py, kernels written for
loopsim): without a stated value the trace is refused in one line naming the call, its line and
the option; with ``--register-value`` the loop runs that many times, Q and W against a hand count,
the result noted ASSUMED in text and JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from loopsim.base.errors import InputError, SpecError
from loopsim.cli.main import main
from loopsim.frontends.nki import registers
from loopsim.frontends.nki.load import load_kernel, parse_options
from loopsim.model import pipeline
from loopsim.targets import hardware

KERNELS = Path(__file__).parent / "nki_kernels" / "dynamic_loops.py"
REF = f"{KERNELS}"
TRN2 = hardware.load("trn2-core")
ADD = {"a": ((512, 1024), "bf16"), "b": ((512, 1024), "bf16"), "n_tiles": ((1, 1), "int32")}
ADD_CLI = ["--arg", "a=512x1024", "--arg", "b=512x1024", "--arg", "n_tiles=1x1:int32"]
#: one 128 x 512 bf16 tile
TILE = 128 * 512 * 2


def line_of(text: str) -> int:
    """The line of the kernel file holding ``text`` (so a test names the line it checks)."""
    return next(i for i, ln in enumerate(KERNELS.read_text().splitlines(), 1) if text in ln)


def traced(func, args, *stated, **kw):
    return load_kernel(str(KERNELS), func, args=args, registers=registers.parse(stated), **kw)


def counts(kernel):
    return pipeline.analyze_kernel(kernel, TRN2).counts


def test_without_a_value_the_dynamic_loop_is_refused_naming_the_option(capsys):
    loop, load = line_of("nl.dynamic_range(first, reg, 1)"), line_of("nisa.register_load(reg, count)")
    with pytest.raises(SpecError) as e:
        traced("tiles_from_count", ADD)
    msg = str(e.value)
    assert "\n" not in msg
    assert f"dynamic_loops.py:{loop}: kernel tiles_from_count: nl.dynamic_range(0, <register>, 1): " \
           f"its stop is the register read at {KERNELS}:{load}" in msg
    assert f"--register-value N (every register) or --register-value dynamic_loops.py:{load}=N" in msg
    # the command line: one line on stderr, a non-zero exit
    assert main(["entitle", f"{REF}::tiles_from_count", *ADD_CLI, "-H", "trn2-core"]) != 0
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("loopsim: error: ") and "--register-value" in err


def test_stated_value_runs_the_loop_that_many_times_hand_count():
    k = traced("tiles_from_count", ADD, "3")
    c = counts(k)
    # 3 iterations x 2 column tiles of 128 x 512 bf16: a and b each read 6 tiles, out written 6;
    # n_tiles 1 int32 read once
    assert c.Q == 3 * 6 * TILE + 4 and c.flops == 0
    # a's rows are chosen by an SBUF counter (scalar_offset=): a tensor of their own, a_gathered
    assert c.tensor_map["a_gathered"].read_bytes == 6 * TILE
    assert c.tensor_map["out"].write_bytes == 6 * TILE
    (note,) = [n for n in k.notes if "dynamic_range" in n]
    assert f"dynamic_loops.py:{line_of('nl.dynamic_range(first, reg, 1)')}: nl.dynamic_range runs 3 " \
           "iterations" in note and "ASSUMED: the register's value given by the user, " \
           "--register-value 3" in note


def test_static_start_to_the_register_runs_stop_minus_start():
    load = line_of("nisa.register_load(reg, count)")
    # first = 2, the register holds 7: tiles 2 .. 6, 5 iterations of 2 column tiles, 3 tensors
    k = traced("tiles_from_count", ADD, f"dynamic_loops.py:{load}=7", kwargs={"first": 2})
    assert counts(k).Q == 5 * 2 * 3 * TILE + 4
    assert any("runs 5 iterations" in n for n in k.notes)


def test_a_site_value_comes_before_the_value_for_all():
    load = line_of("nisa.register_load(reg, count)")
    k = traced("tiles_from_count", ADD, "9", f"nki_kernels/dynamic_loops.py:{load}=2")
    assert counts(k).Q == 2 * 6 * TILE + 4


@settings(max_examples=12, deadline=None)
@given(n=st.integers(0, 12), first=st.integers(0, 3))
def test_Q_grows_linearly_with_the_stated_trip_count(n, first):
    # the loop body does not depend on the trip count: Q = trips x (the body's 6 tiles) + 4 B
    k = traced("tiles_from_count", ADD, str(n), kwargs={"first": first})
    assert counts(k).Q == max(0, n - first) * 6 * TILE + 4


@pytest.mark.parametrize("blocks", [1, 3, 8])
def test_matmul_blocks_up_to_the_register_hand_count(blocks):
    k = traced("static_then_dynamic_blocks",
               {"xT": ((128, 128 * blocks), "bf16"), "w": ((128, 512), "bf16"), "used": ((9,), "int32")},
               str(blocks), kwargs={"n_static": 0})
    c = counts(k)
    # per block one matmul K = 128, M = 128, N = 512: 2 K M N FLOPs
    assert c.flops == blocks * 2 * 128 * 128 * 512
    # xT read once (128 x 128 blocks bf16), w once, the 9 flags (int32), out written once
    assert c.Q == 128 * 128 * blocks * 2 + 128 * 512 * 2 + 9 * 4 + 128 * blocks * 512 * 2


def test_registers_set_by_register_move_are_exact():
    k = traced("moved_bounds", {"x": ((1024, 256), "bf16")})
    # stop 1024 // 128 = 8 moved through a second register, step 2: i = 0, 2, 4, 6; each a
    # 128 x 256 bf16 tile read and written
    assert counts(k).Q == 4 * 2 * 128 * 256 * 2
    assert not any("dynamic_range" in n for n in k.notes)  # nothing assumed


def test_register_alloc_of_a_tensor_is_read_at_run_time():
    with pytest.raises(SpecError, match=r"its step is the register read at .*dynamic_loops.py:"
                                        rf"{line_of('step = nisa.register_alloc(one)')}, a value known"):
        traced("moved_bounds", {"x": ((1024, 256), "bf16")}, kwargs={"step_from_tensor": True})
    k = traced("moved_bounds", {"x": ((1024, 256), "bf16")}, "3", kwargs={"step_from_tensor": True})
    # step 3 over 0 .. 8: i = 0, 3, 6
    assert counts(k).Q == 3 * 2 * 128 * 256 * 2
    assert any("its step is the register read at" in n and "ASSUMED" in n for n in k.notes)


@pytest.mark.parametrize("func, args, stated, match", [
    ("while_on_register", {"x": ((128, 256), "bf16"), "go": ((1, 1), "int32")}, ("1",),
     r"dynamic_loops.py:\d+: kernel while_on_register: a while loop on the register read at "
     r".*dynamic_loops.py:\d+: with the value stated \(1\) it never ends"),
    ("while_on_register", {"x": ((128, 256), "bf16"), "go": ((1, 1), "int32")}, (),
     r"a test of a register \(while reg: or if reg:\): it is the register read at .* known only "
     r"at run time"),
    ("unset_register", {"x": ((128, 256), "bf16")}, (),
     r"its stop is the register allocated at .*dynamic_loops.py:\d+, never written"),
    ("moved_bounds", {"x": ((1024, 256), "bf16")}, ("dynamic_loops.py:3=4",),
     r"^--register-value dynamic_loops.py:3=4: the trace of .* read no register at "
     r"dynamic_loops.py:3"),
])
def test_registers_used_otherwise_are_refused_in_one_line(func, args, stated, match):
    with pytest.raises(SpecError, match=match) as e:
        traced(func, args, *stated)
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("text, match", [
    ("x", r"--register-value 'x' must look like N or FILE:LINE=N"),
    ("k.py:12", r"must look like N or FILE:LINE=N"),
    ("2147483648", r"2147483648 does not fit a register \(32-bit"),
    ("9" * 5000, r"--register-value=<5,000 digits> exceeds the largest integer"),
    ("k.py:" + "9" * 5000 + "=1", r"--register-value line=<5,000 digits> exceeds the largest integer"),
])
def test_bad_register_values_are_refused(text, match):
    with pytest.raises(SpecError, match=match):
        parse_options(registers=[text])
    with pytest.raises(SpecError, match="every register is given twice"):
        parse_options(registers=["1", "2"])


def test_site_keys_match_a_tail_of_the_path():
    s = registers.Stated(4, "nki_kernels/dynamic_loops.py", 10)
    assert s.matches(str(KERNELS), 10) and not s.matches(str(KERNELS), 11)
    assert not registers.Stated(4, "loops.py", 10).matches(str(KERNELS), 10)  # whole names only
    assert registers.Stated(4).matches("anything.py", 99)


def test_cli_notes_the_assumed_value_in_text_and_json(capsys):
    load = line_of("nisa.register_load(reg, count)")
    base = ["entitle", f"{REF}::tiles_from_count", *ADD_CLI, "-H", "trn2-core",
            "--register-value", f"dynamic_loops.py:{load}=2"]
    assert main(base) == 0
    text = capsys.readouterr().out
    assert f"note: {KERNELS}:{line_of('nl.dynamic_range(first, reg, 1)')}: nl.dynamic_range runs 2 " \
           "iterations" in text and f"Q{' ' * 30}{2 * 6 * TILE + 4:,} bytes" in text
    assert main(base + ["--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["Q"] == 2 * 6 * TILE + 4
    assert any("runs 2 iterations" in n and "ASSUMED" in n for n in d["ceiling_notes"])


@pytest.mark.parametrize("rows", [128, 200, 1024])
def test_hbm_to_hbm_dma_counts_a_read_and_a_write(rows):
    k = traced("store_then_fence", {"x": ((rows, 512), "bf16")})
    c = counts(k)
    # x read once into SBUF, stored to out; the fence reads out and writes it again (staged in
    # 128-row pieces, the last one ragged at 200 rows)
    b = rows * 512 * 2
    assert c.tensor_map["x"].read_bytes == b
    assert c.tensor_map["out"].read_bytes == b and c.tensor_map["out"].write_bytes == 2 * b
    assert any("HBM -> HBM DMA" in n and "ASSUMED" in n for n in k.notes)


def test_python_api_takes_the_register_values():
    import loopsim

    a = loopsim.analyze(f"{REF}::tiles_from_count", "trn2-core", registers=["4"],
                        args={"a": "512x1024", "b": "512x1024", "n_tiles": "1x1:int32"})
    assert a.Q == 4 * 6 * TILE + 4
    with pytest.raises(InputError, match="registers must be a list"):
        loopsim.analyze(f"{REF}::tiles_from_count", "trn2-core", registers="4",
                        args={"a": "512x1024", "b": "512x1024", "n_tiles": "1x1:int32"})


def test_a_batch_request_takes_the_register_values():
    from loopsim.analyses import batch

    s = batch.Session(execute_kernels=True)
    req = {"spec": f"{REF}::tiles_from_count", "hardware": "trn2-core", "registers": ["2"],
           "args": {"a": "512x1024", "b": "512x1024", "n_tiles": "1x1:int32"}}
    assert batch.evaluate(s, req)["Q"] == 2 * 6 * TILE + 4
    assert "--register-value" in batch.evaluate(s, {**req, "registers": []})["error"]


def test_a_while_on_a_register_follows_the_values_stated_per_line():
    lines = [i for i, ln in enumerate(KERNELS.read_text().splitlines(), 1)
             if "nisa.register_load(reg, flag)" in ln]
    first, again = lines
    args = {"x": ((128, 256), "bf16"), "go": ((1, 1), "int32")}
    k = traced("while_on_register", args, f"dynamic_loops.py:{first}=1", f"dynamic_loops.py:{again}=0")
    # the body once: x read (128 x 256 bf16), out written, and the flag's 4 bytes
    assert counts(k).Q == 2 * 128 * 256 * 2 + 4
    assert [("true" in n, "false" in n) for n in k.notes if "a test of" in n] == [(True, False), (False, True)]
    # the first value 0: the body never runs
    k = traced("while_on_register", args, f"dynamic_loops.py:{first}=0")
    assert counts(k).Q == 4
    # ... and a value for the line in the body the trace never reaches is refused
    with pytest.raises(SpecError, match=f"dynamic_loops.py:{again}=0: the trace of .* read no register"):
        traced("while_on_register", args, f"dynamic_loops.py:{first}=0", f"dynamic_loops.py:{again}=0")
