// Transfers whose copies take a processor's core (docs/executor.md, "Calibration"): on a CPU, a
// transfer is a copy made by a link thread, and where the graph has a compute thread for every
// core the link thread shares a core with a processor. make_graph charges each such copy to the
// processor that sends it, on its task after the one whose data it copies, and the copy runs at
// half speed meanwhile.
#pragma once
#include "pipetwin/models/calibration.hpp"
#include "pipetwin/models/hardware.hpp"
#include "pipetwin/schedule/task_graph.hpp"

namespace pipetwin {

// Whether `graph`'s transfers take time from its processors on `hardware`: a CPU calibration is
// attached that recorded its machine's cores, and the graph has at least as many processors.
bool copies_take_cores(const TaskGraph& graph, const HardwareProfile& hardware);

// Adds the cycles a transfer's bytes take to copy on one core (the calibration's
// core_copy_bytes_per_s, else its link's bandwidth; not the latency: the threads' handoff takes no
// core) to the task that follows the transfer's source on the link's sending processor, and as
// much to the transfer itself: the two share that core, half each, so the task loses the copy's
// time and the copy takes that much longer. Between ranks (a calibration profiled across ranks,
// rank_layout.hpp) a transfer is a message: the sender's share is the calibration's measured core
// time to pack and post it, and the receiver's, to take it from MPI and unpack it, goes to the
// receiving processor's task before the message's first reader there. Transfers from host memory,
// and those whose source runs elsewhere or last on its processor (its core is then free), charge
// nothing to the sender.
void charge_copies_to_cores(TaskGraph& graph, const Calibration& calibration);

}  // namespace pipetwin
