"""The notebook-facing API around the C++ core: simulate / evaluate / run a graph or a configuration
given by keywords, profile and validate on the CPU or CUDA executor, tables as pandas DataFrames when
pandas is installed. Every public function checks its arguments' types (_checks.py)."""
import json
import os
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union, overload

from . import _core
from ._checks import checked
from ._core import Graph, MpiSession, PipetwinError, Result, TrainingResult

if TYPE_CHECKING:
    import pandas

PathArg = Union[str, os.PathLike[str]]
"""A file name: str or pathlib.Path."""
Params = Optional[Union[Mapping[str, Any], Sequence[str]]]
"""Model, hardware and schedule parameters: {"batch": 64, "cuts": [3, 7]} or ["batch=64"]."""
Table = Union["pandas.DataFrame", List[Dict[str, Any]]]
"""A DataFrame when pandas is installed, else a list of rows (dicts)."""

_DATA_DIR = "/usr/share/datasets/fashion-mnist"
_CONFIG_KEYS = ("model", "schedule", "hardware", "processors", "microbatches", "minibatches", "params", "calibration")


def default_engine() -> str:
    """systemc when the simulator was built, else analytic."""
    return "systemc" if _core.HAVE_SYSTEMC else "analytic"


def _path(value: PathArg) -> str:
    return os.fspath(value)


def _params(params: Params) -> Union[Dict[str, Any], Sequence[str], None]:
    """A Mapping as the dict the core takes (it reads any other iterable as 'key=value' strings)."""
    return dict(params) if isinstance(params, Mapping) else params


@checked
def build_graph(model: PathArg = "resnet56", schedule: str = "1f1b", hardware: PathArg = "h100",
                processors: int = 1, microbatches: int = 8, minibatches: int = 2, params: Params = None,
                calibration: PathArg = "", drop_other_schedules_params: bool = False) -> Graph:
    """Builds and validates a schedule's task graph. model and hardware: a built-in name or a JSON
    file; params: {key: value} for the model, hardware or schedule (as --param on the CLI);
    calibration: a table from profile(); drop_other_schedules_params: ignore parameters that only
    other schedules take (as sweeps do)."""
    return _core.build_graph(_path(model), schedule, _path(hardware), processors, microbatches, minibatches,
                             _params(params), _path(calibration), drop_other_schedules_params)


@checked
def network_layers(model: PathArg, params: Params = None) -> List[Dict[str, Any]]:
    """The layers of a network (model parameters such as batch may be given): name, type, shapes,
    FLOPs per sample (forward, activation gradient, weight gradient), parameters, output and stash
    bytes of each, and what a conv2d or dense layer computes (its "conv2d" or "dense" spec)."""
    return _core.network_layers(_path(model), _params(params))


@checked
def chrome_trace(results: Sequence[Result]) -> str:
    """One Chrome trace (JSON text) of several results of one graph, a prediction and a
    measurement, each in processes of its own, to overlay in Perfetto."""
    return _core.chrome_trace(list(results))


def _graph(graph: Optional[Graph], arguments: Dict[str, Any], defaults: Optional[Dict[str, Any]] = None) -> Graph:
    """graph, or the graph that the configuration keywords among `arguments` (a caller's locals()),
    those given (not None), describe."""
    given = {key: arguments[key] for key in _CONFIG_KEYS if arguments[key] is not None}
    if graph is not None and given:
        raise TypeError("give a Graph or configuration keywords (model=..., schedule=...), not both")
    if graph is None:
        return build_graph(**{**(defaults or {}), **given})
    return graph


@checked
def simulate(graph: Optional[Graph] = None, *, model: Optional[PathArg] = None, schedule: Optional[str] = None,
             hardware: Optional[PathArg] = None, processors: Optional[int] = None, microbatches: Optional[int] = None,
             minibatches: Optional[int] = None, params: Params = None, calibration: Optional[PathArg] = None,
             engine: Optional[str] = None, memory_timeline: bool = False, packets: bool = False,
             packet_bytes: int = 4096, credits: int = 0, vcd: Optional[PathArg] = None) -> Result:
    """Predicts a Result: simulate(graph), or simulate(model=..., schedule=..., hardware=...,
    processors=..., microbatches=..., minibatches=..., params={...}, calibration=path), where a
    keyword left out takes build_graph()'s default. engine: 'systemc' (default when built) or
    'analytic'. SystemC only: packets=True serves links packet by packet (packets of packet_bytes,
    credits receive buffers per link, 0: enough for the round trip; docs/simulator.md); vcd=path
    (ending in .vcd) writes SystemC's VCD trace of processors and links."""
    g = _graph(graph, locals())
    return _core.run_engine(g, engine or default_engine(), memory_timeline, packets, packet_bytes, credits,
                            _path(vcd) if vcd is not None else "")


