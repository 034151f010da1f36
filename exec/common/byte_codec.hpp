// Flat little byte buffers for messages between ranks (ranks.hpp): values appended in order by a
// ByteWriter and read back in the same order by a ByteReader, which throws on a short buffer. Both
// ends are the same build on the same kind of machine, so values travel in the host's layout.
// A writer that allows it may also name blocks of memory the message refers to instead of
// carrying them (GPU memory that NCCL moves: MessageSpan); the reader fills them, in the same
// order, from its message's out-of-band source.
#pragma once
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <type_traits>
#include <vector>

#include "pipetwin/exec/ranks.hpp"
#include "pipetwin/models/error.hpp"

namespace pipetwin::exec {

// A tensor in a message, before its floats: its shape, and whether the floats travel beside the
// message (ByteWriter::out_of_band) or follow in it (ByteWriter::values). Every backend packs
// its tensors so.
struct TensorHeader {
  std::int64_t rows = 0, cols = 0;
  bool beside = false;
  std::int64_t count() const { return rows * cols; }
};

class ByteWriter {
 public:
  ByteWriter() = default;
  // `out_of_band`: the message may refer to memory instead of carrying it (takes_out_of_band).
  explicit ByteWriter(bool out_of_band) : out_of_band_(out_of_band) {}
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
  // Room for `count` values, preceded by their count, for the caller to fill (a copy from a GPU);
  // the pointer holds until the next value is written.
  template <typename T>
  T* values_to_fill(std::int64_t count) {
    value(count);
    const auto at = bytes_.size();
    bytes_.resize(at + sizeof(T) * static_cast<std::size_t>(count));
    return reinterpret_cast<T*>(bytes_.data() + at);
  }
  bool takes_out_of_band() const { return out_of_band_; }
  // A tensor's header (TensorHeader); its floats go beside the message where this writer takes
  // them and `may_go_beside` (memory the transport can send), and the header says which.
  TensorHeader tensor_header(std::int64_t rows, std::int64_t cols, bool may_go_beside) {
    const TensorHeader header{rows, cols, out_of_band_ && may_go_beside};
    value(rows);
    value(cols);
    value(static_cast<std::uint8_t>(header.beside ? 1 : 0));
    return header;
  }
  // `bytes` at `data` travel beside the message; they must stay as they are until it is sent.
  void out_of_band(const void* data, std::int64_t bytes) {
    if (!out_of_band_) throw Error("internal: this message between ranks carries all of its data");
    value(bytes);
    spans_.push_back({data, bytes});
  }
  std::vector<unsigned char>& bytes() { return bytes_; }
  const std::vector<MessageSpan>& spans() const { return spans_; }

 private:
  void append(const void* data, std::size_t size) {
    const auto at = bytes_.size();
    bytes_.resize(at + size);
    if (size > 0) std::memcpy(bytes_.data() + at, data, size);
  }
  bool out_of_band_ = false;
  std::vector<unsigned char> bytes_;
  std::vector<MessageSpan> spans_;
};

class ByteReader {
 public:
  explicit ByteReader(const std::vector<unsigned char>& bytes) : bytes_(bytes) {}
  // A message's bytes and the source of the blocks it refers to (RankMessage::out_of_band).
  explicit ByteReader(const RankMessage& message) : bytes_(message.bytes), out_of_band_(&message.out_of_band) {}
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
  // A header written by ByteWriter::tensor_header, its shape checked.
  TensorHeader tensor_header() {
    TensorHeader header;
    header.rows = value<std::int64_t>();
    header.cols = value<std::int64_t>();
    header.beside = value<std::uint8_t>() != 0;
    if (header.rows < 0 || header.cols < 0 || (header.cols > 0 && header.rows > (std::int64_t{1} << 40) / header.cols)) {
      throw Error("a message between ranks is malformed: a tensor's shape");
    }
    return header;
  }
  // Where `bytes` of values lie in the message, skipped over (a copy to a GPU reads them there).
  const unsigned char* view(std::size_t bytes) {
    if (bytes > bytes_.size() - at_) throw Error("a message between ranks is malformed: it ends early");
    const unsigned char* at = bytes_.data() + at_;
    at_ += bytes;
    return at;
  }
  // A block written by ByteWriter::out_of_band, `bytes` long, into `into`.
  void out_of_band(void* into, std::int64_t bytes) {
    const auto sent = value<std::int64_t>();
    if (sent != bytes) {
      throw Error("a message between ranks is malformed: a block of " + std::to_string(sent) + " bytes where " +
                  std::to_string(bytes) + " were expected");
    }
    if (out_of_band_ == nullptr || !*out_of_band_) throw Error("a message between ranks refers to data that did not come with it");
    (*out_of_band_)(into, bytes);
  }
  bool done() const { return at_ == bytes_.size(); }

 private:
  void take(void* data, std::size_t size) {
    if (size > bytes_.size() - at_) throw Error("a message between ranks is malformed: it ends early");
    if (size > 0) std::memcpy(data, bytes_.data() + at_, size);
    at_ += size;
  }
  const std::vector<unsigned char>& bytes_;
  const std::function<void(void*, std::int64_t)>* out_of_band_ = nullptr;
  std::size_t at_ = 0;
};

}  // namespace pipetwin::exec
