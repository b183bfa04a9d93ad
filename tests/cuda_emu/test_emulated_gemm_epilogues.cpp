// tests/cuda_emu/test_emulated_gemm_epilogues.cpp — the kernels around the CUDA backend's GEMMs and biases,
// compiled by g++ and run under the emulator, against the CPU backend: the bias rows after a cuBLAS product
// (gemm_bias.cu), the 16-bit GEMM finish (gemm_finish.cu: + C, + bias, one rounding), bias_grad's
// deterministic column sums (bias_grad.cu, column_sums.cuh), the fused bias_dropout_residual forward and
// backward (bias_dropout_residual.cu) and the op boundary's fp32 ↔ 16-bit conversions (convert_16bit.cu).
// The GEMM product itself is cuBLAS's and is not emulated here: the CPU's GEMM runs on an identity matrix
// (I·P = P exactly: every other term is an exact zero), so its C-accumulate and bias steps are the reference.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "emulated_kernels.hpp"
#include "emulated_test_util.hpp"
#include "runtime/exec/cpu_fused_dropout.hpp"
#include "runtime/exec/math/half_bits.hpp"
#include "runtime/exec/precision.hpp"

namespace {

namespace cpu = ptsim::runtime::cpu;
namespace math = ptsim::runtime::math;
using ptsim::models::DType;
using ptsim::runtime::math::Storage;
using emu_test::check_close;
using emu_test::DeviceScratch;
using emu_test::first_bit_difference;
using emu_test::random_floats;
constexpr cudaStream_t kStream = nullptr;

std::vector<float> identity(int64_t m) {
  std::vector<float> a(static_cast<size_t>(m * m), 0.0f);
  for (int64_t i = 0; i < m; ++i) a[static_cast<size_t>(i * m + i)] = 1.0f;
  return a;
}

// The CPU backend's GEMM step for C (m,n) (+)= I·product (+ bias): its accumulate and bias order.
std::vector<float> cpu_gemm_epilogue(std::vector<float> c, const std::vector<float>& product, const float* bias,
                                     bool accumulate, int64_t m, int64_t n) {
  ptsim::models::GemmAttrs attrs;
  attrs.m = m;
  attrs.n = n;
  attrs.k = m;
  attrs.accumulate = accumulate;
  attrs.has_bias = bias != nullptr;
  cpu::gemm_forward<float>(c.data(), identity(m).data(), product.data(), bias, attrs);
  return c;
}

std::vector<uint16_t> narrow(const std::vector<float>& x, DType t) {
  std::vector<uint16_t> out(x.size());
  ptsim::runtime::narrow_16bit(out.data(), x.data(), x.size(), t);
  return out;
}

std::vector<float> widen(const std::vector<uint16_t>& x, DType t) {
  std::vector<float> out(x.size());
  ptsim::runtime::widen_16bit(out.data(), x.data(), x.size(), t);
  return out;
}

}  // namespace

TEST_CASE("emulated GEMM bias rows equal the CPU GEMM's bias step") {
  const int64_t m = 13, n = 300 + 1;  // the grid-stride loop crosses rows at non-block boundaries
  const std::vector<float> product = random_floats(m * n, 71), bias = random_floats(n, 72);
  std::vector<float> c = product;
  emu::launch_add_bias_rows(c.data(), bias.data(), m, n, kStream);
  // one fp32 addition per element on both sides (product + bias) → exact
  CHECK(first_bit_difference(c, cpu_gemm_epilogue(std::vector<float>(product.size()), product, bias.data(), false, m, n)) ==
        -1);
}

