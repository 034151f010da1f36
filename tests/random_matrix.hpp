// Random test data for the kernel tests: a matrix of N(0, 1) floats from a seeded generator.
#pragma once
#include <cstdint>
#include <random>

#include "pipetwin/exec/cpu/kernels.hpp"

namespace pipetwin::test {

inline cpu::Matrix random_matrix(Eigen::Index rows, Eigen::Index cols, std::uint64_t seed) {
  std::mt19937_64 generator(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  cpu::Matrix m(rows, cols);
  for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = normal(generator);
  return m;
}

}  // namespace pipetwin::test
