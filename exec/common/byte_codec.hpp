// Flat little byte buffers for messages between ranks (ranks.hpp): values appended in order by a
// ByteWriter and read back in the same order by a ByteReader, which throws on a short buffer. Both
// ends are the same build on the same kind of machine, so values travel in the host's layout.
#pragma once
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "pipetwin/models/error.hpp"

namespace pipetwin::exec {

class ByteWriter {
 public:
  template <typename T>
  void value(const T& x) {
    static_assert(std::is_trivially_copyable<T>::value, "ByteWriter::value takes plain values");
    append(&x, sizeof(T));
  }
  template <typename T>
  void values(const T* data, std::int64_t count) {  // preceded by its count
    value(count);
    append(data, sizeof(T) * static_cast<std::size_t>(count));
  }
  std::vector<unsigned char>& bytes() { return bytes_; }

 private:
  void append(const void* data, std::size_t size) {
    const auto at = bytes_.size();
    bytes_.resize(at + size);
    if (size > 0) std::memcpy(bytes_.data() + at, data, size);
  }
  std::vector<unsigned char> bytes_;
};

class ByteReader {
 public:
  explicit ByteReader(const std::vector<unsigned char>& bytes) : bytes_(bytes) {}
  template <typename T>
  T value() {
    T x;
    take(&x, sizeof(T));
    return x;
  }
  // A count written by ByteWriter::values, checked against what is left.
  template <typename T>
  std::int64_t count() {
    const auto n = value<std::int64_t>();
    if (n < 0 || static_cast<std::uint64_t>(n) > (bytes_.size() - at_) / sizeof(T)) {
      throw Error("a message between ranks is malformed: a count of " + std::to_string(n) + " overruns it");
    }
    return n;
  }
  template <typename T>
  void values(T* data, std::int64_t count) { take(data, sizeof(T) * static_cast<std::size_t>(count)); }
  bool done() const { return at_ == bytes_.size(); }

 private:
  void take(void* data, std::size_t size) {
    if (size > bytes_.size() - at_) throw Error("a message between ranks is malformed: it ends early");
    if (size > 0) std::memcpy(data, bytes_.data() + at_, size);
    at_ += size;
  }
  const std::vector<unsigned char>& bytes_;
  std::size_t at_ = 0;
};

}  // namespace pipetwin::exec
