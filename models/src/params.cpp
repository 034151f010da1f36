// Key=value parameter maps with checked, typed reads.
#include "pipetwin/models/params.hpp"

#include <cerrno>
#include <cstdlib>

#include "pipetwin/models/error.hpp"
#include "pipetwin/models/names.hpp"

namespace pipetwin {

std::int64_t parse_int(const std::string& text, const std::string& what) {
  errno = 0;
  char* end = nullptr;
  const long long value = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || end != text.c_str() + text.size() || errno == ERANGE) {
    throw Error(what + ": expected an integer, got '" + text + "'");
  }
  return value;
}

double parse_double(const std::string& text, const std::string& what) {
  errno = 0;
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || errno == ERANGE) {
    throw Error(what + ": expected a number, got '" + text + "'");
  }
  return value;
}

std::vector<std::int64_t> parse_int_list(const std::string& text, const std::string& what) {
  std::vector<std::int64_t> values;
  if (text.empty()) return values;
  std::size_t begin = 0;
  while (true) {
    const std::size_t comma = text.find(',', begin);
    values.push_back(parse_int(text.substr(begin, comma - begin), what));
    if (comma == std::string::npos) break;
    begin = comma + 1;
  }
  return values;
}

Params Params::parse(const std::vector<std::string>& items) {
  Params params;
  for (const auto& item : items) {
    const std::size_t equals = item.find('=');
    if (equals == std::string::npos || equals == 0) {
      throw Error("parameter '" + item + "': expected key=value");
    }
    params.set(item.substr(0, equals), item.substr(equals + 1));
  }
  return params;
}

std::string Params::get_string(const std::string& key, const std::string& fallback) const {
  const auto it = values_.find(key);
  return it == values_.end() ? fallback : it->second;
}

std::int64_t Params::get_int(const std::string& key, std::int64_t fallback) const {
  const auto it = values_.find(key);
  return it == values_.end() ? fallback : parse_int(it->second, "parameter " + key);
}

double Params::get_double(const std::string& key, double fallback) const {
  const auto it = values_.find(key);
  return it == values_.end() ? fallback : parse_double(it->second, "parameter " + key);
}

bool Params::get_bool(const std::string& key, bool fallback) const {
  const auto it = values_.find(key);
  if (it == values_.end()) return fallback;
  if (it->second == "true" || it->second == "1" || it->second == "yes") return true;
  if (it->second == "false" || it->second == "0" || it->second == "no") return false;
  throw Error("parameter " + key + ": expected true or false, got '" + it->second + "'");
}

std::vector<std::int64_t> Params::get_int_list(const std::string& key,
                                               const std::vector<std::int64_t>& fallback) const {
  const auto it = values_.find(key);
  return it == values_.end() ? fallback : parse_int_list(it->second, "parameter " + key);
}

void Params::check_known(const std::vector<ParamSpec>& specs, const std::string& owner) const {
  std::vector<std::string> names;
  for (const auto& spec : specs) names.push_back(spec.name);
  for (const auto& [key, value] : values_) {
    bool known = false;
    for (const auto& name : names) known = known || name == key;
    if (!known) {
      if (names.empty()) throw Error(owner + " takes no parameters, got '" + key + "'");
      throw Error(unknown_name_message("parameter of " + owner, key, names));
    }
  }
}

}  // namespace pipetwin
