// tests/runtime/exec/gradcheck.hpp — finite-difference helpers shared by the executor tests.
// Central differences in fp64: truncation error ~h²·|f'''|/6 ≈ 1e-10 at h = 1e-5, rounding ~ε·|L|/h ≈ 1e-10
// for |L| ≲ 10; so an analytic gradient g passes when |g − fd| ≤ kRelTol·max(|g|, |fd|) + kAbsTol with
// kRelTol = 1e-6 (four orders above the FD noise on O(1e-3..1) gradients) and kAbsTol = 1e-8 (the noise
// floor for gradients that are 0 or tiny, e.g. masked keys, padded classes).
#pragma once
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/hash.hpp"

namespace ptsim::test {

constexpr double kFdStep = 1e-5;
constexpr double kRelTol = 1e-6;
constexpr double kAbsTol = 1e-8;

using Vec = std::vector<double>;

using core::mix64;
constexpr uint64_t test_mix64(uint64_t z) { return mix64(z); }  // counter-based test data (core/hash.hpp)
// Deterministic normal(0, stddev) numbers (Box–Muller on a counter hash): same values on every platform.
inline Vec randn(size_t n, uint64_t seed, double stddev = 1.0, double mean = 0.0) {
  Vec v(n);
  for (size_t i = 0; i < n; ++i) {
    const double u1 = (static_cast<double>(test_mix64(seed * 7919 + 2 * i) >> 11) + 0.5) * 0x1.0p-53;
    const double u2 = (static_cast<double>(test_mix64(seed * 7919 + 2 * i + 1) >> 11) + 0.5) * 0x1.0p-53;
    v[i] = mean + stddev * std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }
  return v;
}
inline double dot(const Vec& a, const Vec& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

inline bool grad_close(double analytic, double numeric) {
  return std::abs(analytic - numeric) <= kRelTol * std::max(std::abs(analytic), std::abs(numeric)) + kAbsTol;
}

// Perturbs x[i] for the listed indices (all when empty) and compares (L(x+h) − L(x−h))/2h with analytic[i].
// Returns the largest relative error over elements whose gradient exceeds 1e-4 (for reporting; below that
// the absolute floor dominates).
inline double fd_check(double* x, size_t n, const std::function<double()>& loss, const double* analytic,
                       const std::string& what, std::vector<size_t> indices = {}) {
  if (indices.empty())
    for (size_t i = 0; i < n; ++i) indices.push_back(i);
  double worst = 0;
  for (size_t i : indices) {
    const double saved = x[i];
    x[i] = saved + kFdStep;
    const double lp = loss();
    x[i] = saved - kFdStep;
    const double lm = loss();
    x[i] = saved;
    const double numeric = (lp - lm) / (2 * kFdStep);
    const double a = analytic[i];
    const double scale = std::max(std::abs(a), std::abs(numeric));
    if (scale > 1e-4) worst = std::max(worst, std::abs(a - numeric) / scale);
    INFO(what << "[" << i << "]: analytic " << a << ", finite difference " << numeric);
    CHECK(grad_close(a, numeric));
  }
  return worst;
}
inline double fd_check(Vec& x, const std::function<double()>& loss, const Vec& analytic, const std::string& what) {
  REQUIRE(x.size() == analytic.size());
  return fd_check(x.data(), x.size(), loss, analytic.data(), what);
}

}  // namespace ptsim::test
