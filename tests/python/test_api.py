"""The Python API: catalogues, graphs, simulate/evaluate, results, errors."""
import json
import math

import numpy as np
import pytest

import pipetwin


def test_catalogues_list_what_the_cli_lists():
    names = {s["name"] for s in pipetwin.schedules()}
    assert {"gpipe", "1f1b", "pipedream", "layerpipe", "stale-weights", "pipefb", "zb-h1"} <= names
    assert "resnet56" in {n["name"] for n in pipetwin.networks()}
    assert "h100" in {h["name"] for h in pipetwin.hardware()}
    layers = pipetwin.network_layers("resnet56")
    assert len(layers) == 56


def test_one_f_one_b_bubble_matches_the_closed_form():
    # unit cost model: every F 1 cycle, every B 2; bubble (P-1)/(M+P-1), independent of this code.
    for p, m in [(2, 4), (4, 8), (3, 6)]:
        r = pipetwin.evaluate(model="mlp", schedule="1f1b", hardware="unit", processors=p, microbatches=m,
                              minibatches=1, params={"widths": ",".join(["16"] * (p + 1)), "batch": 2 * m})
        assert r.bubble_fraction == pytest.approx((p - 1) / (m + p - 1), abs=1e-12)


def test_simulator_equals_evaluator_without_contention():
    g = pipetwin.build_graph(model="resnet20", schedule="gpipe", hardware="unit", processors=4, microbatches=4)
    assert pipetwin.simulate(g).total_cycles == pipetwin.evaluate(g).total_cycles


@pytest.mark.skipif(not pipetwin.HAVE_SYSTEMC, reason="built without SystemC")
def test_packet_links_and_vcd_trace_from_python(tmp_path):
    # Where no two transfers share a link at once (1f1b on h100, as the evaluator agrees), packet
    # links give the fluid model's cycles; the VCD trace names the module hierarchy.
    config = dict(model="resnet20", schedule="1f1b", hardware="h100", processors=4, microbatches=4)
    fluid = pipetwin.simulate(**config)
    assert pipetwin.simulate(**config, packets=True).total_cycles == fluid.total_cycles  # nothing contends
    trace = tmp_path / "run.vcd"
    pipetwin.simulate(**config, vcd=trace)
    text = trace.read_text()
    assert "$scope module platform $end" in text and "busy" in text
    with pytest.raises(pipetwin.PipetwinError, match="options of the SystemC simulator"):
        pipetwin.simulate(**config, engine="analytic", packets=True)


def test_result_attributes_dict_and_task_table():
    r = pipetwin.simulate(model="lenet5", schedule="1f1b", processors=2, microbatches=4, memory_timeline=True)
    d = r.to_dict()
    assert d["total_cycles"] == r.total_cycles and d["engine"] == "systemc" == r.engine
    assert len(r.utilization) == 2 and 0 < r.mean_utilization <= 1
    t = r.task_times()
    assert isinstance(t["start_cycles"], np.ndarray) and len(t["start_cycles"]) == len(r.graph)
    assert (t["end_cycles"] >= t["start_cycles"]).all()
    assert t["end_cycles"].max() == r.total_cycles
    frame = pipetwin.task_frame(r)
    # 1f1b updates once per stage and minibatch.
    assert list(frame["kind"]).count("U") == len(r.graph.stages) * r.graph.minibatches == 2 * 2
    assert len(r.memory_timeline()) == 2
    json.loads(r.chrome_trace())


def test_graph_json_round_trip(tmp_path):
    g = pipetwin.build_graph(model="resnet20", schedule="pipedream", processors=3, microbatches=2)
    path = tmp_path / "g.json"
    g.save(str(path))
    again = pipetwin.Graph.load(str(path))
    assert again.to_json() == g.to_json()
    assert pipetwin.Graph.from_json(g.to_json()).to_json() == g.to_json()
    assert g.problems() == []
    assert pipetwin.simulate(again).total_cycles == pipetwin.simulate(g).total_cycles


def test_a_step_peak_over_phases_is_the_largest_over_each_processor_paced_each_way():
    # resnet8's LayerPipe at P = 3 (roofline costs): a race between processors decides its step
    # peak. Paced here on the graph's JSON, independently of the core's with_processor_paced.
    config = dict(model="resnet8", schedule="layerpipe", hardware="cpu-core", processors=3, microbatches=4,
                  minibatches=6)
    g = pipetwin.build_graph(**config)
    nominal = max(pipetwin.evaluate(g).step_peak_memory_bytes)
    fraction = 0.05
    largest = nominal
    for p in range(3):
        for factor in (1 + fraction, 1 - fraction):
            d = json.loads(g.to_json())
            for t in d["tasks"]:
                if t["placement"] == "processor" and t["resource"] == p:
                    t["cost_cycles"] = math.ceil(t["cost_cycles"] * factor - 1e-9)
                    t["memory_cycles"] = min(t["cost_cycles"], math.ceil(t["memory_cycles"] * factor - 1e-9))
            paced = pipetwin.Graph.from_json(json.dumps(d))
            largest = max(largest, max(pipetwin.evaluate(paced).step_peak_memory_bytes))
    assert largest > nominal
    assert pipetwin.step_peak_over_phases(g, fraction=fraction, engine="analytic") == largest
    assert pipetwin.step_peak_over_phases(fraction=fraction, engine="analytic", **config) == largest
    assert pipetwin.step_peak_over_phases(g, fraction=0.0, engine="analytic") == nominal
    with pytest.raises(pipetwin.PipetwinError, match="the fraction must be in \\[0, 1\\)"):
        pipetwin.step_peak_over_phases(g, fraction=1.0)


