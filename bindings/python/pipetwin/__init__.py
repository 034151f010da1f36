"""pipetwin: predict and measure pipelined backpropagation.

A training schedule (GPipe, 1F1B, PipeDream, LayerPipe, stale weights, PipeFB, zero bubble, ...) is
a task graph; engines run that one graph: the SystemC simulator and the analytic evaluator predict,
the CPU executor measures, all reporting one Result schema.

    import pipetwin
    r = pipetwin.simulate(model="resnet56", schedule="1f1b", processors=4, microbatches=8)
    r.iteration_s, r.bubble_fraction, r.peak_memory_bytes
    frame = pipetwin.sweep("resnet56", ["gpipe", "1f1b", "pipedream"], [1, 2, 4, 8])
    t = pipetwin.run(model="lenet5", schedule="1f1b", processors=2, minibatches=20)

Errors from the core arrive as pipetwin.PipetwinError (a ValueError) with the CLI's messages.
"""
from ._core import (HAVE_SYSTEMC, Graph, PipetwinError, Result, TrainingResult, build_graph, chrome_trace, hardware,
                    network_layers, networks, schedules)
from . import _core
from . import plotting  # matplotlib itself is imported only when a figure is drawn
from ._api import evaluate, profile, run, simulate, task_frame, validate
from ._sweep import sweep

__all__ = ["Graph", "PipetwinError", "Result", "TrainingResult", "build_graph", "chrome_trace", "evaluate", "hardware",
           "network_layers", "networks", "profile", "run", "schedules", "simulate", "sweep", "task_frame",
           "validate", "plotting", "HAVE_SYSTEMC"]
__version__ = "0.1.0"