@checked
def evaluate(graph: Optional[Graph] = None, *, model: Optional[PathArg] = None, schedule: Optional[str] = None,
             hardware: Optional[PathArg] = None, processors: Optional[int] = None, microbatches: Optional[int] = None,
             minibatches: Optional[int] = None, params: Params = None, calibration: Optional[PathArg] = None,
             memory_timeline: bool = False) -> Result:
    """The analytic evaluator's Result (no bandwidth sharing): same arguments as simulate()."""
    g = _graph(graph, locals())
    return _core.run_engine(g, "analytic", memory_timeline)


@checked
def step_peak_over_phases(graph: Optional[Graph] = None, *, fraction: float, model: Optional[PathArg] = None,
                          schedule: Optional[str] = None, hardware: Optional[PathArg] = None,
                          processors: Optional[int] = None, microbatches: Optional[int] = None,
                          minibatches: Optional[int] = None, params: Params = None,
                          calibration: Optional[PathArg] = None, engine: Optional[str] = None) -> int:
    """The steady step's peak memory in bytes (the largest processor's) as the largest over each
    processor's tasks paced `fraction` (0 to below 1) slower and faster than their price, one at a
    time, and as priced: 2P more predictions. A step peak can hang on which of two processors'
    events comes first; one timing fixes that order, a run's straying tasks reach the other
    (docs/executor.md, "Step peaks over phases"). The graph as for simulate(); a calibration
    table's own spread is Calibration's task_time_spread (`pipetwin profile` prints it)."""
    g = _graph(graph, locals())
    return _core.step_peak_over_phases(g, engine or default_engine(), fraction)


def _check_device(device: str) -> None:
    if device not in ("cpu", "cuda"):
        raise PipetwinError(f"device must be 'cpu' or 'cuda', got {device!r}")


@overload
def run(graph: Optional[Graph] = None, *, model: Optional[PathArg] = None, schedule: Optional[str] = None,
        hardware: Optional[PathArg] = None, processors: Optional[int] = None, microbatches: Optional[int] = None,
        minibatches: Optional[int] = None, params: Params = None, calibration: Optional[PathArg] = None,
        device: str = "cpu", data: str = "auto", data_dir: PathArg = _DATA_DIR, learning_rate: float = 0.05,
        momentum: float = 0.0, seed: int = 1, test: bool = False, memory_timeline: bool = False,
        handoff_spin_us: Optional[float] = None, pin_threads: bool = False, transfer_threads: str = "auto",
        placement: str = "partitions", partition_sms: int = 0, gpu: int = 0, tf32: bool = False,
        gpu_wait: str = "spin", session: None = None,
        message_timeout_s: float = 60.0) -> TrainingResult: ...


@overload
def run(graph: Optional[Graph] = None, *, model: Optional[PathArg] = None, schedule: Optional[str] = None,
        hardware: Optional[PathArg] = None, processors: Optional[int] = None, microbatches: Optional[int] = None,
        minibatches: Optional[int] = None, params: Params = None, calibration: Optional[PathArg] = None,
        device: str = "cpu", data: str = "auto", data_dir: PathArg = _DATA_DIR, learning_rate: float = 0.05,
        momentum: float = 0.0, seed: int = 1, test: bool = False, memory_timeline: bool = False,
        handoff_spin_us: Optional[float] = None, pin_threads: bool = False, transfer_threads: str = "auto",
        placement: str = "partitions", partition_sms: int = 0, gpu: int = 0, tf32: bool = False,
        gpu_wait: str = "spin", session: MpiSession,
        message_timeout_s: float = 60.0) -> Optional[TrainingResult]: ...


