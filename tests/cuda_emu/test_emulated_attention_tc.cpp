// tests/cuda_emu/test_emulated_attention_tc.cpp — the tensor-core fused attention (fused_attention_tc.cu over
// attention_tc_wmma.cuh's WMMA block product) run under the emulator with its WMMA shim (include/mma.h),
// forward and backward, against the host run of the same tile algorithm (math/attention_tc_host_mma.hpp via
// tests/runtime/exec/attention_tc_host_run.hpp) bit for bit: the shim's mma_sync adds the 16 exact products
// of each k-block onto the accumulator in k order, as the host block product does, every other step is the
// same PTSIM_HD code, and no step reduces across threads — so any difference is a kernel-side bug (a wrong
// Lanes split, a missing barrier the fibers' order exposes, a launch over the wrong tiles). Also held to the
// derived bound against the CPU fused attention (attention_tc_cases.hpp), as the gpu suite holds the device.
#include <doctest/doctest.h>

#include <Eigen/Core>
#include <bit>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "emulated_kernels.hpp"  // first: the emulator's runtime API before any toolkit header

#include <mma.h>  // the emulator's WMMA shim (tests/cuda_emu/include)

#include "launch.hpp"
#include "tests/runtime/exec/attention_tc_host_run.hpp"

namespace {

using namespace ptsim::test::attention_tc;

// 9 significant digits: enough to tell any two floats apart.
std::string exact(float x) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.9g", static_cast<double>(x));
  return buffer;
}

// Bit-for-bit equality of two fp32 vectors (NaN equal to the same NaN, −0 not equal to +0); names the first
// difference.
void check_bits(const std::vector<float>& got, const std::vector<float>& want, const std::string& what) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i)
    if (std::bit_cast<uint32_t>(got[i]) != std::bit_cast<uint32_t>(want[i])) {
      FAIL_CHECK(what << "[" << i << "]: emulated kernel " << exact(got[i]) << ", host tile algorithm " << exact(want[i]));
      return;
    }
}

std::vector<float> random_values(size_t n) {
  std::mt19937 rng(21);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

template <class E>
emu::Attention16 dtype_of() {
  return std::is_same_v<E, Eigen::bfloat16> ? emu::Attention16::bf16 : emu::Attention16::f16;
}

// The forward through the emulated kernel (host memory is the emulator's device memory).
template <class E>
Result run_emulated(const Inputs& in, const ptsim::runtime::AttentionProblem& p, const int32_t* keep) {
  const std::vector<E> q = narrowed<E>(in.q), k = narrowed<E>(in.k), v = narrowed<E>(in.v);
  std::vector<E> context(q.size(), E(NAN));
  Result r;
  r.lse.assign(static_cast<size_t>(p.batch_heads * p.seq), NAN);
  const emu::FusedAttentionArgs a = emu::fused_attention_args(p, keep);
  emu::launch_fused_attention_tc_forward(context.data(), r.lse.data(), q.data(), k.data(), v.data(), dtype_of<E>(), a,
                                         nullptr);
  REQUIRE(cudaGetLastError() == cudaSuccess);
  r.context = widened(context);
  return r;
}

template <class E>
Gradients run_emulated_backward(const Inputs& in, const BackwardInputs& b, const ptsim::runtime::AttentionProblem& p,
                                const int32_t* keep) {
  const std::vector<E> q = narrowed<E>(in.q), k = narrowed<E>(in.k), v = narrowed<E>(in.v),
                       dout = narrowed<E>(b.dout), out = narrowed<E>(b.context);
  std::vector<E> dq(q.size(), E(NAN)), dk(q.size(), E(NAN)), dv(q.size(), E(NAN));
  const emu::FusedAttentionArgs a = emu::fused_attention_args(p, keep);
  std::vector<float> scratch(emu::fused_attention_backward_scratch_bytes(a) / sizeof(float) + 1, NAN);
  emu::launch_fused_attention_tc_backward(dq.data(), dk.data(), dv.data(), dout.data(), q.data(), k.data(), v.data(),
                                          out.data(), b.lse.data(), dtype_of<E>(), a, scratch.data(), nullptr);
  REQUIRE(cudaGetLastError() == cudaSuccess);
  return widened_gradients(dq, dk, dv);
}

// The emulated run of one case: forward and backward equal the host run's bits and are within the bound.
template <class E>
void check_case(const Case& c, Format16 format) {
  const Inputs in = make_inputs<E>(c, seed_of(c));
  const ptsim::runtime::AttentionProblem p = problem_of(c);
  const int32_t* keep = c.padded ? in.mask.data() : nullptr;
  const Result got = run_emulated<E>(in, p, keep), host = run_host<E>(in, p, keep);
  check_bits(got.context, host.context, c.label() + " context");
  check_bits(got.lse, host.lse, c.label() + " lse");
  const Verdict v = compare(c, in, got, format);
  CHECK_MESSAGE(v.failures == 0, v.first_failure);
  const BackwardInputs b = make_backward_inputs<E>(c, in, seed_of(c) + 1);
  const Gradients g = run_emulated_backward<E>(in, b, p, keep), gh = run_host_backward<E>(in, b, p, keep);
  check_bits(g.dq, gh.dq, c.label() + " dq");
  check_bits(g.dk, gh.dk, c.label() + " dk");
  check_bits(g.dv, gh.dv, c.label() + " dv");
  const Verdict vb = compare_backward(c, in, b, g, format);
  CHECK_MESSAGE(vb.failures == 0, vb.first_failure);
}

// A few of attention_tc_cases.hpp's cases, kept small for the cpu suite: both head dims (the 64 and the 128
// kernels), an odd sequence length with a ragged last tile, the padding mask, causal, dropout, a batch with
// no key, and head dim 37 (zero-padded columns).
std::vector<Case> emulated_cases() {
  std::vector<Case> picked;
  for (const Case& c : cases()) {
    const std::string l = c.label();
    if (l == "S=7 d=64 padded" || l == "S=7 d=128 padded causal dropout" || l == "S=7 d=64 padded (batch 1 all padded)" ||
        l == "S=130 d=64 padded causal dropout" || l == "S=130 d=37 padded causal dropout")
      picked.push_back(c);
  }
  REQUIRE(picked.size() == 5);  // a renamed case would silently drop out otherwise
  return picked;
}

}  // namespace

