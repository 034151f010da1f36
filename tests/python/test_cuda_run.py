"""run(), profile() and validate() with device="cuda": the CUDA executor's plug-in, loaded from
beside the extension module (or from $PIPETWIN_CUDA_PLUGIN), trains the weights the CPU executor
trains, times a table and validates; without a GPU or without the plug-in it says which; the
GPU-only options are checked."""
import os

import numpy as np
import pytest

import pipetwin

PLUGIN = os.path.join(os.path.dirname(pipetwin._core.__file__), "libpipetwin_cuda.so")
MLP = dict(model="mlp", schedule="1f1b", processors=2, microbatches=2, minibatches=3,
           params={"widths": "24,16,10", "batch": 8}, data="synthetic")


def on_gpu_or_skip(call):
    """call()'s result on a GPU; without one, checks that the plug-in loaded and said so, and skips."""
    if not os.path.exists(PLUGIN) and not os.environ.get("PIPETWIN_CUDA_PLUGIN"):
        pytest.skip(f"this build of pipetwin has no CUDA executor ({PLUGIN}: built only where nvcc is found)")
    try:
        return call()
    except pipetwin.PipetwinError as e:
        # The plug-in loaded (else the error would say it is missing) and found no device.
        assert "no CUDA device" in str(e), str(e)
        pytest.skip(f"no GPU here, the plug-in said so: {e}")


def test_run_on_cuda_trains_the_cpu_executors_weights_or_says_there_is_no_gpu():
    gpu = on_gpu_or_skip(lambda: pipetwin.run(**MLP, device="cuda", placement="streams"))
    cpu = pipetwin.run(**MLP)
    assert len(gpu.minibatch_loss) == len(cpu.minibatch_loss) == 3
    for on_gpu, on_cpu in zip(gpu.weights(), cpu.weights()):
        np.testing.assert_allclose(on_gpu, on_cpu, rtol=1e-4, atol=1e-6)


def test_profile_on_cuda_gives_a_gpu_table_or_says_there_is_no_gpu():
    table = on_gpu_or_skip(lambda: pipetwin.profile("mlp", device="cuda", placement="streams", params=MLP["params"],
                                                    data="synthetic", repeats=2))
    assert table["device"] != "cpu"
    assert {layer["name"] for layer in table["layers"]} == {layer["name"] for layer in pipetwin.network_layers("mlp", MLP["params"])}
    assert table.get("overheads_from_unmarked_twins") is True  # a GPU's one-processor table takes them (unmarked_twins=None)


def test_validate_on_cuda_gives_rows_or_says_there_is_no_gpu():
    table, summary = on_gpu_or_skip(lambda: pipetwin.validate("mlp", ["sequential", "gpipe"], [1, 2], device="cuda",
                                                              placement="streams", params=MLP["params"],
                                                              data="synthetic", minibatches=4, runs=1))
    assert summary["rounds"] == 1
    assert len(table) == 4


def test_run_on_cuda_names_the_missing_executor(monkeypatch, tmp_path):
    missing = tmp_path / "no_such_plugin.so"
    monkeypatch.setenv("PIPETWIN_CUDA_PLUGIN", str(missing))
    with pytest.raises(pipetwin.PipetwinError,
                       match=f"device='cuda': this pipetwin has no CUDA executor: libpipetwin_cuda.so is not at {missing}"):
        pipetwin.run(**MLP, device="cuda")


@pytest.mark.parametrize("call, message", [
    (lambda: pipetwin.run(**MLP, placement="gpus"), "place a run on GPUs: give device='cuda'"),
    (lambda: pipetwin.run(**MLP, tf32=True), "place a run on GPUs: give device='cuda'"),
    (lambda: pipetwin.run(**MLP, device="cuda", placement="sms"), "placement must be 'partitions', 'gpus' or 'streams'"),
    (lambda: pipetwin.run(**MLP, device="cuda", partition_sms=-8), "partition_sms must be 0"),
    (lambda: pipetwin.run(**MLP, device="cuda", gpu=-1), "gpu must be 0 or more"),
    (lambda: pipetwin.run(**MLP, device="cuda", gpu_wait="poll"), "gpu_wait must be 'spin' or 'block'"),
    (lambda: pipetwin.profile("lenet5", device="cuda", pin_threads=True), "a GPU profile .device='cuda'. has none to pin"),
    (lambda: pipetwin.profile("lenet5", gpu=1), "place a run on GPUs: give device='cuda'"),
    (lambda: pipetwin.profile("lenet5", device="gpu"), "device must be 'cpu' or 'cuda', got 'gpu'"),
    (lambda: pipetwin.validate("lenet5", "gpipe", device="cuda"), "on SM partitions needs partition_sms"),
    (lambda: pipetwin.validate("lenet5", "gpipe", placement="gpus"), "place a run on GPUs: give device='cuda'"),
])
def test_gpu_options_are_checked_before_anything_runs(call, message):
    with pytest.raises(pipetwin.PipetwinError, match=message):
        call()
