"""The README's Python section, run verbatim (figures drawn off screen)."""
import pathlib
import re

import pytest

README = pathlib.Path(__file__).resolve().parents[2] / "README.md"


def python_blocks(text):
    return re.findall(r"```python\n(.*?)```", text, flags=re.S)


def test_the_readme_python_runs_as_written():
    pytest.importorskip("matplotlib").use("Agg")
    blocks = python_blocks(README.read_text())
    assert blocks, "the README has a Python section"
    for block in blocks:
        exec(compile(block, str(README), "exec"), {})