@pytest.mark.parametrize("call, message", [
    (lambda: pipetwin.simulate(model="resnet57"), "did you mean 'resnet56'"),
    (lambda: pipetwin.simulate(schedule="1f1c"), "did you mean '1f1b'"),
    (lambda: pipetwin.simulate(processors=0), "processors must be at least 1"),
    (lambda: pipetwin.simulate(params={"batch": 7}, microbatches=2), "does not split into 2"),
    (lambda: pipetwin.simulate(model="lenet5", schedule="pipefb", processors=3), "even"),
    (lambda: pipetwin.simulate(engine="verilog"), "unknown engine .verilog."),
    (lambda: pipetwin.Graph.from_json("{"), "malformed JSON"),
    (lambda: pipetwin.run(device="tpu"), "device must be"),
    (lambda: pipetwin.run(model="mlp", handoff_spin_us=-1.0, data="synthetic"), "handoff spin must be from 0 to 1 second"),
    (lambda: pipetwin.run(model="gpt", params={"layers": 1, "seq": 4, "vocab": 16, "hidden": 8, "heads": 2,
                                                "batch": 2}, microbatches=1), "does not run"),
])
def test_bad_arguments_raise_clear_errors(call, message):
    with pytest.raises(pipetwin.PipetwinError, match=message):
        call()


def test_keyword_misuse_is_a_type_error():
    with pytest.raises(TypeError, match="unexpected keyword argument 'modle'; did you mean model[?] It takes: graph, model"):
        pipetwin.simulate(modle="lenet5")
    g = pipetwin.build_graph(model="lenet5")
    with pytest.raises(TypeError, match="not both"):
        pipetwin.simulate(g, model="lenet5")


def test_saving_writes_through_links_and_never_replaces_a_directory(tmp_path):
    g = pipetwin.build_graph(model="lenet5", schedule="gpipe", hardware="unit", processors=2, microbatches=2)
    target = tmp_path / "graph.json"
    target.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    g.save(str(link))
    assert link.is_symlink()
    assert json.loads(target.read_text())["schedule"] == "gpipe"
    with pytest.raises(pipetwin.PipetwinError, match="is a directory"):
        pipetwin._core.write_output_file(str(tmp_path), "x")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["graph.json", "link.json"]


def test_a_binary_model_file_is_a_clear_error(tmp_path):
    model = tmp_path / "model.json"
    model.write_bytes(b"\xff\xfe\x00binary\x89PNG")
    with pytest.raises(pipetwin.PipetwinError, match="malformed JSON"):
        pipetwin.evaluate(model=str(model), schedule="gpipe", processors=2)


def test_a_prediction_and_a_measurement_overlay_in_one_trace():
    g = pipetwin.build_graph(model="mlp", schedule="1f1b", hardware="cpu-core", processors=2, microbatches=2,
                             minibatches=2, params={"widths": "24,16,10", "batch": 8})
    predicted = pipetwin.evaluate(g)
    measured = pipetwin.run(g, data="synthetic", handoff_spin_us=50.0).result
    trace = json.loads(pipetwin.chrome_trace([predicted, measured]))
    assert {e["pid"] for e in trace["traceEvents"]} == {1, 2, 3, 4}
    assert trace["otherData"]["engine"] == ["analytic", "cpu"]


def test_figures_scale_with_rows_draw_few_artists_and_say_what_they_show():
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    r = pipetwin.simulate(model="resnet56", schedule="1f1b", processors=8, microbatches=16)
    ax = pipetwin.plotting.space_time(r)
    rows = len(ax.get_yticks())
    assert rows >= 8
    assert ax.figure.get_size_inches()[1] >= 0.33 * rows  # room for every row label
    assert len(ax.collections) <= rows * 8  # one artist per row and kind, not one per task
    assert ax.get_xlabel() in ("s", "ms", "µs", "ns")
    frame = pipetwin.sweep("lenet5", ["gpipe"], [1, 2], hardware="h100")
    ax = pipetwin.plotting.speedup(frame)
    assert ax.get_title(loc="left") == "lenet5 · h100"


def test_pinned_threads_train_the_same_weights_bit_for_bit():
    # Where threads run changes their timing, never the arithmetic (tests/test_cpu_executor.cpp
    # checks that each task runs on its CPU).
    g = pipetwin.build_graph(model="mlp", schedule="1f1b", hardware="cpu-core", processors=2, microbatches=2,
                             minibatches=2, params={"widths": "24,16,10", "batch": 8})
    free = pipetwin.run(g, data="synthetic")
    pinned = pipetwin.run(g, data="synthetic", pin_threads=True)
    assert list(pinned.minibatch_loss) == list(free.minibatch_loss)
    assert [[float(v) for v in w] for w in pinned.weights()] == [[float(v) for v in w] for w in free.weights()]


def test_transfers_copied_by_senders_or_by_link_threads_train_the_same_weights():
    # Which thread copies a transfer changes its timing, never the arithmetic
    # (tests/test_cpu_executor.cpp checks where each transfer ran).
    g = pipetwin.build_graph(model="mlp", schedule="1f1b", hardware="cpu-core", processors=2, microbatches=2,
                             minibatches=2, params={"widths": "24,16,10", "batch": 8})
    links = pipetwin.run(g, data="synthetic", transfer_threads="links")
    senders = pipetwin.run(g, data="synthetic", transfer_threads="senders")
    assert list(senders.minibatch_loss) == list(links.minibatch_loss)
    assert [[float(v) for v in w] for w in senders.weights()] == [[float(v) for v in w] for w in links.weights()]
    with pytest.raises(pipetwin.PipetwinError, match="transfer threads must be auto, links or senders, got 'cores'"):
        pipetwin.run(g, data="synthetic", transfer_threads="cores")
