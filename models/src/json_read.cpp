// Checked JSON reads whose errors name the file, the JSON path and what was expected.
#include "pipetwin/models/json_read.hpp"

#include <fstream>
#include <set>
#include <sstream>

#include "pipetwin/models/error.hpp"
#include "pipetwin/models/names.hpp"

namespace pipetwin {
namespace {

std::string type_name(const nlohmann::json& value) {
  if (value.is_number_integer()) return "an integer";
  if (value.is_number()) return "a number";
  if (value.is_string()) return "a string '" + value.get<std::string>() + "'";
  if (value.is_boolean()) return "a boolean";
  if (value.is_null()) return "null";
  if (value.is_array()) return "an array";
  return "an object";
}

// Tracks the open objects and arrays while nlohmann parses, to refuse a key given twice in one
// object (nlohmann would silently keep the last value) and to name where it happened.
class DuplicateKeyCheck {
 public:
  explicit DuplicateKeyCheck(const std::string& source) : source_(source) {}

  bool operator()(int /*depth*/, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    using Event = nlohmann::json::parse_event_t;
    switch (event) {
      case Event::object_start:
      case Event::array_start:
        frames_.push_back(Frame{event == Event::object_start, child_path(), {}, "", 0});
        break;
      case Event::key: {
        Frame& object = frames_.back();
        object.key = parsed.get<std::string>();
        if (!object.keys.insert(object.key).second) {
          throw Error(source_ + ": " + (object.path.empty() ? "/" : object.path) +
                      ": the key '" + object.key + "' is given twice");
        }
        break;
      }
      case Event::object_end:
      case Event::array_end:
        frames_.pop_back();
        element_done();
        break;
      case Event::value:
        element_done();
        break;
    }
    return true;
  }

 private:
  struct Frame {
    bool is_object;
    std::string path;            // JSON pointer of this object or array
    std::set<std::string> keys;  // keys seen so far (objects)
    std::string key;             // the key whose value is being read (objects)
    std::size_t index;           // the element being read (arrays)
  };

  std::string child_path() const {
    if (frames_.empty()) return "";
    const Frame& parent = frames_.back();
    return parent.path + "/" + (parent.is_object ? parent.key : std::to_string(parent.index));
  }
  void element_done() {
    if (!frames_.empty() && !frames_.back().is_object) ++frames_.back().index;
  }

  const std::string& source_;
  std::vector<Frame> frames_;
};

}  // namespace

nlohmann::json JsonReader::parse(const std::string& text, const std::string& source) {
  try {
    return nlohmann::json::parse(text, DuplicateKeyCheck(source));
  } catch (const nlohmann::json::parse_error& error) {
    // Turn the byte offset into line:column for the message.
    std::size_t line = 1, column = 1;
    for (std::size_t i = 0; i + 1 < error.byte && i < text.size(); ++i) {
      if (text[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    std::string what = error.what();
    const std::size_t colon = what.rfind(": ");
    if (colon != std::string::npos) what = what.substr(colon + 2);
    throw Error(source + ":" + std::to_string(line) + ":" + std::to_string(column) +
                ": malformed JSON: " + what);
  } catch (const nlohmann::json::exception& error) {  // a number no double holds (1e400), ...
    std::string what = error.what();
    const std::size_t bracket = what.find("] ");
    if (bracket != std::string::npos) what = what.substr(bracket + 2);
    throw Error(source + ": malformed JSON: " + what);
  }
}

std::string JsonReader::read_text_file(const std::string& file_path) {
  std::ifstream in(file_path);
  if (!in) throw Error(file_path + ": cannot open file");
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

nlohmann::json JsonReader::parse_file(const std::string& file_path) {
  return parse(read_text_file(file_path), file_path);
}

void JsonReader::fail(const std::string& expected) const {
  throw Error(source_ + ": " + (path_.empty() ? "/" : path_) + ": expected " + expected +
              ", got " + type_name(value_));
}

bool JsonReader::has(const std::string& key) const {
  return value_.is_object() && value_.contains(key);
}

void JsonReader::require_object() const {
  if (!value_.is_object()) fail("an object");
}

JsonReader JsonReader::at(const std::string& key) const {
  require_object();
  const auto it = value_.find(key);
  if (it == value_.end()) {
    throw Error(source_ + ": " + (path_.empty() ? "/" : path_) + ": missing required key '" +
                key + "'");
  }
  return JsonReader(*it, source_, path_ + "/" + key);
}

JsonReader JsonReader::at(std::size_t index) const {
  if (!value_.is_array()) fail("an array");
  if (index >= value_.size()) fail("an array with more than " + std::to_string(index) + " items");
  return JsonReader(value_[index], source_, path_ + "/" + std::to_string(index));
}

std::size_t JsonReader::array_size() const {
  if (!value_.is_array()) fail("an array");
  return value_.size();
}

void JsonReader::check_keys(const std::vector<std::string>& allowed) const {
  require_object();
  for (const auto& item : value_.items()) {
    bool known = false;
    for (const auto& name : allowed) known = known || item.key() == name;
    if (!known) {
      throw Error(source_ + ": " + path_ + "/" + item.key() + ": " +
                  unknown_name_message("key", item.key(), allowed));
    }
  }
}

std::string JsonReader::as_string() const {
  if (!value_.is_string()) fail("a string");
  std::string text = value_.get<std::string>();
  // Names and descriptions are printed to terminals: a control character (an escape sequence, a
  // carriage return, a newline) could rewrite what the user sees, so none is taken.
  for (const char c : text) {
    if (is_control_character(c)) fail("a string without control characters (it is printed to terminals)");
  }
  return text;
}

std::int64_t JsonReader::as_int() const {
  if (!value_.is_number_integer()) fail("an integer");
  return value_.get<std::int64_t>();
}

double JsonReader::as_double() const {
  if (!value_.is_number()) fail("a number");
  return value_.get<double>();
}

bool JsonReader::as_bool() const {
  if (!value_.is_boolean()) fail("true or false");
  return value_.get<bool>();
}

std::string JsonReader::get_string(const std::string& key, const std::string& fallback) const {
  return has(key) ? at(key).as_string() : fallback;
}

std::int64_t JsonReader::get_int(const std::string& key, std::int64_t fallback) const {
  return has(key) ? at(key).as_int() : fallback;
}

double JsonReader::get_double(const std::string& key, double fallback) const {
  return has(key) ? at(key).as_double() : fallback;
}

bool JsonReader::get_bool(const std::string& key, bool fallback) const {
  return has(key) ? at(key).as_bool() : fallback;
}

}  // namespace pipetwin
