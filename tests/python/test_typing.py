"""The Python API is typed: the core's stubs are the ones pybind11-stubgen generates from the C++
signatures, mypy's stubtest finds them true to the module, mypy sees real types (not Any) through
the public functions, the README's Python type-checks under --strict, and a wrong argument type is a
TypeError that names the function and the argument."""
import pathlib
import re
import subprocess
import sys

import pytest

import pipetwin

ROOT = pathlib.Path(__file__).resolve().parents[2]
pytest.importorskip("mypy")


def mypy(tmp_path, *args):
    return subprocess.run([sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path / "cache"), *args],
                          cwd=tmp_path, capture_output=True, text=True)


def test_the_stubs_are_the_generated_ones():
    pytest.importorskip("pybind11_stubgen")
    run = subprocess.run([sys.executable, str(ROOT / "scripts" / "generate_stubs.py"), "--check"],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]


def test_stubtest_is_clean(tmp_path):
    run = subprocess.run([sys.executable, "-m", "mypy.stubtest", "pipetwin", "--mypy-config-file",
                          str(tmp_path / "none.ini"), "--allowlist", str(ROOT / "tests/python/stubtest-allowlist.txt")],
                         cwd=tmp_path, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]


SNIPPET = '''
import pipetwin
r = pipetwin.simulate(model="lenet5", schedule="1f1b", processors=2)
reveal_type(r)
reveal_type(r.iteration_s)
reveal_type(r.peak_memory_bytes)
reveal_type(r.task_times())
reveal_type(pipetwin.run(model="lenet5").test_accuracy)
reveal_type(pipetwin.build_graph(model="lenet5").stages)
reveal_type(pipetwin.profile("lenet5"))
reveal_type(pipetwin.plotting.space_time(r))
pipetwin.simulate(model="lenet5", processors="2")
'''


def test_mypy_sees_the_types_through_the_public_functions(tmp_path):
    (tmp_path / "snippet.py").write_text(SNIPPET)
    run = mypy(tmp_path, "--strict", "snippet.py")
    revealed = re.findall(r'Revealed type is "(.*)"', run.stdout)
    revealed = [re.sub(r"numpy.ndarray\[.*?\]\]", "numpy.ndarray", t) for t in revealed]  # numpy's parameters vary
    assert revealed == ["pipetwin._core.Result", "float", "list[int]", "dict[str, numpy.ndarray | list[str]]",
                        "float | None", "list[dict[str, int]]", "dict[str, Any]", "matplotlib.axes._axes.Axes"], run.stdout
    errors = [line for line in run.stdout.splitlines() if ": error:" in line]
    # processors="2" is caught before anything runs (only the last line is wrong).
    assert len(errors) == 1 and "snippet.py:12:" in errors[0] and '"processors"' in errors[0], run.stdout


def test_the_package_and_the_readme_type_check_strictly(tmp_path):
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), flags=re.S)
    (tmp_path / "readme.py").write_text("\n".join(blocks))
    run = mypy(tmp_path, "--strict", "-p", "pipetwin")
    assert run.returncode == 0, run.stdout
    run = mypy(tmp_path, "readme.py")
    assert run.returncode == 0, run.stdout


@pytest.mark.parametrize("call, message", [
    (lambda: pipetwin.simulate(model=3), r"pipetwin.simulate\(\): model must be a str or a path \(os.PathLike\) or None, got int 3"),
    (lambda: pipetwin.simulate(processors="4"), r"pipetwin.simulate\(\): processors must be an int or None, got str '4'"),
    (lambda: pipetwin.evaluate(processors=True), r"processors must be an int or None, got bool True"),
    (lambda: pipetwin.simulate("lenet5"), r"graph must be a Graph or None, got str 'lenet5'; .* use keywords: model='lenet5'"),
    (lambda: pipetwin.build_graph(params=5), r"pipetwin.build_graph\(\): params must be a dict or a sequence of str or None"),
    (lambda: pipetwin.run(learning_rate="x"), r"pipetwin.run\(\): learning_rate must be a float, got str 'x'"),
    (lambda: pipetwin.sweep("lenet5", [1, 2]), r"pipetwin.sweep\(\): schedules must be a str or a sequence of str"),
    (lambda: pipetwin.validate("lenet5", "gpipe", processors=[1, 2.5]), r"processors must be a sequence of int"),
    (lambda: pipetwin.chrome_trace(3), r"pipetwin.chrome_trace\(\): results must be a sequence of Result, got int 3"),
    (lambda: pipetwin.plotting.memory(None), r"pipetwin.plotting.memory\(\): result must be a Result, got NoneType"),
    (lambda: pipetwin.network_layers(), r"pipetwin.network_layers\(\): missing a required argument: 'model'"),
])
def test_a_wrong_type_is_a_type_error_naming_the_function_and_argument(call, message):
    with pytest.raises(TypeError, match=message) as error:
        call()
    assert "incompatible function arguments" not in str(error.value) and "_core" not in str(error.value)


def test_paths_numpy_integers_and_mappings_are_accepted(tmp_path):
    np = pytest.importorskip("numpy")
    from types import MappingProxyType
    g = pipetwin.build_graph(model="mlp", schedule="gpipe", hardware="unit", processors=np.int64(2),
                             microbatches=2, params=MappingProxyType({"widths": [16, 16, 10], "batch": 4}))
    assert g.processors == 2 and len(pipetwin.network_layers("mlp", {"widths": "16,16,10"})) == 2
    g.save(str(tmp_path / "g.json"))
    assert pipetwin.Graph.load(str(tmp_path / "g.json")).to_json() == g.to_json()
    table = pipetwin.profile("mlp", params=["widths=16,16,10", "batch=8"], data="synthetic", repeats=1,
                             output=tmp_path / "cal.json")
    assert (tmp_path / "cal.json").exists() and table["network"] == "mlp"


def test_pip_install_builds_outside_the_source_tree():
    # A plain `pip install .` must not write a build folder into the checkout; only
    # scripts/install-python.sh asks for one (build/pip-*), on the command line.
    tomllib = pytest.importorskip("tomllib")
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "build-dir" not in config["tool"]["scikit-build"]
    assert "build-dir=build/pip-" in (ROOT / "scripts" / "install-python.sh").read_text()
