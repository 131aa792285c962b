"""The one NAME=values grammar (loopsim.base.values): worked examples and properties."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from loopsim.base.errors import InputError
from loopsim.base.values import listed, parse, parse_all


@pytest.mark.parametrize("item,want", [
    ("TN=128,256,128", ("TN", (128, 256))),               # repeats dropped, order kept
    ("M=1..4", ("M", (1, 2, 3, 4))),
    ("K=64..200:64", ("K", (64, 128, 192))),              # 256 is past HI
    ("TM=16..100:x2", ("TM", (16, 32, 64))),              # 128 is past HI
    ("TM=3..81:x3", ("TM", (3, 9, 27, 81))),
    ("B=1_024", ("B", (1024,))),
])
def test_worked_examples(item, want):
    name, vals = parse(item, "--vary")
    assert (name, tuple(vals)) == want


@pytest.mark.parametrize("item,msg", [
    ("TN", r"--vary TN: expected NAME=INT,INT,\.\.\. or NAME=LO\.\.HI"),
    ("TN=12a", r"--vary TN=12a: '12a' is not an integer"),
    ("TN=0,4", r"--vary TN=0,4: values must be > 0 \(0 is not\)"),
    ("TN=9..3", r"--vary TN=9..3: the range is empty \(9 > 3\)"),
    ("TN=0..3", r"values must be > 0 \(0 is not\)"),
    ("TN=1..8:0", r"the step must be > 0, got 0"),
    ("TN=1..8:x1", r"the factor after x must be >= 2, got 1"),
])
def test_bad_items(item, msg):
    with pytest.raises(InputError, match=msg):
        parse(item, "--vary")


def test_a_name_twice_and_a_list_too_long():
    with pytest.raises(InputError, match="--space TN: given twice"):
        parse_all(["TN=1,2", "TN=3"], "--space")
    _, huge = parse("M=1..10000000000000000000", "--vary")  # checked by its ends, not walked
    with pytest.raises(InputError, match="at most 100,000 can be listed"):
        listed(huge, "--vary", "M")


@given(st.integers(1, 10**6), st.integers(0, 10**6), st.integers(1, 1000))
def test_a_stepped_range_is_python_s_range(lo, extra, step):
    _, vals = parse(f"X={lo}..{lo + extra}:{step}", "--vary")
    assert list(vals) == list(range(lo, lo + extra + 1, step))


@given(st.integers(1, 10**6), st.integers(0, 10**9), st.integers(2, 5))
def test_a_geometric_range_multiplies_from_lo(lo, extra, f):
    _, vals = parse(f"X={lo}..{lo + extra}:x{f}", "--vary")
    assert vals[0] == lo and all(b == a * f for a, b in zip(vals, vals[1:]))
    assert vals[-1] <= lo + extra < vals[-1] * f
