// GraphExecution (graph_execution.hpp), a task's work: its layers on the backend (forwards,
// recomputations, backwards, updates), the payloads it takes and hands on, transfers' copies, the
// registries of stashes, weight versions and gradient sums, and the layer times it records.
// graph_execution.hpp includes this at its end; including this alone includes that.
#pragma once
#include "graph_execution.hpp"

namespace pipetwin::exec {

template <typename B>
void GraphExecution<B>::keep(const Task& t, std::unique_ptr<Payload> out, std::int32_t where) {
  out->accounted_on = where;
  out->accounted_bytes = payload_bytes(*out);
  out->owner = t.id;
  memory_.allocate({BufferKind::output, t.id, -1}, where, out->accounted_bytes, t.id);
  payloads_[static_cast<std::size_t>(t.id)] = std::move(out);
}

template <typename B>
typename GraphExecution<B>::LayerMark GraphExecution<B>::layer_begin(Lane& lane) {
  return options_.record_layer_times ? b_.mark_layer(lane) : LayerMark{};
}

template <typename B>
typename GraphExecution<B>::LayerSpan GraphExecution<B>::layer_span(Lane& lane, const LayerMark& begin) {
  return options_.record_layer_times ? LayerSpan{begin, b_.mark_layer(lane)} : LayerSpan{};
}

template <typename B>
void GraphExecution<B>::record_layer(const Task& t, Lane& lane, std::int32_t layer, TaskKind kind, const LayerMark& begin) {
  if (options_.record_layer_times) record_layer_spans(t, layer, kind, {layer_span(lane, begin)});
}

template <typename B>
void GraphExecution<B>::record_layer_spans(const Task& t, std::int32_t layer, TaskKind kind, const LayerSpans& spans) {
  if (!options_.record_layer_times) return;
  // Only the task's own thread touches its slot.
  auto& timings = layer_timings_[static_cast<std::size_t>(t.id)];
  if (timings.empty()) timings.reserve(static_cast<std::size_t>(t.last_layer - t.first_layer + 1) * 3);  // B: BW, BA, B
  timings.push_back({layer, kind, spans});
}

// Only the task's own thread touches its slots.
template <typename B>
void GraphExecution<B>::read_layer_times(const Task& t, Lane& lane) {
  if (!options_.record_layer_times) return;
  auto& timings = layer_timings_[static_cast<std::size_t>(t.id)];
  if (timings.empty()) return;
  const auto reading_from = Clock::now();  // after the task's end: time its run would not have spent
  b_.finish(lane);
  auto& read = layer_times_[static_cast<std::size_t>(t.id)];
  read.reserve(timings.size());
  for (const auto& timing : timings) {
    double seconds = 0;
    for (const auto& span : timing.spans) seconds += b_.seconds_between(lane, span.from, span.to);
    // A backward's spans begin with its way back to the linear output (backward, below).
    const bool backward = is_backward(timing.kind) && timing.spans.size() >= 2;
    const double to_linear_s =
        backward ? b_.seconds_between(lane, timing.spans.front().from, timing.spans.front().to) : 0.0;
    read.push_back({t.id, timing.layer, timing.kind, seconds, to_linear_s});
  }
  timings.clear();
  timings.shrink_to_fit();
  b_.forget_layer_marks(lane);
  layer_reading_s_[static_cast<std::size_t>(t.id)] = std::chrono::duration<double>(Clock::now() - reading_from).count();
}

// In task order, as the run's layer times (layer_log_) keep them.
template <typename B>
void GraphExecution<B>::report_layer_times() {
  for (auto& task_times : layer_times_) {
    for (const LayerTime& time : task_times) observers_.layer_timed(time.task, time.layer, time.kind, time.seconds, time.to_linear_s);
    task_times.clear();
  }
}

template <typename B>
typename GraphExecution<B>::ParamsPtr GraphExecution<B>::weights(std::int32_t layer, std::int32_t version, const Task& reader) {
  std::lock_guard<std::mutex> lock(registry_mutex_);
  const auto it = versions_.find({flow_.layer_key(reader, layer), version});
  if (it == versions_.end()) {
    throw Error("schedule error: " + describe_task(g_, reader) + " reads version " + std::to_string(version) +
                " of layer " + std::to_string(layer) + ", which no finished update wrote (a missing dependency)");
  }
  return it->second;
}

template <typename B>
void GraphExecution<B>::store_weights(std::int32_t layer_key, std::int32_t version, ParamsPtr value) {
  std::lock_guard<std::mutex> lock(registry_mutex_);
  versions_[{layer_key, version}] = std::move(value);
}

// The bytes of one stored version of every layer of a stage (accounted as one weights buffer).
template <typename B>
std::int64_t GraphExecution<B>::stage_weight_bytes(std::int32_t stage, std::int32_t version) {
  const StageInfo& s = g_.stages.at(static_cast<std::size_t>(stage));
  const std::int32_t replica_layers = stage / flow_.stages_per_replica * flow_.layers;
  std::int64_t bytes = 0;
  std::lock_guard<std::mutex> lock(registry_mutex_);
  for (std::int32_t l = s.first_layer; l <= s.last_layer; ++l) bytes += b_.bytes(*versions_.at({replica_layers + l, version}));
  return bytes;
}

template <typename B>
std::shared_ptr<typename GraphExecution<B>::Stash> GraphExecution<B>::stash(const Task& t) {
  std::lock_guard<std::mutex> lock(registry_mutex_);
  const auto it = stashes_.find(flow_.stash_key(t));
  if (it == stashes_.end()) throw Error("schedule error: " + describe_task(g_, t) + " runs before the forward it belongs to");
  return it->second;
}

// The layers of a forward or a recomputation, from `in` (on return: the last layer's output);
// the stash they keep, accounted on the task's processor and registered for its backward readers.
template <typename B>
std::shared_ptr<typename GraphExecution<B>::Stash> GraphExecution<B>::run_forward_layers(const Task& t, Lane& lane,
                                                                                        Activation& in, Labels& labels,
                                                                                        double* loss) {
  auto kept = std::make_shared<Stash>();
  kept->layers.resize(static_cast<std::size_t>(t.last_layer - t.first_layer + 1));
  const double loss_scale = static_cast<double>(net_.batch * flow_.replicas);
  bool lent = false;  // the layer before lent its input as the shortcut (ShortcutHandoff)
  for (std::int32_t l = t.first_layer; l <= t.last_layer; ++l) {
    const auto begin = layer_begin(lane);
    const ParamsPtr w = weights(l, t.version_read, t);
    LayerStash& stash = kept->layers[static_cast<std::size_t>(l - t.first_layer)];
    // The loss is the mean over the whole batch: every replica's samples (data parallelism).
    if constexpr (LendsBlockInputs<B>::value) {
      // A block input the next layer of this task adds (and that layer's own input is not one):
      // lent to it and given back, one buffer.
      const auto feeds = [&](std::int32_t layer) { return feeds_residual(net_.layers, static_cast<std::size_t>(layer)); };
      const bool lend = feeds(l) && l < t.last_layer && !feeds(l + 1);
      const bool give_back = lent;
      in = b_.forward(lane, l, *w, std::move(in), stash, &labels, loss_scale, loss, ShortcutHandoff{lend, give_back});
      if (give_back) kept->layers[static_cast<std::size_t>(l - 1 - t.first_layer)].input = std::move(in.shortcut);
      lent = lend;
    } else {
      in = b_.forward(lane, l, *w, std::move(in), stash, &labels, loss_scale, loss);
    }
    record_layer(t, lane, l, t.kind, begin);
  }
  kept->owner = t.id;
  kept->location = t.resource;
  kept->bytes = stash_bytes(kept->layers);
  memory_.allocate({BufferKind::stash, t.id, -1}, t.resource, kept->bytes, t.id);
  return kept;
}

template <typename B>
void GraphExecution<B>::keep_stash(const Task& t, std::shared_ptr<Stash> kept) {
  if constexpr (PacksTensors<B>::value) {
    if (distributed() && !ship_to_[static_cast<std::size_t>(t.id)].empty()) {  // for another rank's readers
      ByteWriter w;
      w.value(static_cast<std::int64_t>(kept->layers.size()));
      for (const auto& layer : kept->layers) b_.pack(w, layer);
      shipped_[static_cast<std::size_t>(t.id)] = std::move(w.bytes());
    }
  }
  const auto& readers_of = distributed() ? stash_readers_here_ : flow_.stash_readers;
  const auto readers = readers_of.find(flow_.stash_key(t));
  kept->readers_left = readers == readers_of.end() ? 0 : readers->second;
  if (kept->readers_left > 0) {
    std::lock_guard<std::mutex> lock(registry_mutex_);
    stashes_[flow_.stash_key(t)] = std::move(kept);
  } else {
    memory_.release({BufferKind::stash, kept->owner, -1}, t.resource, kept->bytes, t.id);
  }
}

// Whether `t` may take `source`'s output field `carries` over instead of copying it: it is that
// field's only reader, on the processor that made it, or (TakesOverArrivals, within one process)
// on the processor a transfer brought it to. The bytes stay accounted to the output until its
// readers end, as the graph declares.
template <typename B>
bool GraphExecution<B>::takes_over(const Task& t, std::int32_t source, Carries carries) const {
  const Task& producer = task(source);
  const auto readers = flow_.field_readers.find({source, carries});
  if (readers == flow_.field_readers.end() || readers->second != 1 || t.placement != Placement::processor) return false;
  if (producer.placement == Placement::processor) return producer.resource == t.resource;
  return TakesOverArrivals<B>::value && !distributed() && producer.kind == TaskKind::X && producer.collective < 0 &&
         link_of(producer).dst == t.resource;
}

// A forward's input: the task before it's output, taken over where it may be, else a copy.
template <typename B>
typename GraphExecution<B>::Activation GraphExecution<B>::input_activation(const Task& t, Lane& lane) {
  const std::int32_t source = the_dep(g_, t, Carries::activation).task;
  if (takes_over(t, source, Carries::activation)) return std::move(payloads_[static_cast<std::size_t>(source)]->activation);
  return b_.copy(lane, payload(source).activation, t.resource);
}

template <typename B>
void GraphExecution<B>::forward(const Task& t, Lane& lane, Payload& out) {
  const std::int64_t n = g_.samples_per_microbatch;
  Activation in;
  Labels labels;
  const bool last = t.last_layer + 1 == static_cast<std::int32_t>(net_.size());
  const bool first = t.first_layer == 0;
  if (first || last) {
    const auto begin = layer_begin(lane);
    b_.load(lane, t.minibatch, sampled_microbatch(t), first ? &in : nullptr, last ? &labels : nullptr);
    // Timed apart at the input, where it copies a microbatch (a calibration's input_load_s); the
    // output's labels alone are a few bytes.
    if (first) record_layer(t, lane, kInputLoadLayer, t.kind, begin);
  }
  if (!first) in = input_activation(t, lane);
  if (b_.samples_of(in) != n) throw Error("internal: forward input has " + std::to_string(b_.samples_of(in)) + " samples");
  const bool recomputed = flow_.recomputed[static_cast<std::size_t>(t.id)];
  if (recomputed) {  // keep only the stage's input; the recomputation runs the layers again from it
    auto input = std::make_shared<KeptInput>(KeptInput{b_.copy(lane, in, t.resource), t.id, t.resource, 0});
    input->bytes = b_.bytes(input->activation);
    memory_.allocate({BufferKind::kept_input, t.id, -1}, t.resource, input->bytes, t.id);
    std::lock_guard<std::mutex> lock(registry_mutex_);
    inputs_[flow_.stash_key(t)] = std::move(input);
  }
  double loss = 0;
  std::shared_ptr<Stash> kept = run_forward_layers(t, lane, in, labels, &loss);
  if (last) {
    if (!std::isfinite(loss)) {
      throw Error("training diverged: the loss is not finite at minibatch " + std::to_string(t.minibatch) +
                  ", microbatch " + std::to_string(t.microbatch) + " (try a smaller learning rate)");
    }
    std::int32_t finished_minibatch = -1;
    {
      std::lock_guard<std::mutex> lock(registry_mutex_);
      loss_sum_[static_cast<std::size_t>(t.minibatch)] += loss;
      if (++loss_parts_[static_cast<std::size_t>(t.minibatch)] == g_.microbatches * flow_.replicas) finished_minibatch = t.minibatch;
    }
    if (finished_minibatch >= 0 && options_.on_minibatch) options_.on_minibatch(finished_minibatch + 1);
  }
  if (recomputed) {
    b_.finish(lane);
    memory_.release({BufferKind::stash, t.id, -1}, t.resource, kept->bytes, t.id);  // the RC makes it again
  } else {
    keep_stash(t, std::move(kept));
  }
  if (!last) out.activation = std::move(in);
}

// RC: the forward's layers again, from the input it kept and with the version it read, so the
// stash its backwards read is the one the forward made (bit for bit; the loss is not counted twice).
template <typename B>
void GraphExecution<B>::recompute(const Task& t, Lane& lane) {
  std::shared_ptr<KeptInput> input;
  {
    std::lock_guard<std::mutex> lock(registry_mutex_);
    const auto it = inputs_.find(flow_.stash_key(t));
    if (it == inputs_.end()) throw Error("schedule error: " + describe_task(g_, t) + " runs before its forward");
    input = std::move(it->second);
    inputs_.erase(it);
  }
  Activation in = b_.copy(lane, input->activation, t.resource);
  Labels labels;
  if (t.last_layer + 1 == static_cast<std::int32_t>(net_.size())) b_.load(lane, t.minibatch, sampled_microbatch(t), nullptr, &labels);
  double loss = 0;
  keep_stash(t, run_forward_layers(t, lane, in, labels, &loss));
  b_.finish(lane);
  memory_.release({BufferKind::kept_input, input->owner, -1}, input->location, input->bytes, t.id);
}

// The gradient at the output of the task's last layer, assembled from the activation-gradient
// slices its dependencies carry (each knows its columns); *found is false when none do.
template <typename B>
typename B::Gradient GraphExecution<B>::output_gradient(const Task& t, Lane& lane, bool* found) {
  std::vector<const Gradient*> slices;
  std::int32_t source = -1;
  for (const auto& d : t.deps) {
    if (d.carries != Carries::activation_gradient) continue;
    slices.push_back(&payload(d.task).input_gradient);
    source = d.task;
  }
  *found = !slices.empty();
  if (slices.empty()) return Gradient();
  // One producer of every sample (not a part of a split), read by this task alone on its own
  // processor: taken over.
  if (slices.size() == 1 && task(source).parts == 1 && takes_over(t, source, Carries::activation_gradient)) {
    return std::move(payloads_[static_cast<std::size_t>(source)]->input_gradient);
  }
  if (!flow_.assembles[static_cast<std::size_t>(t.id)]) return b_.assemble(lane, slices, g_.samples_per_microbatch);
  const auto begin = layer_begin(lane);  // timed apart: the table's assembly_s
  Gradient whole = b_.assemble(lane, slices, g_.samples_per_microbatch);
  record_layer(t, lane, kGradientAssemblyLayer, t.kind, begin);
  return whole;
}

template <typename B>
std::shared_ptr<const typename B::Gradient> GraphExecution<B>::shared_output_gradient(const Task& t, Lane& lane) {
  const std::int32_t group = flow_.assembly_group[static_cast<std::size_t>(t.id)];
  {
    std::lock_guard<std::mutex> lock(registry_mutex_);
    const auto it = assembled_.find(group);
    if (it != assembled_.end()) {
      std::shared_ptr<const Gradient> gradient = it->second.first;
      if (--it->second.second == 0) assembled_.erase(it);
      return gradient;
    }
  }
  // The first of the group: the slices (on this processor, read by this group alone, whose other
  // tasks run after) assembled as any reader's would be; a group has several readers, so none
  // takes them over.
  bool found = false;
  auto gradient = std::make_shared<const Gradient>(output_gradient(t, lane, &found));
  // The slices' room goes back at once: the assembled gradient holds their bytes, which stay
  // accounted to their tasks' outputs until the group's last task ends, as the graph declares.
  b_.finish(lane);
  for (const auto& d : t.deps) {
    if (d.carries == Carries::activation_gradient) payloads_[static_cast<std::size_t>(d.task)]->input_gradient = Gradient();
  }
  std::lock_guard<std::mutex> lock(registry_mutex_);
  assembled_[group] = {gradient, flow_.assembly_readers[static_cast<std::size_t>(group)] - 1};
  return gradient;
}

template <typename B>
void GraphExecution<B>::backward(const Task& t, Lane& lane, Payload& out) {
  const std::int64_t n = g_.samples_per_microbatch;
  const bool last = t.last_layer + 1 == static_cast<std::int32_t>(net_.size());
  const std::shared_ptr<Stash> kept = stash(t);
  const std::int32_t layers = t.last_layer - t.first_layer + 1;
  std::vector<Gradient> at_output(static_cast<std::size_t>(layers));  // per layer, at its output
  bool found = false;
  for (const auto& d : t.deps) {  // a split backward: the BA of the same layers kept the gradients
    if (d.carries != Carries::output_gradients) continue;
    auto& kept_gradients = payloads_[static_cast<std::size_t>(d.task)]->output_gradients;
    const bool take = takes_over(t, d.task, Carries::output_gradients);
    for (std::size_t i = 0; i < kept_gradients.size(); ++i) {
      at_output[i] = take ? std::move(kept_gradients[i]) : b_.copy(lane, kept_gradients[i], t.resource);
    }
    found = true;
  }
  std::shared_ptr<const Gradient> assembled;  // the gradient at the output, shared with its group
  if (!found && !last) {
    if (flow_.assembly_group[static_cast<std::size_t>(t.id)] >= 0) {
      assembled = shared_output_gradient(t, lane);
      found = true;
    } else {
      at_output.back() = output_gradient(t, lane, &found);
    }
  }
  found = found || last;
  if (!found) throw Error("schedule error: " + describe_task(g_, t) + " has no dependency bringing its output gradient");
  std::vector<Params> grads(static_cast<std::size_t>(layers));
  const bool needs_input_grad = t.kind != TaskKind::BW;
  const bool needs_weight_grad = t.kind != TaskKind::BA;
  const std::int32_t u = needs_weight_grad ? flow_.accumulate_into[static_cast<std::size_t>(t.id)] : -1;
  std::vector<Params>* sum = nullptr;  // the update's sum, where this task adds into it in place
  bool starts_sum = false;             // this task's gradients begin it
  if (u >= 0 && sums_in_place_[static_cast<std::size_t>(u)]) {
    std::lock_guard<std::mutex> lock(registry_mutex_);
    sum = &accumulators_[u];  // a map's entry stays where it is while others come and go
    starts_sum = sum->empty();
    if (starts_sum) sum->resize(static_cast<std::size_t>(layers));
  }
  for (std::int32_t l = t.last_layer; l >= t.first_layer; --l) {
    const auto i = static_cast<std::size_t>(l - t.first_layer);
    const bool input_grad = needs_input_grad && l > 0;  // nothing needs the gradient of the network's input
    if (!input_grad && !needs_weight_grad) continue;
    const ParamsPtr w = weights(l, t.version_read, t);
    const Gradient* og = (l + 1 == static_cast<std::int32_t>(net_.size())) ? nullptr
                         : (assembled && l == t.last_layer)         ? assembled.get()
                                                                    : &at_output[i];
    // Back to the linear output once, then the weight and the input gradients from it. The layer
    // times record what a split BA and BW would each cost (both go back to the linear output)
    // and, for a fused B, what it cost.
    auto begin = layer_begin(lane);
    const bool adds = sum != nullptr && !starts_sum;  // into a sum an earlier backward began
    if (needs_weight_grad && !adds) (sum ? (*sum)[i] : grads[i]) = b_.gradient_buffer(lane, l);
    Params* grad = needs_weight_grad ? (sum ? &(*sum)[i] : &grads[i]) : nullptr;
    const auto linear = [&] {
      if constexpr (AddsIntoGradients<B>::value) {
        return b_.to_linear(lane, l, *w, kept->layers[i], og, input_grad, grad, adds);
      } else {
        return b_.to_linear(lane, l, *w, kept->layers[i], og, input_grad, grad);
      }
    }();
    const LayerSpan to_linear = layer_span(lane, begin);
    LayerSpan weight_part, input_part;
    if (needs_weight_grad) {
      begin = layer_begin(lane);
      if constexpr (AddsIntoGradients<B>::value) {
        b_.weight_gradient(lane, l, kept->layers[i], linear, *grad, adds);
      } else {
        b_.weight_gradient(lane, l, kept->layers[i], linear, *grad);
      }
      weight_part = layer_span(lane, begin);
      record_layer_spans(t, l, TaskKind::BW, {to_linear, weight_part});
    }
    if (input_grad) {
      std::int64_t sample_begin = 0, sample_end = n;  // the samples of this BA part
      if (l == t.first_layer) {
        const SampleRange part = part_samples(t, n);
        sample_begin = part.begin;
        sample_end = part.end;
      }
      begin = layer_begin(lane);
      Gradient in = b_.input_gradient(lane, l, *w, linear, og, sample_begin, sample_end);
      input_part = layer_span(lane, begin);
      record_layer_spans(t, l, TaskKind::BA, {to_linear, input_part});
      if (l > t.first_layer) {
        at_output[i - 1] = std::move(in);
      } else {
        out.input_gradient = std::move(in);
      }
    }
    if (t.kind == TaskKind::B) {
      LayerSpans spans{to_linear};
      if (needs_weight_grad) spans.push_back(weight_part);
      if (input_grad) spans.push_back(input_part);
      record_layer_spans(t, l, TaskKind::B, spans);
    }
  }
  if (flow_.sends_output_gradients[static_cast<std::size_t>(t.id)]) out.output_gradients = std::move(at_output);
  if (!needs_weight_grad) return;
  if (sum != nullptr) {
    if (starts_sum) {  // accounted as before it was in place: from the end of the task that begins it
      std::int64_t bytes = 0;
      for (const auto& gr : *sum) bytes += b_.bytes(gr);
      memory_.allocate({BufferKind::gradient_sum, u, task(u).stage}, t.resource, bytes, t.id);
    }
  } else if (u >= 0) {
    std::lock_guard<std::mutex> lock(registry_mutex_);
    auto& kept_sum = accumulators_[u];
    if (kept_sum.empty()) {
      std::int64_t bytes = 0;
      for (const auto& gr : grads) bytes += b_.bytes(gr);
      memory_.allocate({BufferKind::gradient_sum, u, task(u).stage}, t.resource, bytes, t.id);
      kept_sum = std::move(grads);
    } else {
      for (std::size_t i = 0; i < grads.size(); ++i) b_.accumulate(lane, kept_sum[i], grads[i]);
    }
  } else if (flow_.sends_weight_gradient[static_cast<std::size_t>(t.id)]) {
    out.weight_gradients = std::move(grads);
  }
}

template <typename B>
void GraphExecution<B>::update(const Task& t, Lane& lane) {
  const StageInfo& stage = g_.stages.at(static_cast<std::size_t>(t.stage));
  std::vector<Params> sum;
  std::int64_t accumulated_bytes = 0;
  std::int32_t collective = -1;  // the all-reduce of the replicas' gradient sums it waits for
  for (const auto& d : t.deps) collective = std::max(collective, task(d.task).collective);
  {
    std::lock_guard<std::mutex> lock(registry_mutex_);
    if (collective >= 0 && reduced_.find(collective) == reduced_.end()) {
      // The first of the all-reduce's updates to run sums every replica's gradients, in rank
      // order (so every replica gets the same bits); its steps have all ended, so every sum is
      // complete, and none is taken before this.
      const auto& updates = flow_.collective_updates.at(collective);
      std::vector<Params> total;
      for (const auto u : updates) {
        const auto& part = accumulators_.at(u);
        if (total.empty()) {
          for (const auto& g : part) total.push_back(b_.clone(lane, g));
        } else {
          for (std::size_t i = 0; i < total.size(); ++i) b_.accumulate(lane, total[i], part[i]);
        }
      }
      std::int32_t users = 0;  // the updates here that take the sum
      for (const auto u : updates) {
        if (!distributed() || task_rank_[static_cast<std::size_t>(u)] == rank_) {
          ++users;
        } else {
          drop_arrived_sum(u);
        }
      }
      reduced_[collective] = {std::move(total), users};
    }
    const auto it = accumulators_.find(t.id);
    if (it != accumulators_.end()) {
      sum = std::move(it->second);
      accumulators_.erase(it);
      for (const auto& s : sum) accumulated_bytes += b_.bytes(s);
    }
    if (collective >= 0) {  // the replicas' sum replaces its own
      auto& [total, users] = reduced_.at(collective);
      sum.clear();
      for (const auto& g : total) sum.push_back(b_.clone(lane, g));
      if (--users == 0) reduced_.erase(collective);
    }
  }
  // Gradients that arrived over links, in microbatch order (not an all-reduce's steps: they
  // only move the bytes; the sum is taken above).
  std::vector<std::int32_t> arrived;
  for (const auto& d : t.deps) {
    if (d.carries == Carries::weight_gradient && is_link_task(task(d.task)) && task(d.task).collective < 0) {
      arrived.push_back(d.task);
    }
  }
  std::sort(arrived.begin(), arrived.end(), [&](std::int32_t a, std::int32_t b) {
    return task(a).microbatch < task(b).microbatch;
  });
  for (const auto d : arrived) {
    const auto& grads = payload(d).weight_gradients;
    if (sum.empty()) {
      for (const auto& g : grads) sum.push_back(b_.clone(lane, g));
    } else {
      for (std::size_t i = 0; i < sum.size(); ++i) b_.accumulate(lane, sum[i], grads[i]);
    }
  }
  const std::int32_t layers = stage.last_layer - stage.first_layer + 1;
  if (static_cast<std::int32_t>(sum.size()) != layers) {
    throw Error("schedule error: " + describe_task(g_, t) + " has no weight gradient to apply");
  }
  for (std::int32_t l = stage.first_layer; l <= stage.last_layer; ++l) {
    const auto begin = layer_begin(lane);
    const auto i = static_cast<std::size_t>(l - stage.first_layer);
    const ParamsPtr old = weights(l, t.version_read, t);
    Params* velocity = options_.momentum > 0 ? &momentum_[static_cast<std::size_t>(flow_.layer_key(t, l))] : nullptr;
    store_weights(flow_.layer_key(t, l), t.version_written,
                  std::make_shared<const Params>(b_.sgd(lane, *old, std::move(sum[i]), velocity, options_.learning_rate, options_.momentum)));
    record_layer(t, lane, l, TaskKind::U, begin);
  }
  memory_.allocate({BufferKind::weights, t.id, t.stage}, stage.processor, stage_weight_bytes(t.stage, t.version_written), t.id);
  if constexpr (PacksTensors<B>::value) {
    if (distributed() && !ship_to_[static_cast<std::size_t>(t.id)].empty()) {  // for another rank's readers
      ByteWriter w;
      w.value(static_cast<std::int64_t>(stage.last_layer - stage.first_layer + 1));
      for (std::int32_t l = stage.first_layer; l <= stage.last_layer; ++l) b_.pack(w, *weights(l, t.version_written, t));
      shipped_[static_cast<std::size_t>(t.id)] = std::move(w.bytes());
    }
  }
  b_.finish(lane);  // the sums are freed below
  memory_.release({BufferKind::gradient_sum, t.id, t.stage}, t.resource, accumulated_bytes, t.id);
}

// X, OFF, ON: copy the data into a buffer at the other end.
template <typename B>
void GraphExecution<B>::move(const Task& t, Lane& lane, Payload& out) {
  const std::int32_t from = link_of(t).src;
  // Across ranks a copy stays with the sender until its message takes it (the receiving rank
  // places what arrives: unpack).
  const std::int32_t to = sends_away(t) ? from : link_of(t).dst;
  if (t.kind == TaskKind::OFF || t.kind == TaskKind::ON) {
    const std::shared_ptr<Stash> kept = stash(t);
    std::vector<LayerStash> copy;  // the copy over the link
    for (const auto& layer : kept->layers) copy.push_back(b_.copy(lane, layer, to));
    b_.finish(lane);
    memory_.allocate({BufferKind::stash, kept->owner, -1}, to, kept->bytes, t.id);
    kept->layers = std::move(copy);
    memory_.release({BufferKind::stash, kept->owner, -1}, from, kept->bytes, t.id);
    kept->location = to;
    return;
  }
  if (t.collective >= 0) {  // an all-reduce's step: its bytes cross the link; the update sums them
    b_.move_bytes(lane, t.bytes, to);
    return;
  }
  const Dep* moved = data_dependency(t);  // what the transfer carries
  if (moved == nullptr) throw Error("schedule error: " + describe_task(g_, t) + " has nothing to move");
  const Task& source = task(moved->task);
  if (!reads_output(source, t, *moved)) {  // from a registry: a forward's stash, an update's version
    if (moved->carries == Carries::stash) {  // the forward's stash, for a backward elsewhere
      const bool without_input = flow_.stash_without_input[static_cast<std::size_t>(t.id)];
      for (const auto& layer : stash(source)->layers) out.stash.push_back(copy_stash(lane, layer, to, without_input));
    } else if (moved->carries == Carries::weights) {
      const StageInfo& stage = g_.stages.at(static_cast<std::size_t>(source.stage));
      for (std::int32_t l = stage.first_layer; l <= stage.last_layer; ++l) {
        out.weights.push_back(std::make_shared<const Params>(b_.copy(lane, *weights(l, source.version_written, t), to)));
      }
    } else {
      throw Error("schedule error: " + describe_task(g_, t) + " cannot move " + to_string(moved->carries) +
                  " from " + describe_task(g_, source));
    }
    return;
  }
  // Across ranks the message is the copy: a field only this transfer reads goes as it is.
  const auto readers = flow_.field_readers.find({moved->task, moved->carries});
  const bool hand_over = sends_away(t) && readers != flow_.field_readers.end() && readers->second == 1;
  Payload& in = *payloads_[static_cast<std::size_t>(moved->task)];  // the previous hop's copy, or the source's output
  const auto carry = [&](auto& field) -> std::decay_t<decltype(field)> {
    if (hand_over) return std::move(field);
    return b_.copy(lane, field, to);
  };
  switch (moved->carries) {
    case Carries::stash:
      for (auto& layer : in.stash) out.stash.push_back(carry(layer));
      break;
    case Carries::activation:
      out.activation = carry(in.activation);
      break;
    case Carries::activation_gradient:
      out.input_gradient = carry(in.input_gradient);
      break;
    case Carries::weight_gradient:
      for (auto& g : in.weight_gradients) out.weight_gradients.push_back(carry(g));
      break;
    case Carries::weights:
      for (const auto& w : in.weights) out.weights.push_back(std::make_shared<const Params>(b_.copy(lane, *w, to)));
      break;
    default:
      throw Error("schedule error: " + describe_task(g_, t) + " cannot move " + to_string(moved->carries));
  }
}

}  // namespace pipetwin::exec
