"""Type stubs for pipetwin._core, the C++ core (pybind11)."""
from typing import Any, Dict, List, Optional, Sequence, Union

import numpy as np

Params = Union[None, Dict[str, Any], Sequence[str]]

HAVE_SYSTEMC: bool

class PipetwinError(ValueError): ...

def networks() -> List[Dict[str, Any]]: ...
def schedules() -> List[Dict[str, Any]]: ...
def hardware() -> List[Dict[str, Any]]: ...
def network_layers(model: str, params: Params = None) -> List[Dict[str, Any]]: ...

class Graph:
    schedule: str
    model: str
    hardware: str
    semantics: str
    processors: int
    microbatches: int
    minibatches: int
    samples_per_microbatch: int
    clock_hz: float
    parameters: Dict[str, str]
    schedule_metrics: Dict[str, float]
    stages: List[Dict[str, int]]
    def __len__(self) -> int: ...
    def tasks(self) -> Dict[str, Union[np.ndarray, List[str]]]: ...
    def to_json(self) -> str: ...
    def to_dot(self) -> str: ...
    def save(self, path: str) -> None: ...
    def problems(self) -> List[str]: ...
    @staticmethod
    def from_json(text: str) -> "Graph": ...
    @staticmethod
    def load(path: str) -> "Graph": ...

def build_graph(model: str = "resnet56", schedule: str = "1f1b", hardware: str = "h100", processors: int = 1,
                microbatches: int = 8, minibatches: int = 2, params: Params = None,
                calibration: str = "", drop_other_schedules_params: bool = False) -> Graph: ...

class Result:
    engine: str
    graph: Graph
    total_cycles: int
    total_s: float
    iteration_cycles: float
    iteration_s: float
    busy_cycles: List[int]
    utilization: List[float]
    mean_utilization: float
    bubble_fraction: float
    peak_memory_bytes: List[int]
    host_peak_memory_bytes: int
    link_bytes: List[int]
    link_utilization: List[float]
    out_of_memory: List[str]
    def to_dict(self, task_times: bool = False) -> Dict[str, Any]: ...
    def task_times(self) -> Dict[str, Union[np.ndarray, List[str]]]: ...
    def memory_timeline(self) -> List[Dict[str, np.ndarray]]: ...
    def chrome_trace(self) -> str: ...
    def space_time_diagram(self, width: int = 100) -> str: ...

def run_engine(graph: Graph, engine: str = "systemc", memory_timeline: bool = False) -> Result: ...

class TrainingResult:
    result: Result
    minibatch_loss: List[float]
    test_accuracy: Optional[float]
    test_loss: Optional[float]
    def weights(self) -> List[np.ndarray]: ...

def train(graph: Graph, data: str = "auto", data_dir: str = ..., learning_rate: float = 0.05, momentum: float = 0.0,
          seed: int = 1, test: bool = False, memory_timeline: bool = False) -> TrainingResult: ...
def profile(model: str, microbatches: int = 4, params: Params = None, data: str = "auto", data_dir: str = ...,
            repeats: int = 16, seed: int = 1) -> str: ...
def validate(model: str, schedules: List[str], processors: List[int], microbatches: int = 4, minibatches: int = 16,
             params: Params = None, calibration: str = "", engine: str = "systemc", runs: int = 5,
             data: str = "auto", data_dir: str = ..., learning_rate: float = 0.05, seed: int = 1) -> Dict[str, Any]: ...