TEST_CASE("emulated WMMA: col-major A, row-major B, a col-major accumulator, in the documented order") {
  // C (16×16) = Cin + A·B with k = 32 (two mma_sync steps). A stored column-major (element (r, x) at x·24 + r),
  // B row-major (x·24 + c), the accumulator loaded and stored column-major (c·20 + r); ldm 24 and 20 are
  // multiples of 16 bytes. Expected: the shim's stated order, k = 0…31 added one by one onto Cin in fp32 —
  // exact equality, since each 16-bit product is exact in fp32 and the adds are the same roundings.
  using namespace nvcuda;
  alignas(32) __half a[32 * 24], b[32 * 24];
  alignas(32) float c[16 * 20], want[16 * 20];
  const std::vector<float> values = random_values(32 * 24 * 2 + 16 * 20);
  for (int i = 0; i < 32 * 24; ++i) {
    a[i] = __float2half_rn(values[static_cast<size_t>(i)]);
    b[i] = __float2half_rn(values[static_cast<size_t>(32 * 24 + i)]);
  }
  for (int i = 0; i < 16 * 20; ++i) c[i] = want[i] = values[static_cast<size_t>(2 * 32 * 24 + i)];
  for (int r = 0; r < 16; ++r)
    for (int col = 0; col < 16; ++col)
      for (int x = 0; x < 32; ++x) want[col * 20 + r] += __half2float(a[x * 24 + r]) * __half2float(b[x * 24 + col]);
  cuda_emu::run_grid(dim3(1), dim3(32), 0, [&] {
    wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::col_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    wmma::load_matrix_sync(acc, c, 20, wmma::mem_col_major);
    for (int x = 0; x < 32; x += 16) {
      wmma::load_matrix_sync(fa, a + x * 24, 24);
      wmma::load_matrix_sync(fb, b + x * 24, 24);
      wmma::mma_sync(acc, fa, fb, acc);
    }
    wmma::store_matrix_sync(c, acc, 20, wmma::mem_col_major);
  });
  CHECK(std::memcmp(c, want, sizeof c) == 0);
  // WMMA's memory contract: a pointer off 32-byte alignment, an ldm that is not a multiple of 16 bytes
  auto load_at = [&](const __half* p, unsigned ldm) {
    return [p, ldm] {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> f;
      wmma::load_matrix_sync(f, p, ldm);
    };
  };
  CHECK_THROWS_WITH_AS(cuda_emu::run_grid(dim3(1), dim3(32), 0, load_at(a + 8, 24)),
                       doctest::Contains("not 256-bit (32-byte) aligned"), cuda_emu::KernelError);
  CHECK_THROWS_WITH_AS(cuda_emu::run_grid(dim3(1), dim3(32), 0, load_at(a, 20)),
                       doctest::Contains("ldm 20 elements is not a multiple of 16 bytes"), cuda_emu::KernelError);
  // warp-collective: lane 5 loading another tile than lane 0, and lanes 16–31 not loading at all
  CHECK_THROWS_WITH_AS(cuda_emu::run_grid(dim3(1), dim3(32), 0,
                                          [&] { load_at(cuda_emu::current_linear_thread() == 5 ? b : a, 24)(); }),
                       doctest::Contains("wmma::load_matrix_sync: lane 5 of warp 0 calls it with other arguments"),
                       cuda_emu::KernelError);
  CHECK_THROWS_WITH_AS(cuda_emu::run_grid(dim3(1), dim3(32), 0,
                                          [&] {
                                            if (cuda_emu::current_linear_thread() < 16) load_at(a, 24)();
                                          }),
                       doctest::Contains("lane 16 of its warp (thread 16) is returned"), cuda_emu::KernelError);
}

TEST_CASE_TEMPLATE("emulated tensor-core attention forward and backward equal the host tile algorithm's bits", E,
                   Eigen::bfloat16, Eigen::half) {
  const Format16 format = std::is_same_v<E, Eigen::bfloat16> ? kBf16 : kFp16;
  for (const Case& c : emulated_cases()) {
    CAPTURE(c.label());
    check_case<E>(c, format);
  }
}