@checked
def run(graph: Optional[Graph] = None, *, model: Optional[PathArg] = None, schedule: Optional[str] = None,
        hardware: Optional[PathArg] = None, processors: Optional[int] = None, microbatches: Optional[int] = None,
        minibatches: Optional[int] = None, params: Params = None, calibration: Optional[PathArg] = None,
        device: str = "cpu", data: str = "auto", data_dir: PathArg = _DATA_DIR, learning_rate: float = 0.05,
        momentum: float = 0.0, seed: int = 1, test: bool = False, memory_timeline: bool = False,
        handoff_spin_us: Optional[float] = None, pin_threads: bool = False, transfer_threads: str = "auto",
        placement: str = "partitions", partition_sms: int = 0, gpu: int = 0, tf32: bool = False,
        gpu_wait: str = "spin", session: Optional[MpiSession] = None,
        message_timeout_s: float = 60.0) -> Optional[TrainingResult]:
    """Trains for real under the schedule (CPU threads as processors, or GPUs with device="cuda")
    and returns a TrainingResult: .result (measured, the simulator's schema), .minibatch_loss,
    .test_accuracy (test=True). Configuration keywords as simulate(), but model defaults to lenet5,
    hardware to cpu-core (h100 with device="cuda": the GPU whose memory the schedule is checked
    against) and microbatches to 4. handoff_spin_us: how long a thread spins for its next task's inputs before
    it sleeps (0: at once; None: 100000 where the run has a processor for every CPU, two or more, and
    no link has a thread of its own, else 0;
    spinning pays only where no other thread needs the core; docs/executor.md, "Handoffs").
    pin_threads: processor p's thread on the p-th CPU this process may run on (in turn), each
    link's on its sender's (docs/executor.md, "Pinning"; off: the OS places them).
    transfer_threads: which threads copy the transfers between processors: "senders" (the sending
    processor's, right after the task whose output it copies), "links" (a thread per link), or
    "auto" (senders where the run has a processor for every CPU, as the cost model assumes there).

    session: an MpiSession, for a run across the processes of an MPI job (the script started with
    mpirun -np N): each rank runs its processors' tasks (contiguous blocks; processors defaults to
    the number of ranks), every rank must make the same call, and rank 0 returns the
    TrainingResult while the others return None.
    message_timeout_s: how long a task waits for another rank while no message comes from it.

    device="cuda" runs the CUDA executor, as `pipetwin run --device cuda` does (docs/cuda-executor.md),
    loaded from the package folder (a wheel built where nvcc was found holds it) or from the file
    $PIPETWIN_CUDA_PLUGIN names (build/lib/libpipetwin_cuda.so of a CMake build of the same
    source). placement: processors as SM "partitions" of GPU `gpu` (CUDA green contexts,
    partition_sms each; 0: the largest equal share), one GPU each ("gpus"), or plain "streams" on
    GPU `gpu`; tf32: TF32 tensor-core GEMMs (default fp32); gpu_wait: how a host thread waits for
    its stream, "spin" or "block". These five are for device="cuda" only."""
    _check_device(device)
    defaults: Dict[str, Any] = {"hardware": "h100" if device == "cuda" else "cpu-core", "model": "lenet5",
                                "microbatches": 4}
    if session is not None:
        defaults["processors"] = session.ranks  # one processor per rank unless processors= says otherwise
    g = _graph(graph, locals(), defaults)
    return _core.train(g, data=data, data_dir=_path(data_dir), learning_rate=learning_rate, momentum=momentum,
                       seed=seed, test=test, memory_timeline=memory_timeline, handoff_spin_us=handoff_spin_us,
                       pin_threads=pin_threads, transfer_threads=transfer_threads, session=session,
                       message_timeout_s=message_timeout_s, device=device, placement=placement,
                       partition_sms=partition_sms, gpu=gpu, tf32=tf32, gpu_wait=gpu_wait)


@checked
def profile(model: PathArg, *, device: str = "cpu", microbatches: int = 4, params: Params = None, data: str = "auto",
            data_dir: PathArg = _DATA_DIR, repeats: int = 64, seed: int = 1, concurrent: int = 1,
            output: Optional[PathArg] = None, pin_threads: bool = False,
            concurrent_timing: str = "pipeline", unmarked_twins: Optional[bool] = None,
            placement: str = "partitions", partition_sms: int = 0, gpu: int = 0, tf32: bool = False,
            gpu_wait: str = "spin") -> Dict[str, Any]:
    """Times F, BA, BW and U of every layer on one processor; returns the calibration table (a dict)
    and writes it to `output` when given (use it as calibration=path). concurrent > 1 gives the
    table for a pipeline of that many processors: concurrent_timing "pipeline" times each layer
    where a 1f1b run on that many processors puts it (a network with too few layers falls back to
    copies), "copies" times that many copies of the one-processor run at once, one per thread.
    pin_threads: processor (copy) k's thread on the k-th CPU this process may run on, as processor
    k's in a pinned run. unmarked_twins: every timed run is made again without its layers' marks,
    and what a task costs beyond its layers is fitted from that twin's task times (the table says
    so: "overheads_from_unmarked_twins"); profiling takes about twice as long. None: only a GPU's
    one-processor table does (as the CLI's --unmarked-twins auto).

    device="cuda" times the CUDA executor, as `pipetwin profile --device cuda` does, with run()'s
    placement, partition_sms, gpu, tf32 and gpu_wait (processors as SM partitions of one GPU by
    default); the table is for the hardware profile h100 unless used with another."""
    _check_device(device)
    if output is not None:
        _core.check_output_file(_path(output))  # before the minutes of timing, not after
    twins = "auto" if unmarked_twins is None else ("all" if unmarked_twins else "none")
    text = _core.profile(_path(model), microbatches=microbatches, params=_params(params), data=data, data_dir=_path(data_dir),
                         repeats=repeats, seed=seed, concurrent=concurrent, pin_threads=pin_threads,
                         concurrent_timing=concurrent_timing, unmarked_twins=twins, device=device,
                         placement=placement, partition_sms=partition_sms, gpu=gpu, tf32=tf32, gpu_wait=gpu_wait)
    if output is not None:
        _core.write_output_file(_path(output), text)
    table: Dict[str, Any] = json.loads(text)
    return table


