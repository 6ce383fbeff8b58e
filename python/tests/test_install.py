"""cmake --install: the package and the tools work from the prefix."""

import subprocess
import sys
import textwrap

from conftest import BUILD, ONNX_INPUTS


def test_installed_package_and_tools(tmp_path):
    prefix = tmp_path / "prefix"
    subprocess.run(["cmake", "--install", str(BUILD), "--prefix", str(prefix)],
                   check=True, capture_output=True)
    sites = list(prefix.glob("lib/python3*/dist-packages"))
    assert len(sites) == 1, sites
    for tool in ("heterps-opt", "heterps-run", "heterps-ps"):
        assert (prefix / "bin" / tool).exists()
    script = textwrap.dedent(f"""
        import numpy as np
        import heterps
        assert heterps.__file__.startswith({str(prefix)!r}), heterps.__file__
        plan = heterps.compile({str(ONNX_INPUTS / "torch-mlp.onnx")!r},
                               loss="mse", optimizer="sgd")
        plan.save({str(tmp_path / "mlp.plan")!r})
        trainer = heterps.Trainer(plan)
        x = np.ones((4, 32), np.float32)
        y = np.zeros((4, 10), np.float32)
        print(trainer.step({{"x": x, "label": y}}) > 0)
        """)
    # A directory of its own, so that the build tree's package is not found.
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=tmp_path, check=True,
        capture_output=True, text=True,
        env={"PYTHONPATH": str(sites[0]), "PATH": "/usr/bin:/bin"})
    assert result.stdout.strip() == "True"
    printed = subprocess.run(
        [str(prefix / "bin" / "heterps-run"), str(tmp_path / "mlp.plan"),
         "--print-plan"], check=True, capture_output=True, text=True)
    assert "stage 0" in printed.stdout
