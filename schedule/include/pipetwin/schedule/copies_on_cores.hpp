// Transfers whose copies take a processor's core (docs/executor.md, "Calibration"): on a CPU, a
// transfer is a copy, and where the graph has a compute thread for every core the executor has the
// sending processor's thread make it (or, where it cannot, a link thread that shares a core with a
// processor). make_graph charges each such copy to the processor that sends it: to the task whose
// data it copies where the sender's thread copies it, else to the task after that one.
#pragma once
#include <cstdint>
#include <vector>

#include "pipetwin/models/calibration.hpp"
#include "pipetwin/models/hardware.hpp"
#include "pipetwin/schedule/task_graph.hpp"

namespace pipetwin {

// Whether `graph`'s transfers take time from its processors on `hardware`: a CPU calibration is
// attached that recorded its machine's cores, and the graph has at least as many processors.
bool copies_take_cores(const TaskGraph& graph, const HardwareProfile& hardware);
// The same for a graph of `processors` not made yet (a generator placing its tasks).
bool copies_take_cores(std::int32_t processors, const HardwareProfile& hardware);

// The cycles a sender's thread takes to copy a transfer of `bytes` in one process: what the
// calibration measured for a sender's copy of that size (Calibration::sender_copy_s) and the
// thread's gap after it; where it measured none, the bytes at `bytes_per_cycle` (0 where that is 0).
std::int64_t sender_copy_cycles(const Calibration& calibration, std::int64_t bytes, double clock_hz,
                                double bytes_per_cycle);

// Per task: for a transfer its sending processor's thread copies itself (the CPU executor's copies
// on senders), the sender's task it is copied right after: the last of the sender's tasks it
// reads, in the sender's order. -1 for every other task. An in-order link from a processor is
// copied so when every transfer on it reads only tasks of its sender, and placing each after the
// last of them keeps the link's order.
std::vector<std::int32_t> copied_after(const TaskGraph& graph);
// Per link: whether its sender copies its transfers (copied_after).
std::vector<bool> links_copied_by_senders(const TaskGraph& graph);

// Charges the cores for a graph whose every core runs a processor, as the CPU executor runs it
// there. In one process (a table profiled in one process) the links copied by senders (above)
// have no thread of their own: the sender's thread copies each transfer's bytes (in the time the
// calibration measured for a copy of that size, Calibration::sender_copy_s: in its pipeline run
// where it made copies of that size, else copies in a row plus what the pipeline's took beyond
// them; then the thread's gap to its next task, Calibration::task_gap_s) right after the last of its
// tasks the transfer reads (copied_after), which is charged that copy, so that the sender's next
// task starts after it (not, as until 2026-11-25, with it in its own time, which put the copy
// after whatever else that task waited for); the transfer then takes one thread's wake-up (the
// calibration's handoff_s) for its latency, the reader's, which holds the link no longer (its
// delivery_cycles). Several transfers copied after one task are all delivered after all of
// their copies (the executor delivers each after its own). Other links' transfers are copied by link threads that take turns
// with the sender's next task, half each: the task loses the copy's time and the copy takes twice
// as long. Between ranks (a calibration profiled across ranks, rank_layout.hpp) a transfer is a
// message: the sender's share is the calibration's measured core time to pack and post it, and
// the receiver's, to take it from MPI and unpack it, goes to the receiving processor's task before
// the message's first reader there. Transfers from host memory, and those whose source runs
// elsewhere, charge nothing to the sender; a link thread's copy whose source runs last on its
// processor (its core is then free) neither.
void charge_copies_to_cores(TaskGraph& graph, const Calibration& calibration);

}  // namespace pipetwin
