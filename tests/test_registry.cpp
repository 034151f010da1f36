// The registry door: names, parameter routing and bad input.
#include <doctest/doctest.h>

#include <algorithm>

#include "pipetwin/models/error.hpp"
#include "pipetwin/models/network_registry.hpp"
#include "pipetwin/schedule/registry.hpp"
#include "schedule_test_helpers.hpp"

using namespace pipetwin;

namespace {

GraphConfig base() {
  GraphConfig config = test::graph_config("resnet20", "gpipe", "unit", 2, 2, 1);
  return config;
}

std::string error_of(const GraphConfig& config) {
  try {
    make_graph(config);
  } catch (const Error& error) {
    return error.what();
  }
  return "";
}

}  // namespace

TEST_CASE("the four foundation schedules are registered") {
  const auto names = schedule_names();
  for (const std::string name : {"sequential", "gpipe", "1f1b", "pipedream"}) {
    CHECK(std::find(names.begin(), names.end(), name) != names.end());
  }
}

TEST_CASE("unknown names get the closest valid name") {
  GraphConfig config = base();
  config.schedule = "gpip";
  CHECK(error_of(config).find("unknown schedule 'gpip'; did you mean 'gpipe'?") == 0);
  config = base();
  config.model = "resnet57";
  CHECK(error_of(config).find("unknown model 'resnet57'; did you mean 'resnet56'?") == 0);
  config = base();
  config.hardware = "a10";
  CHECK(error_of(config).find("unknown hardware 'a10'; did you mean 'a100'?") == 0);
}

TEST_CASE("counts below one are rejected") {
  GraphConfig config = base();
  config.processors = 0;
  CHECK(error_of(config) == "processors must be at least 1, got 0");
  config = base();
  config.microbatches = 0;
  CHECK(error_of(config) == "microbatches must be at least 1, got 0");
  config = base();
  config.minibatches = -1;
  CHECK(error_of(config) == "minibatches must be at least 1, got -1");
}

TEST_CASE("parameters are routed to the model, the hardware or the schedule") {
  GraphConfig config = base();
  config.hardware = "h100";
  config.params = {"batch=64", "precision=tf32", "cuts=6"};
  const TaskGraph g = make_graph(config);
  CHECK(g.parameters.at("model.batch") == "64");
  CHECK(g.parameters.at("hardware.precision") == "tf32");
  CHECK(g.stages[0].last_layer == 6);
  CHECK(g.samples_per_microbatch == 32);

  config.params = {"batchsize=64"};
  CHECK(error_of(config).find("did you mean 'batch'?") != std::string::npos);
  config.params = {"model.batch=32", "schedule.cuts=12"};
  CHECK(make_graph(config).stages[0].last_layer == 12);
  config.params = {"cuts=7"};
  CHECK(error_of(config).find("would break a residual connection") != std::string::npos);
}

TEST_CASE("a batch that does not split into the microbatches is rejected") {
  GraphConfig config = base();
  config.microbatches = 3;
  CHECK(error_of(config).find("batch 128 of model resnet20 does not split into 3 equal microbatches") == 0);
}

TEST_CASE("more processors than cut points is a clear error") {
  GraphConfig config = base();
  config.model = "lenet5";
  config.processors = 6;
  CHECK(error_of(config) == "model lenet5: cannot cut 5 layers into 6 stages: only 4 cut points are "
                            "allowed (never inside a residual block), so at most 5 stages");
}

TEST_CASE("sweeps pass a schedule's own parameters only to the schedules that take them") {
  GraphConfig config = base();
  config.params = {"tolerance=0.1", "batch=64", "schedule.max_in_flight=3"};
  const GraphConfig for_gpipe = without_other_schedules_params(config);
  CHECK(for_gpipe.params == std::vector<std::string>{"batch=64"});
  config.schedule = "layerwise-merge";
  CHECK(without_other_schedules_params(config).params == std::vector<std::string>{"tolerance=0.1", "batch=64"});
  config.params = {"nonsense=1"};  // nobody takes it: kept, so it still fails loudly
  CHECK(without_other_schedules_params(config).params == config.params);
  CHECK_THROWS_AS(make_graph(without_other_schedules_params(config)), Error);
}
