// GraphExecution (graph_execution.hpp) across processes (TrainingOptions::distribution,
// ranks.hpp): which rank runs each task, what each rank announces, ships and keeps of another's
// registries, its listener, messages' payloads, and rank 0's gathering of the run.
// graph_execution.hpp includes this at its end; including this alone includes that.
#pragma once
#include "graph_execution.hpp"

namespace pipetwin::exec {

// A processor's tasks run on its rank; a link's on the rank of its processor end (the sender's,
// between two processors).
template <typename B>
std::int32_t GraphExecution<B>::rank_of_task(const Task& t) const {
  const auto processors = static_cast<std::int32_t>(g_.processors.size());
  const std::int32_t ranks = options_.distribution->transport->ranks();
  if (t.placement == Placement::processor) return rank_of_processor(t.resource, processors, ranks);
  return rank_of_link(link_of(t), processors, ranks);
}

template <typename B>
std::int32_t GraphExecution<B>::receiving_rank(const Task& t) const {
  return rank_of_processor(link_of(t).dst, static_cast<std::int32_t>(g_.processors.size()),
                           options_.distribution->transport->ranks());
}

template <typename B>
bool GraphExecution<B>::sends_away(const Task& t) const {
  if (!distributed() || !is_link_task(t) || t.kind != TaskKind::X || t.collective >= 0) return false;
  return link_of(t).dst != kHost && receiving_rank(t) != rank_of_task(t);
}

// Which rank runs each task, which other ranks each of this rank's tasks must tell, and how many
// messages this rank will receive. Refuses graphs whose data would cross ranks other than by a
// transfer to the reading task's processor, a shipped stash or version, or an all-reduce's step.
template <typename B>
void GraphExecution<B>::plan_ranks() {
  const RankTransport& transport = *options_.distribution->transport;
  rank_ = transport.rank();
  const auto processors = static_cast<std::int32_t>(g_.processors.size());
  if (transport.ranks() > processors) {
    throw Error("a run across processes needs at least one processor per rank: " + std::to_string(transport.ranks()) +
                " ranks, but the graph has " + std::to_string(processors) + " processors");
  }
  if (!(options_.distribution->message_timeout_s > 0)) throw Error("the message timeout must be positive");
  if (!PacksTensors<B>::value) throw Error("the " + name_ + " executor cannot run across processes yet");
  const auto n = g_.tasks.size();
  task_rank_.resize(n);
  for (const auto& t : g_.tasks) task_rank_[static_cast<std::size_t>(t.id)] = rank_of_task(t);
  notify_.assign(n, {});
  ship_to_.assign(n, {});
  shipped_.assign(n, {});
  reads_registry_.assign(n, false);
  std::set<std::pair<std::int32_t, std::int32_t>> heard;  // (task, rank): the task's end reaches that rank
  const auto hear = [&](std::int32_t source, std::int32_t to) {
    const std::int32_t from = task_rank_[static_cast<std::size_t>(source)];
    if (from == to || !heard.insert({source, to}).second) return;
    if (to == rank_) ++messages_expected_;
    if (from == rank_) notify_[static_cast<std::size_t>(source)].push_back(to);
  };
  plan_stashes(hear);
  plan_versions(hear);
  plan_registry_readers();
  plan_collectives(hear);
  for (const auto& t : g_.tasks) {
    const std::int32_t to = task_rank_[static_cast<std::size_t>(t.id)];
    for (const auto& d : t.deps) {
      const Task& source = task(d.task);
      const std::int32_t from = task_rank_[static_cast<std::size_t>(d.task)];
      if (from == to) continue;
      // What crosses ranks: a transfer's data, to the rank of its receiving processor; a stash,
      // which its maker ships to every rank that reads it (plan_stashes); an all-reduce step's
      // gradient sums (plan_collectives); or the end of a task.
      const bool carried = (sends_away(source) && to == receiving_rank(source)) || source.collective >= 0;
      if (d.carries != Carries::order && d.carries != Carries::stash && !carried) {
        throw Error("a run across processes cannot run " + describe_task(g_, t) + " on rank " + std::to_string(to) +
                    ": it reads the " + to_string(d.carries) + " of " + describe_task(g_, source) + " on rank " +
                    std::to_string(from) + " without a transfer to its processor");
      }
      hear(d.task, to);
    }
    if (sends_away(t)) hear(t.id, receiving_rank(t));  // its data
  }
}

// The stash a task reads from the registry, when it reads one: a backward's own; an offload's or
// reload's (move() reads stash(t)); a transfer's that copies a forward's stashed input.
template <typename B>
bool GraphExecution<B>::reads_stash(const Task& t, StashKey* key) const {
  if (!is_link_task(t)) {
    if (!is_backward(t.kind)) return false;
    *key = flow_.stash_key(t);
    return true;
  }
  if (t.kind == TaskKind::OFF || t.kind == TaskKind::ON) {
    *key = flow_.stash_key(t);
    return true;
  }
  const Dep* moved = data_dependency(t);
  if (moved == nullptr || moved->carries != Carries::stash || t.collective >= 0 || reads_output(task(moved->task), t, *moved)) return false;
  *key = flow_.stash_key(task(moved->task));
  return true;
}

// Across ranks, a stash that transfers bring to every reader on this rank (plan_stashes) is this
// rank's registry entry, which its backwards read: the first copy to arrive is moved in, and a
// later one adds the forward's input where the first lacked it (a BA part's copy has none, a
// BW's has). The bytes stay accounted as the transfers' outputs, as the graph declares them.
template <typename B>
void GraphExecution<B>::keep_transferred_stash(const Task& x) {
  if (!distributed() || x.kind != TaskKind::X) return;
  Payload& p = *payloads_[static_cast<std::size_t>(x.id)];
  if (p.stash.empty()) return;
  const Task& source = origin(x);
  const StashKey key = flow_.stash_key(source);
  if (stash_by_transfer_here_.count(key) == 0) return;
  if (!last_stash_hop_[static_cast<std::size_t>(x.id)]) return;  // an earlier hop: the last one keeps it
  std::lock_guard<std::mutex> lock(registry_mutex_);
  auto& kept = stashes_[key];
  if (!kept) {
    kept = std::make_shared<Stash>();
    kept->layers = std::move(p.stash);
    kept->owner = source.id;
    kept->location = link_of(x).dst;
    kept->readers_left = stash_readers_here_.at(key);
    return;
  }
  for (std::size_t i = 0; i < kept->layers.size() && i < p.stash.size(); ++i) {
    if (b_.bytes(kept->layers[i].input) == 0) kept->layers[i].input = std::move(p.stash[i].input);
  }
}

// A stash read on another rank than its maker's (the forward, or its recomputation) is shipped
// with the maker's announcement; announcements precede the maker's dependents (run_task), so it
// arrives before any transfer that follows the maker. Where every reader on a rank has the stash
// brought by a transfer (LayerPipe's backwards away from their forward's processor), the
// transfers' copies are that rank's stash instead (keep_transferred_stash), and nothing is
// shipped. A recomputation must run on its forward's rank.
template <typename B>
template <typename Hear>
void GraphExecution<B>::plan_stashes(Hear& hear) {
  std::map<StashKey, std::int32_t> maker;
  std::map<StashKey, std::int32_t> forward;
  for (const auto& t : g_.tasks) {
    if (is_link_task(t)) continue;
    if (t.kind == TaskKind::F) forward[flow_.stash_key(t)] = t.id;
    if ((t.kind == TaskKind::F && !flow_.recomputed[static_cast<std::size_t>(t.id)]) || t.kind == TaskKind::RC) {
      maker[flow_.stash_key(t)] = t.id;
    }
  }
  for (const auto& t : g_.tasks) {
    const std::int32_t to = task_rank_[static_cast<std::size_t>(t.id)];
    if (t.kind == TaskKind::RC) {
      const auto f = forward.find(flow_.stash_key(t));
      if (f != forward.end() && task_rank_[static_cast<std::size_t>(f->second)] != to) {
        throw Error("a run across processes cannot run " + describe_task(g_, t) + " on rank " + std::to_string(to) +
                    ": it recomputes from the input kept by " + describe_task(g_, task(f->second)) + " on rank " +
                    std::to_string(task_rank_[static_cast<std::size_t>(f->second)]));
      }
    }
  }
  // Per stash and reading rank: whether every reader there has it brought by a transfer.
  std::map<std::pair<StashKey, std::int32_t>, bool> all_by_transfer;
  last_stash_hop_.assign(g_.tasks.size(), false);
  for (const auto& t : g_.tasks) {
    const std::int32_t brought = flow_.stash_transfer[static_cast<std::size_t>(t.id)];
    if (brought >= 0) last_stash_hop_[static_cast<std::size_t>(brought)] = true;
    StashKey key;
    if (!reads_stash(t, &key)) continue;
    const auto [at, added] = all_by_transfer.emplace(std::make_pair(key, task_rank_[static_cast<std::size_t>(t.id)]), true);
    at->second = at->second && brought >= 0;
  }
  for (const auto& t : g_.tasks) {
    const std::int32_t to = task_rank_[static_cast<std::size_t>(t.id)];
    StashKey key;
    if (!reads_stash(t, &key)) continue;
    const auto m = maker.find(key);
    if (m == maker.end() || task_rank_[static_cast<std::size_t>(m->second)] == to) continue;
    if (all_by_transfer.at({key, to})) {  // the transfers' copies are this rank's stash
      if (to == rank_) stash_by_transfer_here_.insert(key);
      continue;
    }
    auto& ranks = ship_to_[static_cast<std::size_t>(m->second)];
    if (std::find(ranks.begin(), ranks.end(), to) == ranks.end()) ranks.push_back(to);
    hear(m->second, to);
    if (to != rank_) continue;
    // Kept where this rank's first reader takes it from: host memory for a reload, else the reader's processor.
    const std::int32_t home = is_link_task(t) ? link_of(t).src : t.resource;
    auto [at, added] = stash_home_here_.emplace(key, home);
    if (!added && is_link_task(t)) at->second = home;
  }
}

// A weight version read on another rank than its update's, by a task of the stage that no
// transfer brings it to (LayerPipe's BW near its layer's home), is shipped with the update's
// announcement, which precedes everything that follows the update (run_task). (That rank's copy
// is not accounted: the graph declares none.)
template <typename B>
template <typename Hear>
void GraphExecution<B>::plan_versions(Hear& hear) {
  for (const auto& t : g_.tasks) {
    if (is_link_task(t) || t.stage < 0 || t.version_read < 0) continue;
    const auto writer = flow_.version_writer.find({t.stage, t.version_read});
    if (writer == flow_.version_writer.end()) continue;  // the initial weights: every rank has them
    const std::int32_t to = task_rank_[static_cast<std::size_t>(t.id)];
    if (task_rank_[static_cast<std::size_t>(writer->second)] == to) continue;
    auto& ranks = ship_to_[static_cast<std::size_t>(writer->second)];
    if (std::find(ranks.begin(), ranks.end(), to) == ranks.end()) ranks.push_back(to);
    hear(writer->second, to);
  }
}

// This rank's readers of each stash and weight version: its backwards and its stages' tasks, and
// its transfers that copy a stash or a version out of the registry (each frees after its last
// reader here).
template <typename B>
void GraphExecution<B>::plan_registry_readers() {
  for (const auto& t : g_.tasks) {
    if (task_rank_[static_cast<std::size_t>(t.id)] != rank_) continue;
    StashKey key;
    if (reads_stash(t, &key)) {
      ++stash_readers_here_[key];
      if (is_link_task(t) && t.kind == TaskKind::X) reads_registry_[static_cast<std::size_t>(t.id)] = true;
    }
    if (!is_link_task(t)) {
      if (t.stage >= 0 && t.version_read >= 0) {
        const StageInfo& stage = g_.stages.at(static_cast<std::size_t>(t.stage));
        for (std::int32_t l = stage.first_layer; l <= stage.last_layer; ++l) ++version_readers_here_[{flow_.layer_key(t, l), t.version_read}];
      }
      continue;
    }
    const Dep* moved = data_dependency(t);
    if (moved == nullptr || moved->carries != Carries::weights || t.collective >= 0 || reads_output(task(moved->task), t, *moved)) continue;
    const Task& source = task(moved->task);
    if (source.stage < 0) continue;
    const StageInfo& stage = g_.stages.at(static_cast<std::size_t>(source.stage));
    for (std::int32_t l = stage.first_layer; l <= stage.last_layer; ++l) ++version_readers_here_[{flow_.layer_key(source, l), source.version_written}];
    reads_registry_[static_cast<std::size_t>(t.id)] = true;
  }
}

// Data parallelism: each all-reduce step that crosses ranks carries the replicas' gradient sums
// its receiving rank lacks (collective_shipments.hpp), so that every rank's updates sum every
// replica's, in rank order, as one process does. Another rank's sum is kept here from its first
// arrival until the last thing that happens to it here: another arrival, a step carrying it on,
// or this rank's sum of the replicas.
template <typename B>
template <typename Hear>
void GraphExecution<B>::plan_collectives(Hear& hear) {
  if (g_.collectives.empty()) return;
  step_carries_ = plan_collective_shipments(g_, flow_, task_rank_, options_.distribution->transport->ranks());
  for (const auto& [step, sums] : step_carries_) {
    const std::int32_t to = receiving_rank(task(step));
    ship_to_[static_cast<std::size_t>(step)] = {to};
    hear(step, to);
    const auto& updates = flow_.collective_updates.at(task(step).collective);
    const bool sums_here = std::any_of(updates.begin(), updates.end(),
                                       [&](std::int32_t u) { return task_rank_[static_cast<std::size_t>(u)] == rank_; });
    for (const auto v : sums) {
      if (to == rank_) {  // an arrival, and (once) this rank's sum of the replicas
        const bool first = arrived_sum_uses_.find(v) == arrived_sum_uses_.end();
        arrived_sum_uses_[v] += 1 + (first && sums_here ? 1 : 0);
      }
      if (task_rank_[static_cast<std::size_t>(step)] == rank_ && task_rank_[static_cast<std::size_t>(v)] != rank_) ++arrived_sum_uses_[v];
    }
  }
}

// An all-reduce step's shipment: (count, then per sum: its update's id, its layers' gradients).
template <typename B>
void GraphExecution<B>::pack_carried_sums(const Task& step) {
  if constexpr (PacksTensors<B>::value) {
    const auto carries = step_carries_.find(step.id);
    if (carries == step_carries_.end()) return;
    ByteWriter w;
    w.value(static_cast<std::int64_t>(carries->second.size()));
    std::lock_guard<std::mutex> lock(registry_mutex_);
    for (const auto v : carries->second) {
      const auto sum = accumulators_.find(v);
      if (sum == accumulators_.end()) {
        throw Error("internal: " + describe_task(g_, step) + " carries the gradient sum of " + describe_task(g_, task(v)) +
                    ", which rank " + std::to_string(rank_) + " does not hold");
      }
      w.value(static_cast<std::int64_t>(v));
      w.value(static_cast<std::int64_t>(sum->second.size()));
      for (const auto& g : sum->second) b_.pack(w, g);
      if (task_rank_[static_cast<std::size_t>(v)] != rank_) drop_arrived_sum(v);
    }
    shipped_[static_cast<std::size_t>(step.id)] = std::move(w.bytes());
  }
}

template <typename B>
void GraphExecution<B>::drop_arrived_sum(std::int32_t update) {
  const auto uses = arrived_sum_uses_.find(update);
  if (uses != arrived_sum_uses_.end() && --uses->second > 0) return;
  accumulators_.erase(update);
}

// A backward adds its weight gradients straight into its update's sum (no buffer of its own, no
// pass to add it, no lock held while it adds) where the backend adds into gradients and every
// backward that sums into that update runs on one thread, so that they add one at a time.
template <typename B>
void GraphExecution<B>::plan_sums_in_place() {
  sums_in_place_.assign(g_.tasks.size(), false);
  if constexpr (AddsIntoGradients<B>::value) {
    std::vector<std::int32_t> thread(g_.tasks.size(), -1);  // per update: the thread of its backwards
    for (const auto& t : g_.tasks) {
      const std::int32_t u = flow_.accumulate_into[static_cast<std::size_t>(t.id)];
      if (u < 0) continue;
      const std::int32_t runner = threads_.runner[static_cast<std::size_t>(t.id)];
      auto& first = thread[static_cast<std::size_t>(u)];
      if (first == -1) {
        first = runner;
        sums_in_place_[static_cast<std::size_t>(u)] = true;
      } else if (first != runner) {
        sums_in_place_[static_cast<std::size_t>(u)] = false;
      }
    }
  }
}

// The other ranks waiting for `t`: a transfer's receiver has its data already (sends_away).
template <typename B>
void GraphExecution<B>::announce(const Task& t) {
  const std::int32_t receiver = sends_away(t) ? receiving_rank(t) : -1;
  static const std::vector<unsigned char> ended;
  const auto& ship_to = ship_to_[static_cast<std::size_t>(t.id)];
  for (const auto r : notify_[static_cast<std::size_t>(t.id)]) {
    if (r == receiver) continue;
    const bool shipping = std::find(ship_to.begin(), ship_to.end(), r) != ship_to.end();
    send_to_rank(r, t.id, shipping ? shipped_[static_cast<std::size_t>(t.id)] : ended);  // a copy each
  }
  shipped_[static_cast<std::size_t>(t.id)] = {};
}

template <typename B>
const Task& GraphExecution<B>::origin(const Task& t) const {
  const Task* at = &t;
  while (is_link_task(*at)) {
    const Dep* moved = data_dependency(*at);
    if (moved == nullptr) break;
    at = &task(moved->task);
  }
  return *at;
}

// What a message from another rank brings: a transfer's data (kept as its output; weight versions
// also in this rank's registry), or a forward's stash (kept for this rank's backwards).
template <typename B>
void GraphExecution<B>::keep_arrived(const Task& t, const RankMessage& message) {
  if (sends_away(t)) {
    std::unique_ptr<Payload> out = unpack_payload(message, link_of(t).dst);
    const Task& source = origin(t);
    if (!out->weights.empty() && source.stage >= 0) {
      const StageInfo& stage = g_.stages.at(static_cast<std::size_t>(source.stage));
      std::lock_guard<std::mutex> lock(registry_mutex_);
      for (std::int32_t l = stage.first_layer; l <= stage.last_layer; ++l) {
        versions_.emplace(std::make_pair(flow_.layer_key(source, l), source.version_written),
                          out->weights.at(static_cast<std::size_t>(l - stage.first_layer)));
      }
    }
    keep(t, std::move(out), link_of(t).dst);
    keep_transferred_stash(t);
    return;
  }
  if (message.bytes.empty()) return;
  if constexpr (PacksTensors<B>::value) {
    ByteReader r(message);
    if (t.collective >= 0) {  // replicas' gradient sums, for this rank's updates
      const std::int64_t count = r.count<char>();
      std::lock_guard<std::mutex> lock(registry_mutex_);
      for (std::int64_t i = 0; i < count; ++i) {
        const auto v = r.value<std::int64_t>();
        if (v < 0 || v >= static_cast<std::int64_t>(g_.tasks.size()) || task(static_cast<std::int32_t>(v)).kind != TaskKind::U) {
          throw Error("a message between ranks is malformed: a gradient sum of task " + std::to_string(v));
        }
        std::vector<Params> sum(static_cast<std::size_t>(r.count<char>()));
        for (auto& g : sum) b_.unpack(r, g, task(static_cast<std::int32_t>(v)).resource);
        accumulators_.try_emplace(static_cast<std::int32_t>(v), std::move(sum));  // the same sum, however often it comes
        drop_arrived_sum(static_cast<std::int32_t>(v));
      }
      return;
    }
    if (t.kind == TaskKind::U) {  // the version it wrote, for this rank's readers
      const StageInfo& stage = g_.stages.at(static_cast<std::size_t>(t.stage));
      if (r.count<char>() != stage.last_layer - stage.first_layer + 1) throw Error("a message between ranks is malformed: a version's layers");
      // Placed with this rank's first processor (the CUDA executor runs a rank's processors on one GPU).
      const std::int32_t here = first_processor_of_rank(rank_, static_cast<std::int32_t>(g_.processors.size()),
                                                        options_.distribution->transport->ranks());
      std::lock_guard<std::mutex> lock(registry_mutex_);
      for (std::int32_t l = stage.first_layer; l <= stage.last_layer; ++l) {
        Params w;
        b_.unpack(r, w, here);
        versions_.emplace(std::make_pair(flow_.layer_key(t, l), t.version_written), std::make_shared<const Params>(std::move(w)));
      }
      return;
    }
    const StashKey key = flow_.stash_key(t);
    const auto home = stash_home_here_.find(key);
    const auto readers = stash_readers_here_.find(key);
    if (home == stash_home_here_.end() || readers == stash_readers_here_.end()) {
      throw Error("the stash of " + describe_task(g_, t) + " arrived from another rank, but no task of rank " +
                  std::to_string(rank_) + " reads it");
    }
    auto kept = std::make_shared<Stash>();
    kept->layers.resize(static_cast<std::size_t>(r.count<char>()));
    for (auto& layer : kept->layers) b_.unpack(r, layer, home->second);
    kept->owner = t.id;
    kept->location = home->second;
    kept->bytes = stash_bytes(kept->layers);
    kept->readers_left = readers->second;
    memory_.allocate({BufferKind::stash, t.id, -1}, kept->location, kept->bytes, t.id);
    std::lock_guard<std::mutex> lock(registry_mutex_);
    stashes_[key] = std::move(kept);
  }
}

// This rank's listener: keeps each arriving transfer's data as that transfer's output, and marks
// each announced task done, until every expected message has come or the run failed.
template <typename B>
void GraphExecution<B>::listen() {
  constexpr auto kPostedPoll = std::chrono::microseconds(200);
  RankTransport& transport = *options_.distribution->transport;
  try {
    RankMessage message;
    std::int64_t idle_since_ns = 0;     // once the workers are done: since the last message
    std::int64_t drained_since_ns = 0;  // when the workers were done (0: not yet)
    for (std::int64_t heard = 0; heard < messages_expected_ && !failed_;) {
      bool draining = false, wanted = true;
      {
        // Unwanted, it still polls now and then while this rank's posted messages are on their
        // way, so that they move on (a large one waits for its receiver to take it).
        std::unique_lock<std::mutex> lock(listen_mutex_);
        const auto woken = [&] { return failed_ || listen_wanted_ > 0 || workers_done_; };
        if (transport.posting()) {
          wanted = listen_wake_.wait_for(lock, kPostedPoll, woken);
        } else {
          listen_wake_.wait(lock, woken);
        }
        draining = workers_done_;
      }
      if (draining && !drained_since_ns) drained_since_ns = idle_since_ns = now_ns();
      if (failed_) break;
      if (!transport.receive(message, wanted ? 0.002 : 0.0)) {
        if (draining && static_cast<double>(now_ns() - idle_since_ns) * 1e-9 > options_.distribution->message_timeout_s) {
          throw Error("every task of rank " + std::to_string(rank_) + " has ended, but " +
                      std::to_string(messages_expected_ - heard) + " messages from other ranks never came");
        }
        continue;
      }
      idle_since_ns = now_ns();
      ++heard;
      heard_from_ns_[static_cast<std::size_t>(message.from_rank)] = now_ns();
      if (message.task < 0 || message.task >= static_cast<std::int32_t>(g_.tasks.size())) {
        throw Error("a message from rank " + std::to_string(message.from_rank) +
                    " names task " + std::to_string(message.task) + ", which the graph does not have (do all ranks build the same graph?)");
      }
      const Task& t = task(message.task);
      keep_arrived(t, message);
      mark_done(t.id);
    }
  } catch (...) {
    fail(std::current_exception());
  }
}

template <typename B>
bool GraphExecution<B>::pin_to(std::int32_t processor) {
  if (options_.pin_cpus.empty() || processor < 0) return true;
  try {
    pin_this_thread(pinned_cpu(options_.pin_cpus, processor));
    return true;
  } catch (...) {
    fail(std::current_exception());
    return false;
  }
}

template <typename B>
void GraphExecution<B>::want_listener(int change) {
  std::lock_guard<std::mutex> lock(listen_mutex_);
  listen_wanted_ += change;
  if (listen_wanted_ > 0) listen_wake_.notify_one();
}

template <typename B>
void GraphExecution<B>::send_to_rank(std::int32_t rank, std::int32_t task_id, std::vector<unsigned char> bytes) {
  options_.distribution->transport->post(rank, task_id, std::move(bytes));  // the listener moves it on
}

// A transfer's output as bytes: each field's count, then its tensors (the backend packs each).
template <typename B>
void GraphExecution<B>::pack_payload(ByteWriter& w, const Payload& p) const {
  if constexpr (!PacksTensors<B>::value) {
    static_cast<void>(w), static_cast<void>(p);
    throw Error("the " + name_ + " executor cannot run across processes yet");
  } else {
    b_.pack(w, p.activation.main);
    b_.pack(w, p.activation.shortcut);
    b_.pack(w, p.input_gradient.main);
    b_.pack(w, p.input_gradient.shortcut);
    w.value(static_cast<std::int64_t>(p.input_gradient.first_sample));
    w.value(static_cast<std::int64_t>(p.output_gradients.size()));
    for (const auto& g : p.output_gradients) {
      b_.pack(w, g.main);
      b_.pack(w, g.shortcut);
      w.value(static_cast<std::int64_t>(g.first_sample));
    }
    w.value(static_cast<std::int64_t>(p.weights.size()));
    for (const auto& x : p.weights) b_.pack(w, *x);
    w.value(static_cast<std::int64_t>(p.weight_gradients.size()));
    for (const auto& g : p.weight_gradients) b_.pack(w, g);
    w.value(static_cast<std::int64_t>(p.stash.size()));
    for (const auto& layer : p.stash) b_.pack(w, layer);
  }
}

template <typename B>
std::unique_ptr<typename GraphExecution<B>::Payload> GraphExecution<B>::unpack_payload(const RankMessage& message,
                                                                                    std::int32_t to) const {
  auto p = std::make_unique<Payload>();
  if constexpr (!PacksTensors<B>::value) {
    static_cast<void>(message), static_cast<void>(to);
    throw Error("the " + name_ + " executor cannot run across processes yet");
  } else {
    ByteReader r(message);
    const auto count = [&r] {
      const auto k = r.value<std::int64_t>();
      if (k < 0 || k > (std::int64_t{1} << 24)) throw Error("a message between ranks is malformed: a list of " + std::to_string(k));
      return static_cast<std::size_t>(k);
    };
    b_.unpack(r, p->activation.main, to);
    b_.unpack(r, p->activation.shortcut, to);
    b_.unpack(r, p->input_gradient.main, to);
    b_.unpack(r, p->input_gradient.shortcut, to);
    p->input_gradient.first_sample = r.value<std::int64_t>();
    p->output_gradients.resize(count());
    for (auto& g : p->output_gradients) {
      b_.unpack(r, g.main, to);
      b_.unpack(r, g.shortcut, to);
      g.first_sample = r.value<std::int64_t>();
    }
    p->weights.resize(count());
    for (auto& x : p->weights) {
      Params w;
      b_.unpack(r, w, to);
      x = std::make_shared<const Params>(std::move(w));
    }
    p->weight_gradients.resize(count());
    for (auto& g : p->weight_gradients) b_.unpack(r, g, to);
    p->stash.resize(count());
    for (auto& layer : p->stash) b_.unpack(r, layer, to);
    if (!r.done()) throw Error("a message between ranks is malformed: bytes left over");
  }
  return p;
}

// Rank 0 gathers every rank's events, loss sums and the newest weights of its layers, and makes
// the run's TrainingRun from them as from one process's; the other ranks' runs hold no result.
template <typename B>
void GraphExecution<B>::gather_run(TrainingRun& run) {
  RankTransport& transport = *options_.distribution->transport;
  const auto processors = static_cast<std::int32_t>(g_.processors.size());
  ByteWriter mine;
  event_log_->pack(mine);
  mine.values(loss_sum_.data(), static_cast<std::int64_t>(loss_sum_.size()));
  std::vector<std::int32_t> own_layers;  // the layers whose stage runs here
  for (std::size_t l = 0; l < net_.size(); ++l) {
    const std::int32_t home = g_.stages[static_cast<std::size_t>(stage_of_layer_[l])].processor;
    if (rank_of_processor(home, processors, transport.ranks()) == rank_) own_layers.push_back(static_cast<std::int32_t>(l));
  }
  mine.values(own_layers.data(), static_cast<std::int64_t>(own_layers.size()));
  for (const auto l : own_layers) {
    const HostWeights w = b_.download(*weights(l, flow_.newest_version[static_cast<std::size_t>(l)], g_.tasks.front()));
    mine.values(w.data(), w.size());
  }
  // A rank that stopped after its last task is found at the gather's barrier, within the timeout.
  const auto all = transport.gather_within(mine.bytes(), options_.distribution->message_timeout_s);
  run.layer_times = layer_log_.take();
  if (rank_ != 0) return;
  std::vector<std::unique_ptr<ByteReader>> readers;
  std::vector<ByteReader*> logs;
  for (const auto& bytes : all) {
    readers.push_back(std::make_unique<ByteReader>(bytes));
    logs.push_back(readers.back().get());
  }
  SummaryObserver merged(g_);
  std::vector<EngineObserver*> told{&merged};
  RankEventLog::replay(logs, told);
  run.result = merged.result(name_, options_.record_memory_timeline);
  run.result.out_of_memory.clear();
  std::vector<double> loss(loss_sum_.size(), 0.0);
  run.final_weights.assign(net_.size(), HostWeights());
  for (auto* r : logs) {
    std::vector<double> part(static_cast<std::size_t>(r->count<double>()));
    if (part.size() != loss.size()) throw Error("a message between ranks is malformed: loss sums of another length");
    r->values(part.data(), static_cast<std::int64_t>(part.size()));
    for (std::size_t k = 0; k < loss.size(); ++k) loss[k] += part[k];  // one rank has the loss layer; the others add 0
    std::vector<std::int32_t> layers(static_cast<std::size_t>(r->count<std::int32_t>()));
    r->values(layers.data(), static_cast<std::int64_t>(layers.size()));
    for (const auto l : layers) {
      if (l < 0 || l >= static_cast<std::int32_t>(net_.size())) throw Error("a message between ranks is malformed: layer " + std::to_string(l));
      HostWeights w(r->count<float>());
      r->values(w.data(), w.size());
      run.final_weights[static_cast<std::size_t>(l)] = std::move(w);
    }
  }
  for (const double sum : loss) run.minibatch_loss.push_back(sum / static_cast<double>(net_.batch * flow_.replicas));
}

}  // namespace pipetwin::exec
