// The reuse curve: a block re-read after sweeps of growing size (reuse_curve.hpp).
#include "pipetwin/exec/cpu/reuse_curve.hpp"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <string>

#include "pipetwin/models/error.hpp"
#include "vector_clones.hpp"

namespace pipetwin::cpu {
namespace {

using Clock = std::chrono::steady_clock;

// XOR of every word: associative, so that the compiler vectorizes it (this file is built with
// -O3), and one clone per vector ISA picked at load time, so that a read runs at the speed a
// vectorized kernel reads (on the 2-vCPU AVX-512 machine 256 KiB from L2 in 3.1 us with AVX-512,
// against 9.2 us for a scalar loop, which would hide the cache behind the loop's own cost).
PIPETWIN_VECTOR_CLONES
std::uint64_t read_all(const std::uint64_t* words, std::size_t count) {
  std::uint64_t x = 0;
  for (std::size_t i = 0; i < count; ++i) x ^= words[i];
  return x;
}

// One write per cache line: the lines are owned and dirty, as a gradient's.
void write_lines(std::uint64_t* words, std::size_t count) {
  for (std::size_t i = 0; i < count; i += 8) words[i] += 1;
}

std::int64_t parse_cache_size(std::string text) {
  // "2048K", "2M"
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  if (text.empty()) return 0;
  std::int64_t scale = 1;
  if (text.back() == 'K') scale = 1024;
  if (text.back() == 'M') scale = 1024 * 1024;
  if (scale > 1) text.pop_back();
  try {
    return std::stoll(text) * scale;
  } catch (const std::exception&) {
    return 0;
  }
}

}  // namespace

std::int64_t core_l2_bytes() {
  for (int index = 0; index < 8; ++index) {
    const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index) + "/";
    std::ifstream level_file(dir + "level"), type_file(dir + "type"), size_file(dir + "size");
    int level = 0;
    std::string type, size;
    if (!(level_file >> level) || !(type_file >> type) || !std::getline(size_file, size)) continue;
    if (level == 2 && type != "Instruction") return parse_cache_size(size);
  }
  return 0;
}

std::vector<std::pair<std::int64_t, double>> measure_reuse_curve(std::int64_t cache_bytes, int repeats,
                                                                 std::int64_t block_bytes) {
  if (cache_bytes < 4096 || block_bytes < 4096) throw Error("reuse curve: a cache and a block of at least 4 KiB");
  if (cache_bytes > kMostReuseCurveCacheBytes) {
    throw Error("reuse curve: a cache of at most " + std::to_string(kMostReuseCurveCacheBytes >> 20) + " MiB, got " +
                std::to_string(cache_bytes >> 20) + " MiB");
  }
  if (repeats < 1) throw Error("reuse curve: repeats must be at least 1");
  const std::int64_t step = std::max<std::int64_t>(block_bytes / 4, cache_bytes / 8);
  std::vector<std::int64_t> working_sets{block_bytes};
  for (std::int64_t w = block_bytes + step; w <= cache_bytes * 5 / 2; w += step) working_sets.push_back(w);
  working_sets.push_back(std::max(working_sets.back() + step, cache_bytes * 16));
  constexpr auto kWord = static_cast<std::int64_t>(sizeof(std::uint64_t));
  std::vector<std::uint64_t> block(static_cast<std::size_t>(block_bytes / kWord), 1);  // [block_bytes / 8]
  // [2 x the largest sweep / 8]: each sweep starts where the last ended, so that it is not the one
  // before's data, still cached
  std::vector<std::uint64_t> others(static_cast<std::size_t>(2 * (working_sets.back() - block_bytes) / kWord), 1);
  std::size_t start = 0;
  std::uint64_t sink = 0;
  std::vector<std::pair<std::int64_t, double>> seconds;  // median seconds of a re-read, per working set
  for (const std::int64_t working_set : working_sets) {
    const auto sweep_words = static_cast<std::size_t>((working_set - block_bytes) / kWord);
    std::vector<double> times;
    for (int r = 0; r < repeats; ++r) {
      sink ^= read_all(block.data(), block.size());
      if (sweep_words > 0) {
        if (start + sweep_words > others.size()) start = 0;
        write_lines(others.data() + start, sweep_words);
        sink ^= read_all(others.data() + start, sweep_words);
        start += sweep_words;
      }
      const auto begin = Clock::now();
      sink ^= read_all(block.data(), block.size());
      times.push_back(std::chrono::duration<double>(Clock::now() - begin).count());
    }
    std::nth_element(times.begin(), times.begin() + static_cast<std::ptrdiff_t>(times.size() / 2), times.end());
    seconds.emplace_back(working_set, times[times.size() / 2]);
  }
  volatile std::uint64_t observed = sink;  // the reads are observed: not optimised away
  static_cast<void>(observed);
  std::vector<std::pair<std::int64_t, double>> curve;
  double highest = 0;
  for (const auto& [working_set, s] : seconds) {
    highest = std::max(highest, (s - seconds.front().second) / static_cast<double>(block_bytes));
    curve.emplace_back(working_set, highest);
  }
  return curve;
}

}  // namespace pipetwin::cpu
