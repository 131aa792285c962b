"""``loopsim list``: every bundled spec and sheet on one line, with its key numbers."""

import json

from loopsim.targets import hardware
from loopsim.frontends import spec
from loopsim.cli.main import main


def test_list_names_every_bundled_spec_and_sheet_once(capsys):
    assert main(["list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    names = [ln.split()[0] for ln in lines if ln.startswith("  ")]
    assert names == spec.bundled_names() + hardware.names()
    (mm,) = [ln for ln in lines if ln.split()[:1] == ["matmul"]]
    assert "M=1024 N=1024 K=1024 TM=128 TK=128 TN=512" in mm
    (t2,) = [ln for ln in lines if ln.split()[:1] == ["trn2-core"]]
    # 128 x 128 PEs x 2 FLOPs x 2.4 GHz = 78.64 TFLOP/s; 3 TB/s / 8 cores; 128 partitions x 224 KiB
    assert "P 78.64 TFLOP/s" in t2 and "BW 375 GB/s" in t2 and "SBUF 28 MiB" in t2


def test_list_json(capsys):
    assert main(["list", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    specs = {s["name"]: s for s in d["specs"]}
    assert specs["mlp_unfused"]["stages"] == ["up", "act", "down"]
    assert specs["matmul"]["stages"] == [] and specs["matmul"]["tensors"] == ["A", "B", "C"]
    hw = {h["name"]: h for h in d["hardware"]}
    assert hw["trn2-core"]["P_bf16"] == 128 * 128 * 2 * 2_400_000_000
    assert hw["trn2-core"]["sbuf_bytes"] == 128 * 224 * 1024 and hw["toy"]["illustrative"]