@checked
def validate(model: PathArg, schedules: Union[str, Sequence[str]], processors: Sequence[int] = (1, 2), *,
             device: str = "cpu", microbatches: int = 4, minibatches: int = 16, params: Params = None,
             calibration: PathArg = "", engine: Optional[str] = None, runs: int = 5, data: str = "auto",
             data_dir: PathArg = _DATA_DIR, learning_rate: float = 0.05,
             seed: int = 1, max_runs: int = 0, target: float = 0.05,
             pin_threads: bool = False, transfer_threads: str = "auto",
             concurrent_timing: str = "pipeline", warmup_rounds: int = 0, machine_tolerance: float = 0.06,
             machine_retakes: int = 2, table_tolerance: float = 0.10, co_run_tolerance: float = 0.25,
             time_limit_s: float = 0.0, peak_phase: Optional[float] = None, placement: str = "partitions",
             partition_sms: int = 0, gpu: int = 0, tf32: bool = False,
             gpu_wait: str = "spin") -> Tuple[Table, Dict[str, Any]]:
    """Predicted (from a calibration table; profiled first without one) against measured step time,
    speedup and peak memory per schedule and processor count. Returns (table, summary): the table a
    DataFrame when pandas is installed (else a list of dicts; each row's step_error is the median
    over rounds of that round's prediction over its run, minus 1, its measured_spread the
    half-range of its runs over their median, its replay_error the engine fed each run's own task
    times against that run, its co_run_weight how far its table lies from the one taken alone
    towards the P-processor table (the other processors' busy share while one works; where that
    table was timed in a pipeline, concurrent_timing="pipeline" as in profile(), that share over
    the pipeline's, at most 1), its weight_reuse_s what the CPU cost model charged its tasks per
    step for how warm its order leaves their weights against the table's order (negative: warmer;
    docs/executor.md, Calibration 8), its stash_far_share how far its layers were moved toward
    their times with every stash held (0 to 1; docs/executor.md, Calibration 10), its wait_loss_s what the engine charged its tasks per step for
    the waits before them in its prediction (the profile's wait curve; docs/executor.md, "Waits
    that cost the caches"), task_time_error_by_part its task time error per processor and task kind
    (each task's cost plus what the wait before it in the run costs by that curve, against its
    measured time)
    ("p0 F", ...), task_time_error_by_wait the same per group of tasks by the wait before each on its
    processor ("wait < 0.5 ms", "wait 0.5-5 ms", "wait 5-20 ms", "wait >= 20 ms"), median_task_time_error the typical task's (the median task's measured over
    calibrated time; far under task_time_error: a tail of stalled tasks), its speedup_error and speedup_error_ci paired by round as step_error, and
    predicted_rounds_s and measured_rounds_s every round's figures), the summary a dict with
    mean_abs_step_error, max_abs_step_error, mean_abs_speedup_error, max_abs_speedup_error,
    speedup_error_ci (the median over rows beyond one processor of their speedup_error_ci),
    mean_abs_replay_error, max_abs_replay_error, kendall_tau per processor count, noise_floor (the
    median spread), and without a calibration table the number of calibration tables taken (per run,
    one per processor count: for P processors, timed as concurrent_timing says), the one-processor tables' drift
    (last over first) and spread, co_run_slowdown per P, footprint_slowdown (the median over rounds of
    the one-processor tables' footprint slowdown the rows were scaled by; -1 where none measured one),
    error_ci (the median over rows of each
    step error's 95% confidence half-width), rounds, and separable_kendall_tau per P (tau over the
    pairs of schedules whose measured order is known, with their count), and pair_order per P (the pairs of
    schedules in the predicted order, against it, predicted the same step with the widest measured gap
    of those, and measured the same). With max_runs > runs, rounds are added until
    every row's step and speedup errors are known within target, or max_runs rounds are done. warmup_rounds: whole
    rounds (calibrations and runs) first, none of their figures kept. pin_threads: the runs'
    and the calibrations' threads pinned as run(pin_threads=True) and profile(pin_threads=True) pin
    them. transfer_threads: as run()'s. Each row's measured_peak_memory_bytes is the median run's
    peak (predicted_peak_memory_bytes the median round's), measured_peak_memory_max_bytes the
    highest run's; measured_step_peak_memory_bytes and predicted_step_peak_memory_bytes the same
    of a steady-state minibatch's peak (Result.step_peak_memory_bytes), which leaves out the first
    minibatch and steps a stalled thread reorders, and step_peak_memory_error their error, paired
    by round as step_error. The predicted step peak is the largest over each processor paced
    peak_phase slower and faster than its price, one at a time (None: the row's table's task
    spread, its peak_phase column; 0: the simulated timing alone), since a step peak can hang on
    which of two processors' events comes first (docs/executor.md, "Step peaks over phases");
    predicted_nominal_step_peak_memory_bytes is the simulated timing's own.

    On the CPU, with machine_tolerance > 0, the machine's speed (a fixed piece of arithmetic timed on
    each CPU the runs may use, at most 8) is read before and after every calibration and run,
    and one with a reading beside it more than machine_tolerance off the usual (the median reading so
    far) is taken again, up to machine_retakes times, the last try kept: the summary's
    machine_state gives the readings, the fraction off the usual, and the calibrations and runs
    taken again or kept off it (docs/executor.md, "A machine whose speed jumps"). On any device,
    from the fourth round a table off its earlier peers is taken again, up to machine_retakes
    times: a one-processor table whose minibatch ran more than table_tolerance slower than their
    median, and a table for two or more processors whose co-run slowdown (its minibatch over the
    same round's one-processor table's) was more than co_run_tolerance over theirs (0: none
    judged); the summary's retaken_tables and kept_off_tables count them per processor count
    (docs/executor.md, "tables judged by their peers").

    Cut short: with time_limit_s > 0 no round is begun that would end past that many seconds (a
    round taken to last as long as the one before), and an interrupt (Ctrl-C, a notebook's stop)
    ends the rounds once the one under way is done, with a RuntimeWarning instead of
    KeyboardInterrupt; either way the rounds done are returned, and the summary's stopped_early is
    True. At least one round is always taken.

    device="cuda" validates the CUDA executor, as `pipetwin validate --device cuda` does, placed by
    run()'s placement, partition_sms, gpu, tf32 and gpu_wait; on SM partitions partition_sms must be
    given (one size for every processor count: the CLI takes the largest share for the largest P,
    in multiples of 8 SMs), and the predictions are for hardware h100."""
    _check_device(device)
    names = [schedules] if isinstance(schedules, str) else list(schedules)
    report = _core.validate(_path(model), names, [int(p) for p in processors], microbatches=microbatches,
                            minibatches=minibatches, params=_params(params), calibration=_path(calibration),
                            engine=engine or default_engine(), runs=runs, data=data, data_dir=_path(data_dir),
                            learning_rate=learning_rate, seed=seed, max_runs=max_runs, target=target,
                            pin_threads=pin_threads, transfer_threads=transfer_threads,
                            concurrent_timing=concurrent_timing, warmup_rounds=warmup_rounds,
                            machine_tolerance=machine_tolerance, machine_retakes=machine_retakes,
                            table_tolerance=table_tolerance, co_run_tolerance=co_run_tolerance,
                            time_limit_s=time_limit_s, peak_phase=peak_phase, device=device,
                            placement=placement, partition_sms=partition_sms, gpu=gpu, tf32=tf32, gpu_wait=gpu_wait)
    summary = {k: v for k, v in report.items() if k != "rows"}
    return frame(report["rows"]), summary


@checked
def task_frame(result: Result) -> Union["pandas.DataFrame", Dict[str, Any]]:
    """The per-task table of a Result (kinds, layers, placement, start and end cycles) as a DataFrame,
    or as a dict of numpy columns without pandas."""
    table: Union["pandas.DataFrame", Dict[str, Any]] = frame(result.task_times())
    return table


def frame(table: Any) -> Any:
    """table (rows, or a dict of columns) as a pandas DataFrame, or as it is without pandas."""
    try:
        import pandas
    except ImportError:
        return table
    return pandas.DataFrame(table)
