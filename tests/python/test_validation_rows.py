"""The published rows of experiments/validation/ (issue 17): their splits follow the committed rule,
import_vtrain.py turns vTrain's format back into the same rows, and predict.py runs a tensor- and
data-parallel row on t x p x d GPUs with a replica's share of the batch."""
import csv
import hashlib
import os
import sys

import pytest

VALIDATION = os.path.join(os.path.dirname(__file__), "..", "..", "experiments", "validation")
sys.path.insert(0, VALIDATION)
import import_vtrain  # noqa: E402
import predict  # noqa: E402

FILES = ("pipeline_rows.csv", "single_node_rows.csv")


def rows_of(name):
    with open(os.path.join(VALIDATION, name), newline="") as f:
        return list(csv.DictReader(f))


def vtrain_text(rows):
    """The rows written back in vTrain's ground_truth_single.csv layout (milliseconds)."""
    lines = ["\ufeff# GPUs,global batch,micro batch,hidden size,attention heads,# layers,sequence length,"
             "tensor parallelism,data parallelism,pipeline parallelism,iteration time (ms)"]
    for r in rows:
        fields = [r[k] for k in ("gpus", "global_batch", "micro_batch", "hidden", "heads", "layers", "seq",
                                 "tensor", "data", "pipeline")]
        lines.append(",".join(fields + [repr(float(r["measured_s"]) * 1000)]))
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("name", FILES)
def test_splits_follow_the_hash_rule(name):
    rows = rows_of(name)
    assert len({r["id"] for r in rows}) == len(rows)
    for r in rows:
        digit = int(hashlib.sha256(r["id"].encode()).hexdigest()[0], 16)
        assert r["split"] == ("held-out" if digit < 8 else "development"), r["id"]
        t, p, d = int(r["tensor"]), int(r["pipeline"]), int(r["data"])
        assert t * p * d == int(r["gpus"]), r["id"]
        assert int(r["global_batch"]) % (d * int(r["micro_batch"])) == 0, r["id"]


def test_the_two_files_are_all_of_vtrains_single_node_rows_once():
    pipeline, single = rows_of("pipeline_rows.csv"), rows_of("single_node_rows.csv")
    assert (len(pipeline), len(single)) == (160, 1280)
    assert all(r["tensor"] == "1" and r["data"] == "1" for r in pipeline)
    assert all(r["tensor"] != "1" or r["data"] != "1" for r in single)
    configs = {tuple(r[k] for k in import_vtrain.COLUMNS[4:14]) for r in pipeline + single}
    assert len(configs) == 1440


def test_import_reproduces_the_rows_from_vtrains_layout():
    pipeline, single = rows_of("pipeline_rows.csv"), rows_of("single_node_rows.csv")
    mixed = [row for pair in zip(single, pipeline) for row in pair] + single[len(pipeline):]
    converted = import_vtrain.convert(vtrain_text(mixed))
    assert [r["id"] for r in converted] == [r["id"] for r in mixed]
    for line, (ours, theirs) in enumerate(zip(converted, mixed), start=2):  # the header is line 1
        assert ours["split"] == theirs["split"]
        assert ours["measured_s"] == theirs["measured_s"]
        assert ours["source_row"] == line


def test_import_refuses_another_file_and_inconsistent_rows():
    with pytest.raises(ValueError, match="not vTrain's"):
        import_vtrain.convert("id,gpus\n1,2\n")
    header = "# GPUs,global batch,micro batch,hidden,heads,layers,seq,t,d,p,ms\n"
    with pytest.raises(ValueError, match="line 2: t 2 x d 2 x p 1 is not 8 GPUs"):
        import_vtrain.convert(header + "8,16,1,1024,16,24,1024,2,2,1,100.0\n")
    with pytest.raises(ValueError, match="same configuration"):
        import_vtrain.convert(header + "2,16,1,1024,16,24,1024,2,1,1,100.0\n" * 2)


def test_predict_runs_a_parallel_row_on_all_its_gpus_with_a_replicas_batch():
    row = {"id": "x", "source": "vtrain-micro24", "gpu": "a100", "gpus": "16", "pipeline": "2", "tensor": "2",
           "data": "4", "global_batch": "64", "micro_batch": "2", "hidden": "1024", "heads": "16", "layers": "24",
           "seq": "1024", "vocab": "50304", "precision": "fp16", "optimizer": "adam", "recompute": "full",
           "schedule": "1f1b"}
    args = predict.command("pipetwin", row)
    assert args[args.index("-p") + 1] == "16"
    assert args[args.index("--microbatches") + 1] == "8"  # 64 / 4 replicas = 16 sequences of 2
    params = [args[i + 1] for i, a in enumerate(args) if a == "--param"]
    for expected in ("batch=16", "tp=2", "dp=4", "cuts=12", "p2p=rendezvous", "recompute=blocks"):
        assert expected in params
    pipeline_only = dict(row, gpus="2", tensor="1", data="1")
    params = [a for a in predict.command("pipetwin", pipeline_only) if a.startswith(("tp=", "dp="))]
    assert params == []
    with pytest.raises(ValueError, match="is not its 8 GPUs"):
        predict.command("pipetwin", dict(row, gpus="8"))
    with pytest.raises(ValueError, match="does not split into 4 replicas"):
        predict.command("pipetwin", dict(row, global_batch="12"))


def test_predict_runs_an_interleaved_row_with_a_cut_per_model_chunk():
    (row,) = [r for r in rows_of("megatron_rows.csv") if r["id"] == "gpt-175B-t8-p8-B64-b1-full"]
    args = predict.command("pipetwin", row)
    params = dict(args[i + 1].split("=", 1) for i, a in enumerate(args) if a == "--param")
    assert args[args.index("-s") + 1] == "interleaved-1f1b"
    assert args[args.index("-p") + 1] == "64" and params["tp"] == "8"
    assert params["chunks"] == "3" and params["p2p"] == "async"
    # 96 blocks over 8 stages x 3 chunks: 4 per chunk, cut after blocks 4, 8, ..., 92.
    assert params["cuts"] == ",".join(str(4 * k) for k in range(1, 24))
    assert "chunks" not in dict(a.split("=", 1) for a in predict.command("pipetwin", dict(row, chunks="1"))
                                if "=" in a)
    assert "sp" not in params
    (sp_row,) = [r for r in rows_of("megatron_rows.csv") if r["id"] == "gpt-175B-t8-p8-B64-b1-selective-sp"]
    args = predict.command("pipetwin", sp_row)
    sp_params = dict(args[i + 1].split("=", 1) for i, a in enumerate(args) if a == "--param")
    assert sp_params["sp"] == "1" and sp_params["recompute"] == "selective"
