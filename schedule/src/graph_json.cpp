// Lossless JSON import/export of task graphs. The writer is deterministic (fixed key order, one
// task or buffer per line), so export(import(text)) reproduces text byte for byte. Version 2 typed
// the dependencies ("carries", "carried_bytes" beside "deps"), split BA parts ("part", "parts") and
// gave each link its policy; version 3 declares memory buffer by buffer ("buffers") in place of
// per-task "alloc_bytes" / "free_bytes"; version 4 adds collectives ("collectives", and a step's
// "collective"). Version 3 files are read (they have none); older ones are rejected with a clear
// message.
#include <sstream>

#include "pipetwin/models/error.hpp"
#include "pipetwin/models/json_read.hpp"
#include "pipetwin/schedule/graph_io.hpp"

namespace pipetwin {
namespace {

using ordered_json = nlohmann::ordered_json;

constexpr const char* kFormat = "pipetwin.taskgraph";
constexpr int kVersion = 4;

ordered_json task_json(const Task& t) {
  ordered_json j;
  j["id"] = t.id;
  j["kind"] = to_string(t.kind);
  j["layers"] = {t.first_layer, t.last_layer};
  j["stage"] = t.stage;
  j["minibatch"] = t.minibatch;
  j["microbatch"] = t.microbatch;
  j["placement"] = to_string(t.placement);
  j["resource"] = t.resource;
  j["order"] = t.order;
  j["cost_cycles"] = t.cost_cycles;
  j["memory_cycles"] = t.memory_cycles;
  std::vector<std::int32_t> ids;
  std::vector<std::string> carries;
  std::vector<std::int64_t> bytes;
  for (const auto& d : t.deps) {
    ids.push_back(d.task);
    carries.emplace_back(to_string(d.carries));
    bytes.push_back(d.bytes);
  }
  j["deps"] = ids;
  j["carries"] = carries;
  j["carried_bytes"] = bytes;
  j["version_read"] = t.version_read;
  j["version_written"] = t.version_written;
  j["bytes"] = t.bytes;
  j["part"] = t.part;
  j["parts"] = t.parts;
  if (t.collective >= 0) j["collective"] = t.collective;
  if (t.wait_exposed_bytes != 0) j["wait_exposed_bytes"] = t.wait_exposed_bytes;
  return j;
}

ordered_json buffer_json(const Buffer& b) {
  ordered_json j;
  j["kind"] = to_string(b.name.kind);
  j["owner"] = b.name.owner;
  j["stage"] = b.name.stage;
  j["where"] = b.where;
  j["bytes"] = b.bytes;
  j["allocated_by"] = b.allocated_by;
  j["freed_after"] = b.freed_after;
  return j;
}

template <typename Items, typename ToJson>
void write_array(std::ostringstream& out, const char* key, const Items& items, ToJson to_json,
                 bool last) {
  out << "  \"" << key << "\": [";
  for (std::size_t i = 0; i < items.size(); ++i) {
    out << (i ? ",\n    " : "\n    ") << to_json(items[i]).dump();
  }
  out << (items.empty() ? "]" : "\n  ]") << (last ? "\n" : ",\n");
}

std::int32_t as_i32(const JsonReader& reader) {
  const std::int64_t value = reader.as_int();
  if (value < INT32_MIN || value > INT32_MAX) reader.fail("a 32-bit integer");
  return static_cast<std::int32_t>(value);
}

}  // namespace

std::string graph_to_json(const TaskGraph& g) {
  std::ostringstream out;
  ordered_json parameters(g.parameters);
  out << "{\n";
  out << "  \"format\": \"" << kFormat << "\",\n";
  out << "  \"version\": " << kVersion << ",\n";
  out << "  \"schedule\": " << ordered_json(g.schedule).dump() << ",\n";
  out << "  \"model\": " << ordered_json(g.model).dump() << ",\n";
  out << "  \"hardware\": " << ordered_json(g.hardware).dump() << ",\n";
  if (g.accelerator != "fixed") {
    ordered_json accelerator = ordered_json::object();
    accelerator["model"] = g.accelerator;
    for (const auto& [key, value] : g.accelerator_settings) accelerator[key] = value;
    out << "  \"accelerator\": " << accelerator.dump() << ",\n";
  }
  out << "  \"parameters\": " << parameters.dump() << ",\n";
  out << "  \"semantics\": \"" << to_string(g.semantics) << "\",\n";
  out << "  \"microbatches\": " << g.microbatches << ",\n";
  out << "  \"minibatches\": " << g.minibatches << ",\n";
  out << "  \"samples_per_microbatch\": " << g.samples_per_microbatch << ",\n";
  out << "  \"clock_hz\": " << ordered_json(g.clock_hz).dump() << ",\n";
  out << "  \"host_memory_capacity_bytes\": " << g.host_memory_capacity_bytes << ",\n";
  out << "  \"schedule_metrics\": " << ordered_json(g.schedule_metrics).dump() << ",\n";
  if (!g.wait_loss.empty()) {  // [[wait cycles, extra cycles per byte], ...]
    ordered_json curve = ordered_json::array();
    for (const auto& point : g.wait_loss) curve.push_back({point.wait_cycles, point.extra_cycles_per_byte});
    out << "  \"wait_loss\": " << curve.dump() << ",\n";
  }
  write_array(out, "processors", g.processors, [](const ProcessorInfo& p) {
    ordered_json j;
    j["name"] = p.name;
    j["memory_capacity_bytes"] = p.memory_capacity_bytes;
    j["static_bytes"] = p.static_bytes;
    j["memory_system"] = p.memory_system;
    return j;
  }, false);
  write_array(out, "links", g.links, [](const LinkInfo& l) {
    ordered_json j;
    j["name"] = l.name;
    j["src"] = l.src;
    j["dst"] = l.dst;
    j["bytes_per_cycle"] = l.bytes_per_cycle;
    j["latency_cycles"] = l.latency_cycles;
    j["shared_group"] = l.shared_group;
    j["policy"] = to_string(l.policy);
    if (l.switched) j["switched"] = true;
    if (l.wake_cycles != 0) j["wake_cycles"] = l.wake_cycles;
    if (l.delivery_cycles != 0) j["delivery_cycles"] = l.delivery_cycles;
    return j;
  }, false);
  write_array(out, "stages", g.stages, [](const StageInfo& s) {
    ordered_json j;
    j["layers"] = {s.first_layer, s.last_layer};
    j["processor"] = s.processor;
    j["forward_processor"] = s.forward_processor;
    j["weight_delay"] = s.weight_delay;
    return j;
  }, false);
  write_array(out, "tasks", g.tasks, task_json, false);
  write_array(out, "buffers", g.buffers, buffer_json, false);
  write_array(out, "collectives", g.collectives, [](const CollectiveInfo& c) {
    ordered_json j;
    j["name"] = c.name;
    j["algorithm"] = c.algorithm;
    j["processors"] = c.processors;
    j["bytes"] = c.bytes;
    return j;
  }, true);
  out << "}\n";
  return out.str();
}

TaskGraph graph_from_json(const std::string& text, const std::string& source) {
  const nlohmann::json document = JsonReader::parse(text, source);
  const JsonReader root(document, source);
  root.check_keys({"format", "version", "schedule", "model", "hardware", "accelerator", "parameters", "semantics",
                   "microbatches", "minibatches", "samples_per_microbatch", "clock_hz", "host_memory_capacity_bytes",
                   "schedule_metrics", "wait_loss", "processors", "links", "stages", "tasks", "buffers", "collectives"});
  if (root.get_string("format") != kFormat) root.at("format").fail(std::string("\"") + kFormat + "\"");
  const std::int64_t version = root.get_int("version");
  if (version == 1 || version == 2) {
    throw Error(source + ": a version " + std::to_string(version) + " task graph (" +
                (version == 1 ? "untyped dependencies" : "per-task memory effects") +
                ", written by an older pipetwin); this pipetwin reads versions 3 and 4: export the schedule again "
                "with `pipetwin schedule ... -o FILE`");
  }
  if (version != 3 && version != kVersion) root.at("version").fail("version 3 or 4");
  TaskGraph g;
  g.schedule = root.get_string("schedule");
  g.model = root.get_string("model");
  g.hardware = root.get_string("hardware");
  if (root.has("accelerator")) {
    const JsonReader accelerator = root.at("accelerator");
    accelerator.require_object();
    g.accelerator = accelerator.get_string("model");
    for (const auto& item : accelerator.value().items()) {
      if (item.key() != "model") g.accelerator_settings[item.key()] = accelerator.at(item.key()).as_string();
    }
  }
  const JsonReader parameters = root.at("parameters");
  parameters.require_object();
  for (const auto& item : parameters.value().items()) {
    g.parameters[item.key()] = parameters.at(item.key()).as_string();
  }
  try {
    g.semantics = weight_semantics_from_string(root.get_string("semantics"));
  } catch (const Error& error) {
    throw Error(source + ": /semantics: " + error.what());
  }
  g.microbatches = as_i32(root.at("microbatches"));
  g.minibatches = as_i32(root.at("minibatches"));
  g.samples_per_microbatch = root.get_int("samples_per_microbatch");
  g.clock_hz = root.get_double("clock_hz");
  if (!(g.clock_hz > 0)) root.at("clock_hz").fail("a positive number");
  g.host_memory_capacity_bytes = root.get_int("host_memory_capacity_bytes");
  if (root.has("schedule_metrics")) {
    const JsonReader metrics = root.at("schedule_metrics");
    metrics.require_object();
    for (const auto& item : metrics.value().items()) {
      g.schedule_metrics[item.key()] = metrics.get_double(item.key());
    }
  }
  if (root.has("wait_loss")) {  // checked by the validator (bounds_problem) as every graph is
    const JsonReader curve = root.at("wait_loss");
    for (std::size_t i = 0; i < curve.array_size(); ++i) {
      const JsonReader point = curve.at(i);
      if (point.array_size() != 2) point.fail("[wait cycles, extra cycles per byte]");
      g.wait_loss.push_back({point.at(0).as_int(), point.at(1).as_double()});
    }
  }

  const JsonReader processors = root.at("processors");
  for (std::size_t i = 0; i < processors.array_size(); ++i) {
    const JsonReader p = processors.at(i);
    p.check_keys({"name", "memory_capacity_bytes", "static_bytes", "memory_system"});
    g.processors.push_back({p.get_string("name"), p.get_int("memory_capacity_bytes"),
                            p.get_int("static_bytes"), as_i32(p.at("memory_system"))});
  }
  const JsonReader links = root.at("links");
  for (std::size_t i = 0; i < links.array_size(); ++i) {
    const JsonReader l = links.at(i);
    l.check_keys({"name", "src", "dst", "bytes_per_cycle", "latency_cycles", "shared_group", "policy", "switched",
                  "wake_cycles", "delivery_cycles"});
    LinkInfo link{l.get_string("name"), as_i32(l.at("src")), as_i32(l.at("dst")),
                  l.get_double("bytes_per_cycle"), l.get_int("latency_cycles"),
                  l.get_string("shared_group")};
    try {
      link.policy = link_policy_from_string(l.get_string("policy"));
    } catch (const Error& error) {
      throw Error(source + ": " + l.path() + "/policy: " + error.what());
    }
    link.switched = l.get_bool("switched", false);
    link.wake_cycles = l.get_int("wake_cycles", 0);
    link.delivery_cycles = l.get_int("delivery_cycles", 0);
    g.links.push_back(link);
  }
  const JsonReader stages = root.at("stages");
  for (std::size_t i = 0; i < stages.array_size(); ++i) {
    const JsonReader s = stages.at(i);
    s.check_keys({"layers", "processor", "forward_processor", "weight_delay"});
    const JsonReader layers = s.at("layers");
    if (layers.array_size() != 2) layers.fail("[first, last]");
    StageInfo stage{as_i32(layers.at(0)), as_i32(layers.at(1)), as_i32(s.at("processor"))};
    if (s.has("forward_processor")) stage.forward_processor = as_i32(s.at("forward_processor"));
    if (s.has("weight_delay")) stage.weight_delay = as_i32(s.at("weight_delay"));
    g.stages.push_back(stage);
  }
  const JsonReader tasks = root.at("tasks");
  g.tasks.reserve(tasks.array_size());
  for (std::size_t i = 0; i < tasks.array_size(); ++i) {
    const JsonReader t = tasks.at(i);
    t.check_keys({"id", "kind", "layers", "stage", "minibatch", "microbatch", "placement",
                  "resource", "order", "cost_cycles", "memory_cycles", "deps", "carries", "carried_bytes",
                  "version_read", "version_written", "bytes", "part", "parts", "collective", "wait_exposed_bytes"});
    Task task;
    task.id = as_i32(t.at("id"));
    if (task.id != static_cast<std::int32_t>(i)) t.at("id").fail("the task's index " + std::to_string(i));
    try {
      task.kind = task_kind_from_string(t.get_string("kind"));
    } catch (const Error& error) {
      throw Error(source + ": " + t.path() + "/kind: " + error.what());
    }
    const JsonReader layers = t.at("layers");
    if (layers.array_size() != 2) layers.fail("[first, last]");
    task.first_layer = as_i32(layers.at(0));
    task.last_layer = as_i32(layers.at(1));
    task.stage = as_i32(t.at("stage"));
    task.minibatch = as_i32(t.at("minibatch"));
    task.microbatch = as_i32(t.at("microbatch"));
    const std::string placement = t.get_string("placement");
    if (placement == "processor") {
      task.placement = Placement::processor;
    } else if (placement == "link") {
      task.placement = Placement::link;
    } else {
      t.at("placement").fail("\"processor\" or \"link\"");
    }
    task.resource = as_i32(t.at("resource"));
    task.order = as_i32(t.at("order"));
    task.cost_cycles = t.get_int("cost_cycles");
    task.memory_cycles = t.get_int("memory_cycles");
    const JsonReader deps = t.at("deps");
    const JsonReader carries = t.at("carries");
    const JsonReader carried_bytes = t.at("carried_bytes");
    if (carries.array_size() != deps.array_size()) carries.fail("one entry per dependency");
    if (carried_bytes.array_size() != deps.array_size()) carried_bytes.fail("one entry per dependency");
    for (std::size_t d = 0; d < deps.array_size(); ++d) {
      Dep dep{as_i32(deps.at(d)), Carries::order, carried_bytes.at(d).as_int()};
      try {
        dep.carries = carries_from_string(carries.at(d).as_string());
      } catch (const Error& error) {
        throw Error(source + ": " + carries.at(d).path() + ": " + error.what());
      }
      task.deps.push_back(dep);
    }
    task.version_read = as_i32(t.at("version_read"));
    task.version_written = as_i32(t.at("version_written"));
    task.bytes = t.get_int("bytes");
    task.part = as_i32(t.at("part"));
    task.parts = as_i32(t.at("parts"));
    if (t.has("collective")) task.collective = as_i32(t.at("collective"));
    if (t.has("wait_exposed_bytes")) task.wait_exposed_bytes = t.get_int("wait_exposed_bytes");
    g.tasks.push_back(std::move(task));
  }
  if (root.has("buffers")) {
    const JsonReader buffers = root.at("buffers");
    for (std::size_t i = 0; i < buffers.array_size(); ++i) {
      const JsonReader b = buffers.at(i);
      b.check_keys({"kind", "owner", "stage", "where", "bytes", "allocated_by", "freed_after"});
      Buffer buffer;
      try {
        buffer.name.kind = buffer_kind_from_string(b.get_string("kind"));
      } catch (const Error& error) {
        throw Error(source + ": " + b.path() + "/kind: " + error.what());
      }
      buffer.name.owner = as_i32(b.at("owner"));
      buffer.name.stage = as_i32(b.at("stage"));
      buffer.where = as_i32(b.at("where"));
      buffer.bytes = b.get_int("bytes");
      buffer.allocated_by = as_i32(b.at("allocated_by"));
      const JsonReader freed_after = b.at("freed_after");
      for (std::size_t k = 0; k < freed_after.array_size(); ++k) buffer.freed_after.push_back(as_i32(freed_after.at(k)));
      g.buffers.push_back(std::move(buffer));
    }
  }
  if (root.has("collectives")) {
    const JsonReader collectives = root.at("collectives");
    for (std::size_t i = 0; i < collectives.array_size(); ++i) {
      const JsonReader c = collectives.at(i);
      c.check_keys({"name", "algorithm", "processors", "bytes"});
      CollectiveInfo info{c.get_string("name"), c.get_string("algorithm"), {}, c.get_int("bytes")};
      const JsonReader ranks = c.at("processors");
      for (std::size_t k = 0; k < ranks.array_size(); ++k) info.processors.push_back(as_i32(ranks.at(k)));
      g.collectives.push_back(std::move(info));
    }
  }
  return g;
}

TaskGraph load_graph(const std::string& file_path) {
  return graph_from_json(JsonReader::read_text_file(file_path), file_path);
}

}  // namespace pipetwin
