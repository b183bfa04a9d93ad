// tests/runtime/exec/test_cpu_isa.cpp — the CPU vector kernels' ISA variants (runtime/exec/cpu_isa.hpp,
// cpu_vector_kernels.hpp): every variant this CPU runs gives the baseline's bits (sum of squares, scale,
// AdamW, NVLAMB, dropout mask), AdamW's and NVLAMB's loops give optim_math's bits one by one, and the sum of squares follows the
// lane order of math/lane_sums.hpp, pinned by an input whose sum differs between orders.
#include <doctest/doctest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "runtime/exec/backend.hpp"
#include "runtime/exec/cpu_isa.hpp"
#include "runtime/exec/cpu_vector_kernels.hpp"
#include "runtime/exec/dropout_mask.hpp"

using namespace ptsim::runtime;
using cpu::CpuIsa;

namespace {

// Deterministic values of mixed sign and magnitude (7 decades), none exactly representable in few bits.
std::vector<float> spread_values(size_t n, double phase) {
  std::vector<float> x(n);
  for (size_t i = 0; i < n; ++i) {
    const double s = std::sin(0.37 * static_cast<double>(i) + phase);
    x[i] = static_cast<float>(s * std::pow(10.0, static_cast<double>(i % 7) - 3.0));
  }
  return x;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace

TEST_CASE("cpu ISA variants: the baseline is always runnable, the detected one is the last") {
  const std::vector<CpuIsa> isas = cpu::runnable_cpu_isas();
  REQUIRE(!isas.empty());
  CHECK(isas.front() == CpuIsa::baseline);
  CHECK(isas.back() == cpu::detected_cpu_isa());
  MESSAGE("this CPU runs the " << cpu::to_string(cpu::detected_cpu_isa()) << " variants");
}

TEST_CASE("cpu ISA variants: sum of squares, scale, AdamW and NVLAMB give the baseline's bits") {
  // 1,003 elements: 62 full groups of 16 lanes and a tail of 11 (the tail's path differs from the body's).
  const size_t n = 1003;
  const std::vector<float> x = spread_values(n, 0.0), g = spread_values(n, 1.0), m0 = spread_values(n, 2.0);
  std::vector<float> v0 = spread_values(n, 3.0);
  for (float& v : v0) v = v * v;  // second moments are ≥ 0
  std::vector<double> xd(x.begin(), x.end());
  optim_math::Hyperparameters h;
  h.rule = optim_math::Rule::adamw;
  const optim_math::AdamStep c = optim_math::adam_step(h, 3, true);
  const float lr = 1e-3f, clip = 1.7f;

  // The reference: adamw_element one element at a time (what the kernel must equal, bit for bit).
  std::vector<float> w_ref = x, m_ref = m0, v_ref = v0;
  for (size_t i = 0; i < n; ++i) optim_math::adamw_element(w_ref[i], g[i], m_ref[i], v_ref[i], c, lr, clip);
  const double ss_base = cpu::chunk_sum_of_squares(CpuIsa::baseline, x.data(), n);
  const double ssd_base = cpu::chunk_sum_of_squares(CpuIsa::baseline, xd.data(), n);
  for (CpuIsa isa : cpu::runnable_cpu_isas()) {
    const std::string name = cpu::to_string(isa);
    const double ss = cpu::chunk_sum_of_squares(isa, x.data(), n);
    const double ssd = cpu::chunk_sum_of_squares(isa, xd.data(), n);
    CHECK_MESSAGE(std::memcmp(&ss, &ss_base, sizeof ss) == 0, name);
    CHECK_MESSAGE(std::memcmp(&ssd, &ssd_base, sizeof ssd) == 0, name);
    std::vector<float> scaled = x;
    cpu::scale_range(isa, scaled.data(), n, 0.3f);
    for (size_t i = 0; i < n; ++i) REQUIRE_MESSAGE(scaled[i] == x[i] * 0.3f, name << " element " << i);
    std::vector<float> w = x, m = m0, v = v0;
    cpu::adamw_range(isa, w.data(), g.data(), m.data(), v.data(), n, c, lr, clip);
    CHECK_MESSAGE(same_bits(w, w_ref), name);
    CHECK_MESSAGE(same_bits(m, m_ref), name);
    CHECK_MESSAGE(same_bits(v, v_ref), name);
    // NVLAMB pass 1 and 2 against lamb_moments_and_direction / lamb_apply one by one, Σu², Σw² against the
    // lane order (chunk_sum_of_squares on the reference u and w, itself checked by the test below).
    std::vector<float> lw = x, lm = m0, lv = v0, u_ref(n), lm_ref = m0, lv_ref = v0;
    for (size_t i = 0; i < n; ++i)
      u_ref[i] = optim_math::lamb_moments_and_direction(x[i], g[i], lm_ref[i], lv_ref[i], c, clip);
    const std::array<double, 2> sums = cpu::lamb_moments_chunk(isa, lw.data(), g.data(), lm.data(), lv.data(), n, c, clip);
    const double u_sq = cpu::chunk_sum_of_squares(CpuIsa::baseline, u_ref.data(), n);
    CHECK_MESSAGE(std::memcmp(&sums[0], &u_sq, sizeof u_sq) == 0, name);
    CHECK_MESSAGE(std::memcmp(&sums[1], &ss_base, sizeof ss_base) == 0, name);
    CHECK_MESSAGE(same_bits(lm, lm_ref), name);
    CHECK_MESSAGE(same_bits(lv, lv_ref), name);
    std::vector<float> lw_ref = x;
    for (size_t i = 0; i < n; ++i) optim_math::lamb_apply(lw_ref[i], lm_ref[i], lv_ref[i], c, 0.01f);
    cpu::lamb_apply_range(isa, lw.data(), lm.data(), lv.data(), n, c, 0.01f);
    CHECK_MESSAGE(same_bits(lw, lw_ref), name);
  }
}

TEST_CASE("cpu ISA variants: the dropout mask is dropout_mask.hpp's draw, element by element") {
  // p = 0.1's threshold, an arbitrary key, and a first index past 2^32 (the index enters the hash as 64 bits).
  const uint64_t key = dropout_key(7, 3, 1, 42), threshold = dropout_threshold(0.1), first = (uint64_t{1} << 32) + 5;
  const size_t n = 4099;  // not a multiple of any vector width
  std::vector<uint8_t> want(n);
  size_t kept = 0;
  for (size_t i = 0; i < n; ++i) {
    want[i] = dropout_keep(key, first + i, threshold) ? 1 : 0;
    kept += want[i];
  }
  // ~90 % kept: a binomial(4099, 0.9) count is within ±5σ (σ ≈ 19) of 3,689 — the mask is not all ones.
  CHECK(kept > 3594);
  CHECK(kept < 3784);
  for (CpuIsa isa : cpu::runnable_cpu_isas()) {
    std::vector<uint8_t> got(n, 7);
    cpu::dropout_keep_mask(isa, got.data(), n, key, first, threshold);
    CHECK_MESSAGE(got == want, cpu::to_string(isa));
  }
}

TEST_CASE("sum of squares: the 16-lane order of lane_sums.hpp, not one left-to-right sum") {
  // x0 = 2^26 (x0² = 2^52, whose ulp is 1) and fifteen 0.5s (0.25 each). Left to right every 0.25 is below
  // half an ulp of 2^52 and is lost: 2^52. In lanes: lane 0 = 2^52, lanes 1..15 = 0.25; the tree's w = 8
  // step makes lanes 1..7 = 0.5 (lane 0 + lane 8 = 2^52 + 0.25 → 2^52); w = 4: lanes 1..3 = 1.0 (lane 0 +
  // 0.5 is a tie, to even: 2^52); w = 2: lane 0 + lane 2 = 2^52 + 1 (exact), lane 1 = 2.0; w = 1: 2^52 + 3.
  std::vector<float> x(16, 0.5f);
  x[0] = 67108864.0f;  // 2^26
  const double lane_order = 4503599627370496.0 + 3.0;  // 2^52 + 3
  for (CpuIsa isa : cpu::runnable_cpu_isas())
    CHECK_MESSAGE(cpu::chunk_sum_of_squares(isa, x.data(), x.size()) == lane_order, cpu::to_string(isa));
  // The backend's sum of squares (the global gradient norm) uses it too, for any thread count.
  for (int threads : {1, 2}) {
    auto backend = make_cpu_backend(ComputeType::f32, threads);
    const DeviceBuffer buf = backend->allocate(x.size() * sizeof(float));
    backend->copy_to_device(DeviceSpan::of(buf), x.data());
    CHECK(backend->sum_of_squares(DeviceSpan::of(buf)) == lane_order);
  }
}
