// The schedule generators registered in registry.cpp. Each builds a task graph from a request;
// call them through make_graph() or find_schedule(name).generate.
#pragma once
#include <vector>

#include "pipetwin/schedule/pipeline_builder.hpp"

namespace pipetwin {

TaskGraph generate_sequential(const ScheduleRequest& request);
TaskGraph generate_gpipe(const ScheduleRequest& request);
TaskGraph generate_1f1b(const ScheduleRequest& request);
TaskGraph generate_pipedream(const ScheduleRequest& request);
TaskGraph generate_zb_h1(const ScheduleRequest& request);
TaskGraph generate_zb_h2(const ScheduleRequest& request);
TaskGraph generate_interleaved_1f1b(const ScheduleRequest& request);
TaskGraph generate_pipedream_2bw(const ScheduleRequest& request);
TaskGraph generate_stale_weights(const ScheduleRequest& request);
TaskGraph generate_layerwise_merge(const ScheduleRequest& request);
TaskGraph generate_pipefb(const ScheduleRequest& request);
TaskGraph generate_layerpipe(const ScheduleRequest& request);

// One minibatch of 1F1B on one stage: `warmup` forwards (at most all of them), then one forward
// and one backward alternately, then the remaining backwards; optionally an update after each
// backward. 1F1B's warm-up on stage s of S is S-s-1.
std::vector<StageOp> one_f_one_b_order(int stage, int warmup, int minibatch, int microbatches,
                                       bool update_after_each_backward);

// Ops of minibatch 0 whose microbatch is a position in a stream of microbatches, renumbered as
// minibatch position / M and microbatch position % M (for schedules without a flush).
void number_stream(std::vector<StageOp>& ops, int microbatches);

// 1F1B over the whole stream of minibatches x microbatches, without a flush, numbered by
// minibatch and microbatch.
std::vector<StageOp> streamed_one_f_one_b_order(int stage, int warmup, int microbatches, int minibatches,
                                                bool update_after_each_backward);

}  // namespace pipetwin