TEST_CASE("emulated 16-bit GEMM finish equals the CPU's fp32 GEMM then one rounding") {
  const int64_t m = 11, n = 37;
  const std::vector<float> product = random_floats(m * n, 81, -40.0f, 40.0f);
  for (DType d_type : {DType::bf16, DType::f16, DType::f32}) {
    const auto elem = d_type == DType::bf16 ? emu::GemmElement::bf16
                      : d_type == DType::f16 ? emu::GemmElement::f16 : emu::GemmElement::f32;
    for (bool accumulate : {false, true}) {
      for (bool with_bias : {false, true}) {
        CAPTURE(ptsim::models::to_string(d_type));
        CAPTURE(accumulate);
        CAPTURE(with_bias);
        // C and the bias as the 16-bit D stores them (their widening is exact), fp32 for an f32 D
        const std::vector<float> c_f32 = random_floats(m * n, 82), bias_f32 = random_floats(n, 83);
        std::vector<float> c_wide = c_f32, bias_wide = bias_f32;
        std::vector<uint16_t> c16, bias16;
        if (d_type != DType::f32) {
          c16 = narrow(c_f32, d_type);
          bias16 = narrow(bias_f32, d_type);
          c_wide = widen(c16, d_type);
          bias_wide = widen(bias16, d_type);
        }
        std::vector<float> want = cpu_gemm_epilogue(c_wide, product, with_bias ? bias_wide.data() : nullptr,
                                                    accumulate, m, n);
        if (d_type == DType::f32) {
          std::vector<float> d = c_f32;
          emu::launch_gemm_finish(d.data(), elem, product.data(), with_bias ? bias_f32.data() : nullptr, elem,
                                  accumulate, m, n, kStream);
          CHECK(first_bit_difference(d, want) == -1);
        } else {
          std::vector<uint16_t> d = c16;
          emu::launch_gemm_finish(d.data(), elem, product.data(), with_bias ? bias16.data() : nullptr, elem,
                                  accumulate, m, n, kStream);
          // (product + C) + bias in fp32 on both sides, then one round-to-nearest-even → the same 16 bits
          CHECK(first_bit_difference(d, narrow(want, d_type)) == -1);
        }
      }
    }
  }
}

TEST_CASE("emulated bias_grad: column_sum_math's order bit for bit, the CPU's within fp32 reordering") {
  for (int64_t M : {int64_t{77}, int64_t{300}}) {  // one row chunk of 128, and three (the last ragged)
    const int64_t N = 45;
    CAPTURE(M);
    const std::vector<float> dy = random_floats(M * N, 91);
    std::vector<float> dbias(N, 0.75f), dbias_cpu(N, 0.75f), dbias_order(N, 0.75f);
    DeviceScratch scratch(emu::column_sums_scratch_bytes(M, N));
    emu::launch_bias_grad(dbias.data(), dy.data(), M, N, Storage::f32, scratch.p, kStream);
    cpu::bias_grad<float>(dbias_cpu.data(), dy.data(), M, N);
    // the documented order, run on the host with the kernels' own functions (column_sum_math.hpp)
    const int64_t chunks = math::column_sum_chunks(M);
    std::vector<float> partial(static_cast<size_t>(chunks * N));
    const math::StoredColumnTerm<math::F32Storage> term{dy.data(), N};
    for (int64_t c = 0; c < chunks; ++c)
      for (int64_t n = 0; n < N; ++n) partial[static_cast<size_t>(c * N + n)] = math::column_chunk_sum(term, c, M, n);
    for (int64_t n = 0; n < N; ++n) dbias_order[n] = math::column_finish(0.75f, partial.data(), chunks, N, n);
    CHECK(first_bit_difference(dbias, dbias_order) == -1);
    // Eigen's column sum adds the rows in another grouping: fp32 sums of ≤ 300 terms of size ≤ 2 differ by a
    // few ulp of the sum's size (~1e-5 of 30); 1e-5 relative is well below a missed or repeated row (≥ 1e-3)
    check_close(dbias, dbias_cpu, 1e-5, "dbias");
  }
}

