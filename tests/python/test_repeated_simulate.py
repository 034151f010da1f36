"""1000 simulate calls in one process: identical results and flat memory (SystemC's kernel is one
per process; the simulator reuses its processes)."""
import pipetwin


def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


def test_thousand_simulations_identical_with_flat_memory():
    graph = pipetwin.build_graph(model="lenet5", schedule="1f1b", processors=2, microbatches=4)
    first = pipetwin.simulate(graph).to_dict(task_times=True)
    for _ in range(100):  # warm-up: allocator pools, caches
        pipetwin.simulate(graph)
    before = rss_bytes()
    for _ in range(900):
        assert pipetwin.simulate(graph).to_dict(task_times=True) == first
    grown = rss_bytes() - before
    assert grown < 4 * 2**20, f"resident memory grew by {grown / 2**20:.1f} MiB over 900 simulations"
