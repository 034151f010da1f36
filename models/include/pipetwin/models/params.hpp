// Key=value parameter maps: how every network, hardware profile and schedule is configured.
// Values are strings; typed reads check and convert them and name the key in their errors.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace pipetwin {

// One parameter an entry accepts: its name, its default (as text) and what it means.
struct ParamSpec {
  std::string name;
  std::string default_value;
  std::string description;
};

class Params {
 public:
  Params() = default;
  explicit Params(std::map<std::string, std::string> values) : values_(std::move(values)) {}

  // Parses "key=value" items; throws on an item without '=' or with an empty key.
  static Params parse(const std::vector<std::string>& items);

  bool has(const std::string& key) const { return values_.count(key) != 0; }
  void set(const std::string& key, const std::string& value) { values_[key] = value; }
  const std::map<std::string, std::string>& values() const { return values_; }

  std::string get_string(const std::string& key, const std::string& fallback) const;
  std::int64_t get_int(const std::string& key, std::int64_t fallback) const;
  double get_double(const std::string& key, double fallback) const;
  bool get_bool(const std::string& key, bool fallback) const;
  // Comma-separated integers, e.g. "784,256,10".
  std::vector<std::int64_t> get_int_list(const std::string& key,
                                         const std::vector<std::int64_t>& fallback) const;

  // Throws naming the first key not in `specs`, with the closest accepted key suggested.
  void check_known(const std::vector<ParamSpec>& specs, const std::string& owner) const;

 private:
  std::map<std::string, std::string> values_;
};

// Parses an integer with the whole text consumed; `what` names it in the error.
std::int64_t parse_int(const std::string& text, const std::string& what);
double parse_double(const std::string& text, const std::string& what);
std::vector<std::int64_t> parse_int_list(const std::string& text, const std::string& what);

}  // namespace pipetwin
