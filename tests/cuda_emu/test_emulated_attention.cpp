// tests/cuda_emu/test_emulated_attention.cpp — the CUDA fused attention without tensor cores
// (fused_attention.cu: tiled online-softmax forward, FlashAttention-2 backward as a D row pass, dK/dV by key
// tile, dQ by query tile), compiled by g++ and run under the emulator, against the CPU backend's fused
// attention (cpu_fused_attention.cpp). Both use math/attention_math.hpp per element, but the CPU forms the
// tile products on its GEMM engine and the kernels with fmaf loops, in other orders: values agree to a
// stated tolerance, masked and dropped positions exactly. Shapes: S = 45 (one full and one ragged tile of 32;
// three tiles of 16 in the 128-column kernel), head dims 24 (zero-padded into the 64-column kernel) and 80
// (the 128-column kernel), causal and not, a padding mask with one batch fully padded, dropout on and off.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "emulated_kernels.hpp"
#include "emulated_test_util.hpp"
#include "runtime/exec/cpu_fused_attention.hpp"
#include "tests/runtime/exec/attention_test_problem.hpp"  // defines: problem_of

namespace {

namespace cpu = ptsim::runtime::cpu;
using emu_test::check_close;
using emu_test::DeviceScratch;
using emu_test::random_floats;
constexpr cudaStream_t kStream = nullptr;

struct Case {
  int64_t batch = 2, heads = 2, seq = 45, head_dim = 24;
  bool causal = false, padded = false;
  double dropout = 0.0;  // the name ptsim::test::problem_of reads
};

// Inputs, and each side's outputs.
struct Run {
  std::vector<float> q, k, v, dcontext;
  std::vector<int32_t> keep;
  std::vector<float> context, lse, dq, dk, dv;
};

Run inputs(const Case& c) {
  const size_t n = static_cast<size_t>(c.batch * c.heads * c.seq * c.head_dim);
  Run r{random_floats(n, 201, -1.5f, 1.5f), random_floats(n, 202, -1.5f, 1.5f), random_floats(n, 203),
        random_floats(n, 204), {}, {}, {}, {}, {}, {}};
  if (c.padded) {  // batch 0 pads its last 7 keys; batch 1 pads every key (its rows have no key at all)
    r.keep.assign(static_cast<size_t>(c.batch * c.seq), 1);
    for (int64_t j = c.seq - 7; j < c.seq; ++j) r.keep[static_cast<size_t>(j)] = 0;
    for (int64_t j = 0; j < c.seq; ++j) r.keep[static_cast<size_t>(c.seq + j)] = 0;
  }
  return r;
}

void run_cpu(Run& r, const Case& c) {
  const auto p = ptsim::test::problem_of(c);
  const size_t n = r.q.size(), rows = static_cast<size_t>(p.batch_heads * p.seq);
  const int32_t* keep = c.padded ? r.keep.data() : nullptr;
  r.context.assign(n, 0.0f);
  r.lse.assign(rows, 0.0f);
  cpu::fused_attention_forward<float>(r.context.data(), r.lse.data(), r.q.data(), r.k.data(), r.v.data(), keep, p, 1);
  r.dq.assign(n, 0.0f);
  r.dk.assign(n, 0.0f);
  r.dv.assign(n, 0.0f);
  cpu::fused_attention_backward<float>(r.dq.data(), r.dk.data(), r.dv.data(), r.dcontext.data(), r.q.data(),
                                       r.k.data(), r.v.data(), r.context.data(), r.lse.data(), keep, p, 1);
}

// The kernels' backward reads the CPU's context and lse, so its comparison does not inherit the forward's.
void run_emulated(Run& r, const Case& c, const Run& cpu_run) {
  const auto p = ptsim::test::problem_of(c);
  const emu::FusedAttentionArgs a = emu::fused_attention_args(p, c.padded ? r.keep.data() : nullptr);
  const size_t n = r.q.size(), rows = static_cast<size_t>(p.batch_heads * p.seq);
  r.context.assign(n, -7.0f);  // sentinels: an element no kernel writes shows
  r.lse.assign(rows, -7.0f);
  emu::launch_fused_attention_forward(r.context.data(), r.lse.data(), r.q.data(), r.k.data(), r.v.data(), a, kStream);
  r.dq.assign(n, -7.0f);
  r.dk.assign(n, -7.0f);
  r.dv.assign(n, -7.0f);
  DeviceScratch scratch(emu::fused_attention_backward_scratch_bytes(a));
  emu::launch_fused_attention_backward(r.dq.data(), r.dk.data(), r.dv.data(), r.dcontext.data(), r.q.data(),
                                       r.k.data(), r.v.data(), cpu_run.context.data(), cpu_run.lse.data(), a,
                                       scratch.p, kStream);
}

std::string describe(const Case& c) {
  return "d = " + std::to_string(c.head_dim) + (c.causal ? ", causal" : "") + (c.padded ? ", padded" : "") +
         (c.dropout > 0 ? ", dropout" : "");
}

void compare(const Case& c) {
  Run cpu_run = inputs(c), emu_run = inputs(c);
  run_cpu(cpu_run, c);
  run_emulated(emu_run, c, cpu_run);
  const std::string what = describe(c);
  CAPTURE(what);
  // lse: +inf exactly where a row has no allowed key (the fully padded batch), else close
  for (size_t i = 0; i < cpu_run.lse.size(); ++i)
    if (std::isinf(cpu_run.lse[i])) REQUIRE_MESSAGE(emu_run.lse[i] == cpu_run.lse[i], "lse[" << i << "]");
  // fp32 dot products of ≤ 80 terms and ≤ 45-term probability sums, fmaf chains vs the CPU's GEMM order and
  // Eigen's exp vs glibc's expf: a few ulp of the terms' size; seen here, below 1e-6 everywhere (forward and
  // backward). 1e-5 leaves a factor 10 for other seeds and is far below a dropped tile, a wrong mask or a
  // misplaced row (≥ 1e-2)
  check_close(emu_run.lse, cpu_run.lse, 1e-5, "lse");
  check_close(emu_run.context, cpu_run.context, 1e-5, "context");
  check_close(emu_run.dq, cpu_run.dq, 1e-5, "dq");
  check_close(emu_run.dk, cpu_run.dk, 1e-5, "dk");
  check_close(emu_run.dv, cpu_run.dv, 1e-5, "dv");
  // positions that get nothing (a fully padded batch) are exact zeros on both sides
  for (size_t i = 0; i < cpu_run.dk.size(); ++i)
    if (cpu_run.dk[i] == 0.0f && cpu_run.dv[i] == 0.0f)
      REQUIRE_MESSAGE((emu_run.dk[i] == 0.0f && emu_run.dv[i] == 0.0f), "dk/dv[" << i << "] should be 0");
}

}  // namespace

TEST_CASE("emulated fused attention (64-column kernel, d = 24) forward and backward against the CPU's") {
  for (bool causal : {false, true})
    for (bool padded : {false, true}) compare(Case{2, 2, 45, 24, causal, padded, 0.0});
  compare(Case{2, 2, 45, 24, true, true, 0.15});
}

TEST_CASE("emulated fused attention (128-column kernel, d = 80) forward and backward against the CPU's") {
  compare(Case{1, 2, 45, 80, false, false, 0.0});
  compare(Case{2, 1, 45, 80, true, true, 0.15});
}

TEST_CASE("emulated fused attention rejects a head dim above the kernels' 128") {
  emu::FusedAttentionArgs a;
  a.batch_heads = 1;
  a.seq = 4;
  a.head_dim = emu::kFusedAttentionMaxHeadDim + 1;
  std::vector<float> x(4 * 129), lse(4);
  CHECK_THROWS_AS(emu::launch_fused_attention_forward(x.data(), lse.data(), x.data(), x.data(), x.data(), a, kStream),
                  std::invalid_argument);
}
