// Sequential SGD and the delayed-SGD replay (training_reference.hpp).
#include "training_reference.hpp"

#include <algorithm>
#include <map>
#include <stdexcept>
#include <tuple>

#include "pipetwin/exec/cpu/layer_op.hpp"

namespace pipetwin::test {
namespace {

using cpu::Gradient;
using cpu::LayerOp;
using cpu::Vector;

// The versions one microbatch reads, per layer.
struct Reads {
  std::vector<int> forward, input_grad, weight_grad;
};

// Forward and backward of one microbatch through every layer; returns each layer's gradient.
// `parts[l]`: the slices of the samples layer l's activation gradient is computed in (1 unless
// the schedule splits it, as LayerPipe's BA parts do; slices are put together as the schedule's
// consumers put them together).
std::vector<Vector> microbatch_gradients(const std::vector<LayerOp>& ops, const BatchSampler& data, int k, int m,
                                         double loss_scale, const std::vector<const Vector*>& forward_w,
                                         const std::vector<const Vector*>& input_w,
                                         const std::vector<const Vector*>& weight_w, const std::vector<int>& parts) {
  const std::size_t L = ops.size();
  cpu::Activation a;
  std::vector<std::int32_t> labels;
  data.fill(k, m, &a.main, &labels);
  const auto n = a.main.cols();
  std::vector<cpu::LayerStash> stash(L);
  double loss = 0;
  for (std::size_t l = 0; l < L; ++l) a = ops[l].forward(*forward_w[l], a, stash[l], &labels, loss_scale, &loss);
  std::vector<Vector> grads(L);
  Gradient out;
  for (std::size_t l = L; l-- > 0;) {
    const Gradient* og = l + 1 == L ? nullptr : &out;
    grads[l] = ops[l].backward_weight(*weight_w[l], stash[l], og);
    if (l == 0) continue;
    Gradient whole;
    for (int part = 0; part < parts[l]; ++part) {
      const Gradient slice = ops[l].backward_input(*input_w[l], stash[l], og, n * part / parts[l], n * (part + 1) / parts[l]);
      if (part == 0) {
        whole.main = cpu::Matrix::Zero(slice.main.rows(), n);
        if (slice.shortcut.size() > 0) whole.shortcut = cpu::Matrix::Zero(slice.shortcut.rows(), n);
      }
      whole.main.middleCols(slice.first_sample, slice.main.cols()) = slice.main;
      if (slice.shortcut.size() > 0) whole.shortcut.middleCols(slice.first_sample, slice.shortcut.cols()) = slice.shortcut;
    }
    out = std::move(whole);
  }
  return grads;
}

void sgd_step(Vector& w, Vector& velocity, const Vector& grad, const SgdSettings& sgd) {
  if (sgd.momentum > 0) {
    velocity = static_cast<float>(sgd.momentum) * velocity + grad;
    w = w - static_cast<float>(sgd.learning_rate) * velocity;
  } else {
    w = w - static_cast<float>(sgd.learning_rate) * grad;
  }
}

}  // namespace

std::vector<Vector> sequential_sgd(const Network& network, const BatchSampler& data, int minibatches, int microbatches,
                                   const SgdSettings& sgd, std::vector<Vector> weights, int groups) {
  const auto ops = cpu::make_layer_ops(network.layers);
  std::vector<Vector> velocity;
  for (const auto& w : weights) velocity.push_back(Vector::Zero(w.size()));
  std::vector<const Vector*> current;
  for (const auto& w : weights) current.push_back(&w);
  const auto add = [](std::vector<Vector>& sum, std::vector<Vector> more) {
    if (sum.empty()) {
      sum = std::move(more);
    } else {
      for (std::size_t l = 0; l < sum.size(); ++l) sum[l] += more[l];
    }
  };
  for (int k = 0; k < minibatches; ++k) {
    std::vector<Vector> sum;
    for (int group = 0; group < groups; ++group) {
      std::vector<Vector> part;
      for (int m = group * microbatches / groups; m < (group + 1) * microbatches / groups; ++m) {
        add(part, microbatch_gradients(ops, data, k, m, static_cast<double>(network.batch), current, current, current,
                                       std::vector<int>(weights.size(), 1)));
      }
      add(sum, std::move(part));
    }
    for (std::size_t l = 0; l < weights.size(); ++l) sgd_step(weights[l], velocity[l], sum[l], sgd);
  }
  return weights;
}

std::vector<Vector> delayed_sgd_replay(const TaskGraph& graph, const Network& network, const BatchSampler& data,
                                       const SgdSettings& sgd, std::vector<Vector> initial) {
  const auto ops = cpu::make_layer_ops(network.layers);
  const int L = static_cast<int>(network.size()), M = graph.microbatches;
  const int stream = graph.minibatches * M;
  // Declared versions per position and layer.
  std::vector<Reads> reads(static_cast<std::size_t>(stream));
  for (auto& r : reads) r.forward = r.input_grad = r.weight_grad = std::vector<int>(static_cast<std::size_t>(L), -1);
  struct Update { int stage, read, written; std::vector<int> positions; };
  std::vector<Update> updates;
  std::vector<int> parts(static_cast<std::size_t>(L), 1);
  std::map<std::tuple<int, int, int>, int> ba_tasks;  // (layer, minibatch, microbatch) -> BA tasks
  for (const auto& t : graph.tasks) {
    if (t.placement != Placement::processor) continue;
    if (t.kind == TaskKind::BA && t.first_layer == t.last_layer) {
      parts[static_cast<std::size_t>(t.first_layer)] = ++ba_tasks[{t.first_layer, t.minibatch, t.microbatch}];
    }
    const int n = t.minibatch * M + t.microbatch;
    for (int l = t.first_layer; l <= t.last_layer && t.kind != TaskKind::U; ++l) {
      auto& r = reads[static_cast<std::size_t>(n)];
      if (t.kind == TaskKind::F) r.forward[static_cast<std::size_t>(l)] = t.version_read;
      if (t.kind == TaskKind::B || t.kind == TaskKind::BA) r.input_grad[static_cast<std::size_t>(l)] = t.version_read;
      if (t.kind == TaskKind::B || t.kind == TaskKind::BW) r.weight_grad[static_cast<std::size_t>(l)] = t.version_read;
    }
    if (t.kind == TaskKind::U) {
      Update u{t.stage, t.version_read, t.version_written, {}};
      if (t.microbatch >= 0) {
        u.positions.push_back(n);
      } else {
        for (int m = 0; m < M; ++m) u.positions.push_back(t.minibatch * M + m);
      }
      updates.push_back(u);
    }
  }
  std::sort(updates.begin(), updates.end(), [](const Update& a, const Update& b) {
    return std::tie(a.written, a.stage) < std::tie(b.written, b.stage);
  });
  std::vector<std::map<int, Vector>> versions(static_cast<std::size_t>(L));
  std::vector<Vector> velocity;
  for (int l = 0; l < L; ++l) {
    versions[static_cast<std::size_t>(l)][0] = initial[static_cast<std::size_t>(l)];
    velocity.push_back(Vector::Zero(initial[static_cast<std::size_t>(l)].size()));
  }
  std::vector<std::vector<Vector>> grads(static_cast<std::size_t>(stream));
  std::vector<bool> applied(updates.size(), false);
  auto apply_ready = [&] {
    for (std::size_t i = 0; i < updates.size(); ++i) {  // in version order: each reads the one before
      const Update& u = updates[i];
      if (applied[i]) continue;
      const bool ready = std::all_of(u.positions.begin(), u.positions.end(),
                                     [&](int n) { return !grads[static_cast<std::size_t>(n)].empty(); });
      if (!ready) continue;
      const StageInfo& stage = graph.stages[static_cast<std::size_t>(u.stage)];
      if (!versions[static_cast<std::size_t>(stage.first_layer)].count(u.read)) continue;  // comes later
      for (int l = stage.first_layer; l <= stage.last_layer; ++l) {
        auto& layer_versions = versions[static_cast<std::size_t>(l)];
        Vector sum = grads[static_cast<std::size_t>(u.positions[0])][static_cast<std::size_t>(l)];
        for (std::size_t p = 1; p < u.positions.size(); ++p) sum += grads[static_cast<std::size_t>(u.positions[p])][static_cast<std::size_t>(l)];
        Vector w = layer_versions.at(u.read);
        sgd_step(w, velocity[static_cast<std::size_t>(l)], sum, sgd);
        layer_versions[u.written] = w;
      }
      applied[i] = true;
    }
  };
  auto version = [&](int l, int v) -> const Vector* {
    const auto& layer_versions = versions[static_cast<std::size_t>(l)];
    const auto it = layer_versions.find(v);
    if (it == layer_versions.end()) {
      throw std::runtime_error("replay: version " + std::to_string(v) + " of layer " + std::to_string(l) +
                               " is read before its gradients exist");
    }
    return &it->second;
  };
  for (int n = 0; n < stream; ++n) {
    apply_ready();
    const Reads& r = reads[static_cast<std::size_t>(n)];
    std::vector<const Vector*> fw, iw, ww;
    for (int l = 0; l < L; ++l) {
      fw.push_back(version(l, r.forward[static_cast<std::size_t>(l)]));
      iw.push_back(l == 0 ? fw.back() : version(l, r.input_grad[static_cast<std::size_t>(l)]));
      ww.push_back(version(l, r.weight_grad[static_cast<std::size_t>(l)]));
    }
    grads[static_cast<std::size_t>(n)] =
        microbatch_gradients(ops, data, n / M, n % M, static_cast<double>(network.batch), fw, iw, ww, parts);
  }
  apply_ready();
  std::vector<Vector> newest;
  for (const auto& layer_versions : versions) newest.push_back(layer_versions.rbegin()->second);
  return newest;
}

double max_relative_difference(const std::vector<Vector>& a, const std::vector<Vector>& b) {
  double worst = 0;
  for (std::size_t l = 0; l < a.size(); ++l) {
    for (Eigen::Index i = 0; i < a[l].size(); ++i) {
      const double scale = std::max(std::abs(static_cast<double>(b[l][i])), 1e-3);
      worst = std::max(worst, std::abs(static_cast<double>(a[l][i]) - b[l][i]) / scale);
    }
  }
  return worst;
}

}  // namespace pipetwin::test
