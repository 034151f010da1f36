// The first value of a list that an earlier one already holds: how a request's lists (schedules,
// processor counts, microbatch sizes) find a value given twice, which would repeat rows.
#pragma once
#include <algorithm>
#include <vector>

namespace pipetwin {

// Points at the first element equal to one before it, or is null when all differ. Quadratic:
// for the short lists a person types.
template <typename T>
const T* first_repeated(const std::vector<T>& values) {
  for (auto at = values.begin(); at != values.end(); ++at) {
    if (std::find(values.begin(), at, *at) != at) return &*at;
  }
  return nullptr;
}

}  // namespace pipetwin
