// The oneDNN kernels' entry points in a build without oneDNN (libdnnl-dev was not found): the
// CPU executor then runs the Eigen kernels, and these say why they cannot run.
#include "pipetwin/exec/cpu/onednn_kernels.hpp"
#include "pipetwin/models/error.hpp"

namespace pipetwin::cpu::onednn {
namespace {

[[noreturn]] void unavailable() {
  throw Error("this pipetwin was built without oneDNN (install libdnnl-dev and rebuild)");
}

}  // namespace

bool available() { return false; }

struct PlanCache::Plans {};
PlanCache::PlanCache() : plans_(std::make_unique<Plans>()) {}
PlanCache::~PlanCache() = default;
std::size_t PlanCache::idle_plans() const { return 0; }

std::string description() { return ""; }

Matrix dense_forward(const Eigen::Ref<const Matrix>&, const Eigen::Ref<const Vector>&, const Matrix&, const Room&) { unavailable(); }
Matrix dense_backward_input(const Eigen::Ref<const Matrix>&, const ConstColumns&, const Room&) { unavailable(); }
void dense_backward_weight(const Matrix&, const Matrix&, Eigen::Ref<Matrix>, Vector*, WeightGradient) { unavailable(); }
Matrix conv2d_forward(const ConvGeometry&, const Eigen::Ref<const Matrix>&, const Eigen::Ref<const Vector>&, const Matrix&, bool,
                      PlanCache*, const Room&) {
  unavailable();
}
Matrix conv2d_backward_input(const ConvGeometry&, const Eigen::Ref<const Matrix>&, const ConstColumns&, PlanCache*, const Room&) {
  unavailable();
}
void conv2d_backward_weight(const ConvGeometry&, const Matrix&, const Matrix&, Eigen::Ref<Matrix>, Vector*, WeightGradient,
                            PlanCache*) {
  unavailable();
}

}  // namespace pipetwin::cpu::onednn