TEST_CASE("emulated bias_dropout_residual forward (same mask) and backward against the CPU's") {
  for (int64_t M : {int64_t{9}, int64_t{200}}) {  // backward: one row chunk (CPU order exactly), and two
    const int64_t N = 67, total = M * N;
    CAPTURE(M);
    const std::vector<float> y = random_floats(total, 101), bias = random_floats(N, 102);
    const std::vector<float> residual = random_floats(total, 103), dout = random_floats(total, 104);
    const uint64_t key = cpu::dropout_key(7, 1, 2, 3);
    for (bool dropout : {true, false}) {
      CAPTURE(dropout);
      std::vector<float> out(total), out_cpu(total);
      std::vector<uint8_t> mask(total, 9), mask_cpu(total, 9);
      emu::launch_bias_dropout_residual_forward(out.data(), dropout ? mask.data() : nullptr, y.data(), bias.data(),
                                                residual.data(), M, N, 0.1, key, Storage::f32, kStream);
      cpu::bias_dropout_residual_forward<float>(out_cpu.data(), dropout ? mask_cpu.data() : nullptr, y.data(),
                                                bias.data(), residual.data(), M, N, 0.1, key);
      CHECK(mask == mask_cpu);  // dropout_mask.hpp's hash at the flat index on both sides
      CHECK(first_bit_difference(out, out_cpu) == -1);  // fused_dropout_math.hpp's fp32 steps on both sides
      std::vector<float> dy(total), dy_cpu(total), dbias(N, -0.5f), dbias_cpu(N, -0.5f);
      DeviceScratch scratch(emu::bias_dropout_residual_backward_scratch_bytes(M, N));
      emu::launch_bias_dropout_residual_backward(dy.data(), dbias.data(), dout.data(), dropout ? mask.data() : nullptr,
                                                 M, N, 0.1, scratch.p, Storage::f32, kStream);
      cpu::bias_dropout_residual_backward<float>(dy_cpu.data(), dbias_cpu.data(), dout.data(),
                                                 dropout ? mask_cpu.data() : nullptr, M, N, 0.1);
      CHECK(first_bit_difference(dy, dy_cpu) == -1);
      if (M <= math::kRowsPerChunk) {
        // one chunk: dbias + (Σ rows from 0, in row order) on both sides → exact
        CHECK(first_bit_difference(dbias, dbias_cpu) == -1);
      } else {
        // chunk partials added in order vs one running sum: reordered fp32 sums of 200 terms, as for bias_grad
        check_close(dbias, dbias_cpu, 1e-5, "dbias");
      }
    }
  }
}

TEST_CASE("emulated fp32 <-> 16-bit conversions equal the CPU's on every 16-bit pattern and edge values") {
  std::vector<uint16_t> all(65536);
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<uint16_t>(i);
  std::vector<float> edges = random_floats(1000, 111, -70000.0f, 70000.0f);
  const float specials[] = {0.0f, -0.0f, 65504.0f, 65520.0f, -65536.0f, 1e-8f, 5.96e-8f, 2.98e-8f, 6.1e-5f,
                            1.0f + 0x1p-11f, 1.0f + 0x1p-8f, 3.0f * 0x1p-25f, 1e38f, std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN(),
                            -std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::denorm_min()};
  edges.insert(edges.end(), std::begin(specials), std::end(specials));
  for (DType t : {DType::bf16, DType::f16}) {
    CAPTURE(ptsim::models::to_string(t));
    const bool bf16 = t == DType::bf16;
    std::vector<float> wide(all.size(), 0.125f);  // not the last pattern (0xFFFF, a NaN)
    emu::launch_widen_16bit(wide.data(), all.data(), all.size(), bf16, kStream);
    CHECK(first_bit_difference(wide, widen(all, t)) == -1);  // exact widening: identical bits (NaNs included)
    std::vector<uint16_t> narrowed(edges.size(), 0x5555);  // a sentinel no edge value narrows to
    emu::launch_narrow_16bit(narrowed.data(), edges.data(), edges.size(), bf16, kStream);
    CHECK(narrowed == narrow(edges, t));  // one round-to-nearest-even, the same function on both sides
  }
}
