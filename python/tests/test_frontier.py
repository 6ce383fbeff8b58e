"""heterps.frontier: the cheapest plan per solver and throughput target."""

import json

import pytest

import heterps.frontier as frontier
from conftest import CLUSTER, ONNX_INPUTS, ROOT

CTR = ONNX_INPUTS / "torch-ctr.onnx"


def test_exact_solver_is_cheapest_and_monotone():
    targets = [3e4, 3e5, 3e6]
    rows = frontier.sweep(CTR, CLUSTER, targets,
                          ["dp", "cpu-only", "gpu-only"], loss="bce",
                          batch=512)
    assert len(rows) == 9
    by = {(r["solver"], r["target"]): r for r in rows}
    costs = []
    for target in targets:
        dp = by[("dp", target)]
        assert dp["feasible"], dp
        assert dp["throughput"] >= target
        costs.append(dp["job_cost"])
        # dp is exact over every placement, the single-kind ones included.
        for other in ("cpu-only", "gpu-only"):
            row = by[(other, target)]
            if row["feasible"]:
                assert dp["job_cost"] <= row["job_cost"] * (1 + 1e-9)
                assert row["mix"] == other.split("-")[0]
    # A higher target never makes the cheapest plan cheaper.
    assert costs == sorted(costs)
    # At 3M samples/s the CPU types alone fall short.
    assert not by[("cpu-only", 3e6)]["feasible"]
    assert "cannot be met" in by[("cpu-only", 3e6)]["error"]


def test_command_line_writes_table_plot_and_json(tmp_path, capsys):
    frontier.main([str(CTR), f"--cluster={CLUSTER}", "--loss=bce",
                   "--throughputs=1e4,1e6", "--solvers=dp,gpu-only",
                   f"--plot={tmp_path / 'f.png'}",
                   f"--json={tmp_path / 'f.json'}"])
    out = capsys.readouterr().out
    assert out.splitlines()[0].split()[:3] == ["solver", "target/s",
                                               "predicted/s"]
    assert len(out.splitlines()) == 1 + 4 + 1
    assert (tmp_path / "f.png").read_bytes()[:4] == b"\x89PNG"
    rows = json.loads((tmp_path / "f.json").read_text())
    assert [r["solver"] for r in rows] == ["dp", "dp", "gpu-only", "gpu-only"]


def test_throughput_ranges():
    assert frontier.parse_throughputs("1e3:1e5:3") == pytest.approx(
        [1e3, 1e4, 1e5])
    assert frontier.parse_throughputs("5,7") == [5.0, 7.0]
    for bad in ("1e5:1e3:3", "1:2", "0,5", "1:10:1", "1e4:inf:3", "abc",
                "1:x:3"):
        with pytest.raises(ValueError):
            frontier.parse_throughputs(bad)


def test_command_line_mistakes(tmp_path):
    with pytest.raises(SystemExit) as exit_info:
        frontier.main([str(CTR), f"--cluster={CLUSTER}",
                       "--throughputs=10:1:3"])
    assert exit_info.value.code == 2
    with pytest.raises(SystemExit) as exit_info:
        frontier.main([str(CTR), f"--cluster={CLUSTER}", "--plot=f.gif"])
    assert exit_info.value.code == 2
    # The same error at every target is the model's, and said as such.
    with pytest.raises(SystemExit, match="frontier: .*cannot open ONNX model"):
        frontier.main([str(tmp_path / "missing.onnx"), f"--cluster={CLUSTER}",
                       "--throughputs=1e4,1e5", "--solvers=dp"])
    with pytest.raises(SystemExit, match="no target could be met"):
        frontier.main([str(CTR), f"--cluster={CLUSTER}", "--loss=bce",
                       "--throughputs=1e11,1e12", "--solvers=dp"])
    # Unknown solvers, bad numbers and unwritable outputs are usage errors
    # before the sweep (a misspelled solver was an "infeasible" row).
    for args in (["--solvers=dp,magic"], ["--solvers=,"], ["--batch=0"],
                 [f"--json={tmp_path / 'no' / 'f.json'}"]):
        with pytest.raises(SystemExit) as exit_info:
            frontier.main([str(CTR), f"--cluster={CLUSTER}", "--loss=bce",
                           "--throughputs=1e4"] + args)
        assert exit_info.value.code == 2, args
    # A solver that has no plan on the cluster is an infeasible row: the
    # default solvers on a cluster without GPUs.
    rows = frontier.sweep(CTR, ROOT / "examples" / "clusters" / "local.json",
                          [1e4], ["dp", "gpu-only"], loss="bce")
    assert [r["feasible"] for r in rows] == [True, False]
    assert "gpu-only: the cluster has no gpu" in rows[1]["error"]
    # An option that does not compile is raised, not an infeasible row.
    with pytest.raises(TypeError, match="solvers must be a list"):
        frontier.sweep(CTR, CLUSTER, [1e5], "dp")
    with pytest.raises(ValueError, match="unknown solver 'dpp'"):
        frontier.sweep(CTR, CLUSTER, [1e5], ["dpp"])
    with pytest.raises(ValueError, match="unknown optimizer 'adamw'"):
        frontier.sweep(CTR, CLUSTER, [1e5], ["dp"], loss="bce",
                       optimizer="adamw")
