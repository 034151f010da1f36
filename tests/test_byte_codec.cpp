// Messages between ranks (exec/common/byte_codec.hpp, ranks.hpp): values and blocks named beside
// a message (MessageSpan, as the NCCL transport sends GPU memory) come back in the order written,
// from a source that is not the message's bytes; malformed messages are errors, not overruns. And
// the first processor of each rank against the closed form ceil(r P / N).
#include <doctest/doctest.h>

#include <cstring>
#include <numeric>
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
