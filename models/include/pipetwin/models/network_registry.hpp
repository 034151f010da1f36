// Networks by name plus key=value parameters: the built-ins (mlp, lenet5, alexnet, vgg16,
// resnet20..resnet362, gpt) and user-defined JSON files (a name ending in .json is a path).
#pragma once
#include <string>
#include <vector>

#include "pipetwin/models/network.hpp"
#include "pipetwin/models/params.hpp"

namespace pipetwin {

struct NetworkEntry {
  std::string name;
  std::string description;
  std::vector<ParamSpec> params;
};

const std::vector<NetworkEntry>& network_entries();
// The parameters `name` accepts (also for a .json path: batch and dtype_bytes).
std::vector<ParamSpec> network_params(const std::string& name);
Network make_network(const std::string& name, const Params& params);

// User networks: see docs/formats.md. `batch_override` > 0 replaces the file's batch.
Network load_network_json(const std::string& file_path, const Params& params);
Network network_from_json_text(const std::string& text, const std::string& source,
                               const Params& params);

}  // namespace pipetwin
