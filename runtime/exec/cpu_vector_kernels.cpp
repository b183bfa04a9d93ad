// runtime/exec/cpu_vector_kernels.cpp — the step tail's vector loops (cpu_vector_kernels.hpp): each loop is
// written once over restrict pointers and run through run_for_isa, which compiles it per ISA (cpu_isa.hpp).
#include "runtime/exec/cpu_vector_kernels.hpp"

#include "runtime/exec/dropout_mask.hpp"
#include "runtime/exec/math/lane_sums.hpp"

namespace ptsim::runtime::cpu {
namespace {

using math::kSumLanes;

template <class T>
double lane_sum_of_squares(const T* __restrict x, size_t n) {
  double lanes[kSumLanes] = {};
  size_t i = 0;
  for (; i + kSumLanes <= n; i += kSumLanes)
    for (int j = 0; j < kSumLanes; ++j) lanes[j] += static_cast<double>(x[i + j]) * static_cast<double>(x[i + j]);
  for (int j = 0; i + static_cast<size_t>(j) < n; ++j)
    lanes[j] += static_cast<double>(x[i + static_cast<size_t>(j)]) * static_cast<double>(x[i + static_cast<size_t>(j)]);
  return math::combine_lanes(lanes);
}

template <class T>
void scale_loop(T* __restrict x, size_t n, T factor) {
  for (size_t i = 0; i < n; ++i) x[i] *= factor;
}

void adamw_loop(float* __restrict w, const float* __restrict g, float* __restrict m, float* __restrict v, size_t n,
                const optim_math::AdamStep c, float lr, float clip) {
  for (size_t i = 0; i < n; ++i) optim_math::adamw_element(w[i], g[i], m[i], v[i], c, lr, clip);
}

std::array<double, 2> lamb_moments_loop(const float* __restrict w, const float* __restrict g, float* __restrict m,
                                        float* __restrict v, size_t n, const optim_math::AdamStep c, float clip) {
  double lu[kSumLanes] = {}, lw[kSumLanes] = {};
  auto element = [&](size_t i, int lane) {
    const float u = optim_math::lamb_moments_and_direction(w[i], g[i], m[i], v[i], c, clip);
    lu[lane] += static_cast<double>(u) * u;
    lw[lane] += static_cast<double>(w[i]) * w[i];
  };
  size_t i = 0;
  for (; i + kSumLanes <= n; i += kSumLanes)
    for (int j = 0; j < kSumLanes; ++j) element(i + static_cast<size_t>(j), j);
  for (int j = 0; i + static_cast<size_t>(j) < n; ++j) element(i + static_cast<size_t>(j), j);
  return {math::combine_lanes(lu), math::combine_lanes(lw)};
}

void lamb_apply_loop(float* __restrict w, const float* __restrict m, const float* __restrict v, size_t n,
                     const optim_math::AdamStep c, float step) {
  for (size_t i = 0; i < n; ++i) optim_math::lamb_apply(w[i], m[i], v[i], c, step);
}

void keep_mask_loop(uint8_t* __restrict mask, size_t n, uint64_t key, uint64_t first, uint64_t threshold) {
  for (size_t i = 0; i < n; ++i) mask[i] = dropout_keep(key, first + i, threshold) ? 1 : 0;
}

}  // namespace

double chunk_sum_of_squares(CpuIsa isa, const float* x, size_t n) {
  double s = 0.0;
  run_for_isa(isa, [&] { s = lane_sum_of_squares(x, n); });
  return s;
}
double chunk_sum_of_squares(CpuIsa isa, const double* x, size_t n) {
  double s = 0.0;
  run_for_isa(isa, [&] { s = lane_sum_of_squares(x, n); });
  return s;
}

void scale_range(CpuIsa isa, float* x, size_t n, float factor) {
  run_for_isa(isa, [&] { scale_loop(x, n, factor); });
}
void scale_range(CpuIsa isa, double* x, size_t n, double factor) {
  run_for_isa(isa, [&] { scale_loop(x, n, factor); });
}

void adamw_range(CpuIsa isa, float* weight, const float* grad, float* m, float* v, size_t n,
                 const optim_math::AdamStep& c, float lr, float clip) {
  run_for_isa(isa, [&] { adamw_loop(weight, grad, m, v, n, c, lr, clip); });
}

std::array<double, 2> lamb_moments_chunk(CpuIsa isa, const float* weight, const float* grad, float* m, float* v,
                                         size_t n, const optim_math::AdamStep& c, float clip) {
  std::array<double, 2> s{};
  run_for_isa(isa, [&] { s = lamb_moments_loop(weight, grad, m, v, n, c, clip); });
  return s;
}

void lamb_apply_range(CpuIsa isa, float* weight, const float* m, const float* v, size_t n,
                      const optim_math::AdamStep& c, float step) {
  run_for_isa(isa, [&] { lamb_apply_loop(weight, m, v, n, c, step); });
}

void dropout_keep_mask(CpuIsa isa, uint8_t* mask, size_t n, uint64_t key, uint64_t first, uint64_t threshold) {
  run_for_isa(isa, [&] { keep_mask_loop(mask, n, key, first, threshold); });
}

}  // namespace ptsim::runtime::cpu
