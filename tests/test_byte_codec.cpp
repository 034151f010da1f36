// Messages between ranks (exec/common/byte_codec.hpp, ranks.hpp): values and blocks named beside
// a message (MessageSpan, as the NCCL transport sends GPU memory) come back in the order written,
// from a source that is not the message's bytes; malformed messages are errors, not overruns. And
// the first processor of each rank against the closed form ceil(r P / N).
#include <doctest/doctest.h>

#include <cstring>
#include <numeric>
#include <utility>
#include <vector>

#include "../exec/common/byte_codec.hpp"
#include "pipetwin/exec/ranks.hpp"
#include "pipetwin/models/error.hpp"

using namespace pipetwin;
using namespace pipetwin::exec;

TEST_CASE("blocks named beside a message are read back in order from the message's out-of-band source") {
  std::vector<float> a(5), b(3);
  std::iota(a.begin(), a.end(), 1.0f);
  std::iota(b.begin(), b.end(), 10.0f);
  ByteWriter w(true);
  REQUIRE(w.takes_out_of_band());
  w.value(std::int32_t{7});
  w.out_of_band(a.data(), 20);
  w.values(b.data(), 3);
  w.out_of_band(b.data(), 12);
  REQUIRE(w.spans().size() == 2);
  CHECK(w.spans()[0].data == a.data());
  CHECK(w.spans()[1].bytes == 12);
  // The receiving side: the spans arrive by another route (here, copied from the sender's memory in
  // the order they were named).
  RankMessage message;
  message.bytes = w.bytes();
  std::size_t next = 0;
  const std::vector<MessageSpan> sent = w.spans();
  message.out_of_band = [&](void* into, std::int64_t bytes) {
    REQUIRE(next < sent.size());
    REQUIRE(sent[next].bytes == bytes);
    std::memcpy(into, sent[next++].data, static_cast<std::size_t>(bytes));
  };
  ByteReader r(message);
  CHECK(r.value<std::int32_t>() == 7);
  std::vector<float> a2(5), b2(3), b3(3);
  r.out_of_band(a2.data(), 20);
  REQUIRE(r.count<float>() == 3);
  r.values(b2.data(), 3);
  r.out_of_band(b3.data(), 12);
  CHECK(r.done());
  CHECK(a2 == a);
  CHECK(b2 == b);
  CHECK(b3 == b);
}

TEST_CASE("a message that names blocks is refused where they cannot be sent or read") {
  float x[2] = {1, 2};
  ByteWriter plain;
  CHECK_FALSE(plain.takes_out_of_band());
  CHECK_THROWS_AS(plain.out_of_band(x, 8), Error);
  ByteWriter w(true);
  w.out_of_band(x, 8);
  SUBCASE("read as a block of another size") {
    RankMessage message;
    message.bytes = w.bytes();
    message.out_of_band = [](void*, std::int64_t) { FAIL("a block of the wrong size was received"); };
    ByteReader r(message);
    float y[1];
    CHECK_THROWS_WITH_AS(r.out_of_band(y, 4), doctest::Contains("malformed"), Error);
  }
  SUBCASE("from a transport that carries only bytes") {
    RankMessage message;
    message.bytes = w.bytes();
    ByteReader r(message);
    float y[2];
    CHECK_THROWS_WITH_AS(r.out_of_band(y, 8), doctest::Contains("did not come with it"), Error);
  }
}

TEST_CASE("a tensor's header says whether its floats go beside the message, and a bad shape is refused") {
  ByteWriter takes(true), carries;
  CHECK(takes.tensor_header(3, 4, true).beside);
  CHECK_FALSE(takes.tensor_header(3, 4, false).beside);  // memory the transport cannot send: in the message
  CHECK_FALSE(carries.tensor_header(3, 4, true).beside);
  ByteReader r(takes.bytes());
  const TensorHeader first = r.tensor_header();
  CHECK(first.rows == 3);
  CHECK(first.cols == 4);
  CHECK(first.count() == 12);
  CHECK(first.beside);
  CHECK_FALSE(r.tensor_header().beside);
  CHECK(r.done());
  for (const auto& [rows, cols] : {std::make_pair(std::int64_t{-1}, std::int64_t{2}), std::make_pair(std::int64_t{2}, std::int64_t{-1}),
                                   std::make_pair(std::int64_t{1} << 40, std::int64_t{2})}) {
    ByteWriter bad;
    bad.value(rows);
    bad.value(cols);
    bad.value(std::uint8_t{0});
    ByteReader read(bad.bytes());
    CHECK_THROWS_WITH_AS(read.tensor_header(), doctest::Contains("a tensor's shape"), Error);
  }
}

TEST_CASE("a view of a message's values ends where the message does") {
  const float x[3] = {1, 2, 3};
  ByteWriter w;
  float* room = w.values_to_fill<float>(3);
  std::memcpy(room, x, sizeof(x));
  ByteReader r(w.bytes());
  REQUIRE(r.count<float>() == 3);
  const unsigned char* at = r.view(sizeof(x));
  CHECK(std::memcmp(at, x, sizeof(x)) == 0);
  CHECK(r.done());
  CHECK_THROWS_AS(r.view(1), Error);
}

TEST_CASE("each rank's first processor is ceil(r P / N)") {
  for (std::int32_t processors = 1; processors <= 12; ++processors) {
    for (std::int32_t ranks = 1; ranks <= processors; ++ranks) {
      for (std::int32_t r = 0; r < ranks; ++r) {
        const std::int32_t expected = (r * processors + ranks - 1) / ranks;
        CHECK(first_processor_of_rank(r, processors, ranks) == expected);
        CHECK(rank_of_processor(expected, processors, ranks) == r);
      }
    }
  }
}
