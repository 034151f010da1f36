// Name suggestions and key=value parameter parsing.
#include <doctest/doctest.h>

#include "pipetwin/models/error.hpp"
#include "pipetwin/models/names.hpp"
#include "pipetwin/models/params.hpp"

using namespace pipetwin;

TEST_CASE("edit distance counts insertions, deletions and substitutions") {
  CHECK(edit_distance("", "") == 0);
  CHECK(edit_distance("kitten", "sitting") == 3);
  CHECK(edit_distance("resnet56", "resnet57") == 1);
  CHECK(edit_distance("abc", "") == 3);
}

TEST_CASE("closest name suggests plausible typos only") {
  const std::vector<std::string> names = {"resnet20", "resnet56", "lenet5", "gpt"};
  CHECK(closest_name("resnet57", names) == "resnet56");
  CHECK(closest_name("LeNet5", names) == "lenet5");
  CHECK(closest_name("transformer-xl", names).empty());
  CHECK(closest_name("batchsize", {"batch", "dtype_bytes"}) == "batch");
  const std::string message = unknown_name_message("model", "resnet57", names);
  CHECK(message.find("did you mean 'resnet56'") != std::string::npos);
  CHECK(message.find("known: resnet20, resnet56, lenet5, gpt") != std::string::npos);
}

TEST_CASE("params parse key=value and convert with checked reads") {
  const Params params = Params::parse({"batch=64", "widths=784,10", "tf=true", "eff=0.5"});
  CHECK(params.get_int("batch", 1) == 64);
  CHECK(params.get_int("missing", 7) == 7);
  CHECK(params.get_int_list("widths", {}) == std::vector<std::int64_t>{784, 10});
  CHECK(params.get_bool("tf", false));
  CHECK(params.get_double("eff", 1.0) == doctest::Approx(0.5));
  CHECK_THROWS_WITH_AS(Params::parse({"batch"}), "parameter 'batch': expected key=value", Error);
  CHECK_THROWS_WITH_AS(Params::parse({"batch=6x"}).get_int("batch", 0),
                       "parameter batch: expected an integer, got '6x'", Error);
  CHECK_THROWS_AS(params.check_known({{"batch", "", ""}}, "model mlp"), Error);
}
