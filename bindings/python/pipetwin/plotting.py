"""Figures for notebooks (matplotlib): the space-time diagram of a Result, speedup against P from a
sweep, memory over time, and predicted against measured from validate(). Each returns the
matplotlib Axes it drew on (new ones unless `ax` is given)."""
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple

from ._checks import checked
from ._core import Result

if TYPE_CHECKING:
    from matplotlib.axes import Axes

_COLORS = {"F": "#4c72b0", "B": "#dd8452", "BA": "#c44e52", "BW": "#8172b3", "U": "#55a868", "X": "#937860",
           "OFF": "#8c8c8c", "ON": "#b5b5b5", "RC": "#ccb974"}


def _axes(ax: Optional["Axes"], rows: Optional[int] = None) -> "Axes":
    """The given axes, or new ones: taller with more rows (a third of an inch each), so that row
    labels never overlap."""
    if ax is not None:
        return ax
    import matplotlib.pyplot as plt
    height = 3.0 if rows is None else max(2.0, 0.33 * rows + 1.2)
    axes: "Axes" = plt.subplots(figsize=(10, height))[1]
    return axes


def _time_unit(seconds: float) -> Tuple[float, str]:
    """(divisor, label) for an axis that spans `seconds`."""
    for divisor, label in ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs")):
        if seconds >= 10 * divisor:
            return divisor, label
    return 1e-9, "ns"


@checked
def space_time(result: Result, ax: Optional["Axes"] = None, links: bool = True) -> "Axes":
    """Each processor (and link) a row, each task a bar from its start to its end, coloured by kind;
    time in seconds of the graph's clock. One artist per row and kind, so thousands of tasks draw fast."""
    t = result.task_times()
    graph = result.graph
    seconds_per_cycle = result.total_s / result.total_cycles if result.total_cycles > 0 else 0.0
    divisor, unit = _time_unit(result.total_s)
    scale = seconds_per_cycle / divisor
    rows: Dict[str, int] = {}
    spans: Dict[Tuple[int, str], List[Tuple[float, float]]] = {}
    for i, kind in enumerate(t["kind"]):
        on_link = t["placement"][i] == "link"
        if on_link and not links:
            continue
        key = ("link" if on_link else "p") + str(int(t["resource"][i]))
        y = rows.setdefault(key, len(rows))
        start, end = int(t["start_cycles"][i]), int(t["end_cycles"][i])
        spans.setdefault((y, kind), []).append((start * scale, max(end - start, 0) * scale))
    ax = _axes(ax, len(rows))
    for (y, kind), bars in spans.items():
        ax.broken_barh(bars, (y - 0.4, 0.8), facecolors=_COLORS.get(kind, "#333333"), edgecolor="white",
                       linewidth=0.3)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels(list(rows))
    ax.set_ylim(len(rows) - 0.5, -0.5)
    ax.set_xlim(0, max(result.total_cycles * scale, 1e-12))
    ax.set_xlabel(unit)
    ax.set_title(f"{graph.model} · {graph.schedule} · P={graph.processors} ({result.engine})", loc="left")
    from matplotlib.patches import Patch
    used = sorted(set(t["kind"]), key=list(_COLORS).index)
    ax.legend(handles=[Patch(color=_COLORS[k], label=k) for k in used], ncol=len(used), fontsize="small",
              loc="lower right", bbox_to_anchor=(1.0, 1.0), frameon=False)
    return ax


@checked
def speedup(frame: Any, ax: Optional["Axes"] = None, y: str = "speedup") -> "Axes":
    """Speedup (or any column) against processor count, one line per schedule, from sweep()'s table,
    titled with the model and hardware."""
    ax = _axes(ax)
    rows = frame.to_dict("records") if hasattr(frame, "to_dict") else list(frame)
    if rows:
        models = ", ".join(dict.fromkeys(str(r.get("model", "")) for r in rows))
        hardware = ", ".join(dict.fromkeys(str(r.get("hardware", "")) for r in rows))
        ax.set_title(f"{models} · {hardware}", loc="left")
    for schedule in dict.fromkeys(r["schedule"] for r in rows):
        points = sorted((r["processors"], r[y]) for r in rows if r["schedule"] == schedule and not r.get("error"))
        if points:
            ax.plot([p for p, _ in points], [v for _, v in points], marker="o", label=schedule)
    ax.set_xlabel("processors")
    ax.set_ylabel(y)
    ax.legend(fontsize="small")
    ax.grid(alpha=0.3)
    return ax


@checked
def memory(result: Result, ax: Optional["Axes"] = None) -> "Axes":
    """Live bytes per processor over time (simulate(..., memory_timeline=True))."""
    ax = _axes(ax)
    timelines = result.memory_timeline()
    if not timelines:
        raise ValueError("this Result has no memory timeline: run it with memory_timeline=True")
    seconds_per_cycle = result.total_s / result.total_cycles if result.total_cycles > 0 else 0.0
    divisor, unit = _time_unit(result.total_s)
    for p, points in enumerate(timelines):
        ax.step(points["time_cycles"] * (seconds_per_cycle / divisor), points["bytes"] / 2**20, where="post",
                label=f"p{p}")
    ax.set_xlabel(unit)
    ax.set_ylabel("MiB live")
    ax.legend(fontsize="small")
    return ax


@checked
def predicted_vs_measured(table: Any, ax: Optional["Axes"] = None) -> "Axes":
    """Measured against predicted step time, one point per schedule and P (each labelled with its P),
    with the y = x line."""
    ax = _axes(ax)
    rows = table.to_dict("records") if hasattr(table, "to_dict") else list(table)
    for schedule in dict.fromkeys(r["schedule"] for r in rows):
        mine = [r for r in rows if r["schedule"] == schedule]
        xs = [1e3 * r["predicted_step_s"] for r in mine]
        ys = [1e3 * r["measured_step_s"] for r in mine]
        ax.scatter(xs, ys, label=schedule)
        for x, y, r in zip(xs, ys, mine):
            ax.annotate(f"P={r['processors']}", (x, y), textcoords="offset points", xytext=(4, 3), fontsize="x-small")
    top = max(1e3 * max(r["predicted_step_s"], r["measured_step_s"]) for r in rows) * 1.1
    ax.plot([0, top], [0, top], color="gray", linestyle="--", linewidth=1)
    ax.set_xlabel("predicted step (ms)")
    ax.set_ylabel("measured step (ms)")
    ax.legend(fontsize="small")
    return ax
