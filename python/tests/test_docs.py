"""The Python examples of the docs run as written."""

import os
import re
import subprocess
import sys

from conftest import BUILD, ROOT


def python_blocks(path):
    return re.findall(r"```python\n(.*?)```", path.read_text(), re.S)


def run_blocks(blocks, cwd):
    # The examples name repository paths; the files they write go to cwd.
    for name in ("examples", "test"):
        (cwd / name).symlink_to(ROOT / name)
    env = dict(os.environ, PYTHONPATH=str(BUILD / "python"))
    return subprocess.run([sys.executable, "-c", "\n".join(blocks)],
                          cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=600)


def test_python_tutorial(tmp_path):
    blocks = python_blocks(ROOT / "docs" / "Python.md")
    assert len(blocks) >= 5
    result = run_blocks(blocks, tmp_path)
    assert result.returncode == 0, result.stderr[-4000:]
    assert (tmp_path / "dlrm.plan").exists()
    assert (tmp_path / "dlrm-checkpoint" / "MANIFEST").exists()


def test_readme_example(tmp_path):
    blocks = python_blocks(ROOT / "README.md")
    assert blocks, "the README has no Python example"
    result = run_blocks(blocks, tmp_path)
    assert result.returncode == 0, result.stderr[-4000:]
