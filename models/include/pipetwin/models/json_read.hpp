// Checked reads from parsed JSON: every error names the source file, the JSON path (a JSON
// pointer such as /layers/3/kernel) and what was expected.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace pipetwin {

class JsonReader {
 public:
  JsonReader(const nlohmann::json& value, std::string source, std::string path = "")
      : value_(value), source_(std::move(source)), path_(std::move(path)) {}

  // Parses text; a syntax error names the source, line and column.
  static nlohmann::json parse(const std::string& text, const std::string& source);
  static nlohmann::json parse_file(const std::string& file_path);
  static std::string read_text_file(const std::string& file_path);  // throws if unreadable

  const nlohmann::json& value() const { return value_; }
  const std::string& path() const { return path_; }
  bool has(const std::string& key) const;

  JsonReader at(const std::string& key) const;           // required member
  JsonReader at(std::size_t index) const;                // array element
  std::size_t array_size() const;                        // requires an array
  void require_object() const;
  // Throws on members that are not in `allowed` (catches typos in user files).
  void check_keys(const std::vector<std::string>& allowed) const;

  std::string as_string() const;
  std::int64_t as_int() const;
  double as_double() const;
  bool as_bool() const;

  std::string get_string(const std::string& key) const { return at(key).as_string(); }
  std::int64_t get_int(const std::string& key) const { return at(key).as_int(); }
  double get_double(const std::string& key) const { return at(key).as_double(); }
  std::string get_string(const std::string& key, const std::string& fallback) const;
  std::int64_t get_int(const std::string& key, std::int64_t fallback) const;
  double get_double(const std::string& key, double fallback) const;
  bool get_bool(const std::string& key, bool fallback) const;

  [[noreturn]] void fail(const std::string& expected) const;

 private:
  const nlohmann::json& value_;
  std::string source_;
  std::string path_;
};

}  // namespace pipetwin
