"""The notebooks in experiments/notebooks execute without error (nbclient) and save their
figures, so they stay true to the code."""
import glob
import os

import pytest

import pipetwin

nbformat = pytest.importorskip("nbformat", reason="nbformat not installed (pip install .[test])")
nbclient = pytest.importorskip("nbclient", reason="nbclient not installed (pip install .[test])")

NOTEBOOKS = sorted(glob.glob(os.path.join(os.path.dirname(__file__), "..", "..", "experiments", "notebooks",
                                          "*.ipynb")))


def test_there_is_a_tour_and_one_notebook_per_seed_paper():
    names = {os.path.basename(n) for n in NOTEBOOKS}
    assert {"tour.ipynb", "layerpipe.ipynb", "stale_weights.ipynb", "pipefb.ipynb", "layerwise_merge.ipynb"} <= names


@pytest.mark.parametrize("path", NOTEBOOKS, ids=os.path.basename)
def test_notebook_runs_and_saves_its_figures(path, tmp_path, monkeypatch):
    monkeypatch.setenv("PIPETWIN_FIGURES", str(tmp_path))
    # The kernel imports the same pipetwin this test does (installed, or the build tree).
    package_root = os.path.dirname(os.path.dirname(pipetwin.__file__))
    monkeypatch.setenv("PYTHONPATH", package_root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    notebook = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(notebook, timeout=300, kernel_name="python3",
                                     resources={"metadata": {"path": os.path.dirname(path)}})
    client.execute()
    figures = list(tmp_path.glob("*.png"))
    assert figures, "the notebook saved no figure"
    for figure in figures:
        assert figure.stat().st_size > 1000
