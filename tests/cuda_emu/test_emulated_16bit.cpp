// tests/cuda_emu/test_emulated_16bit.cpp — the CUDA kernels on bf16 and fp16 storage (the storage-typed
// variants that skip the op boundary: math/storage.hpp, math/row_storage.hpp, cuda/native_16bit_*.hpp),
// compiled by g++ and run under the emulator. docs/cuda-backend.md ("16-bit storage") says such a kernel gives
// the op boundary's bits: widen every operand exactly, the fp32 kernel's maths, round each output once. So each
// case runs the kernel twice — on the 16-bit operands, and as the fp32 kernel on their exact widening with its
// outputs narrowed afterwards — and requires the same bits (fp32 outputs such as mean, rstd, lse and the loss
// unrounded and identical). The fp32 kernels themselves are compared with the CPU in
// test_emulated_kernels.cpp; here one case also closes the loop to the CPU's own boundary (add).
#include <doctest/doctest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "emulated_kernels.hpp"
#include "emulated_test_util.hpp"
#include "runtime/exec/precision.hpp"

namespace {

namespace cpu = ptsim::runtime::cpu;
using ptsim::models::DType;
using ptsim::runtime::math::Storage;
using emu_test::DeviceScratch;
using emu_test::first_bit_difference;
using emu_test::random_floats;
constexpr cudaStream_t kStream = nullptr;
constexpr uint16_t kSentinel = 0x7E01;  // a NaN no kernel stores (they store the quiet NaN 0x7E00/0x7FC0 or numbers)

DType dtype_of(Storage s) { return s == Storage::bf16 ? DType::bf16 : DType::f16; }

// One 16-bit operand: its bits and their exact widening (what the fp32 run reads).
struct Half {
  std::vector<uint16_t> bits;
  std::vector<float> wide;
};

Half half_of(const std::vector<float>& x, Storage s) {
  Half h{std::vector<uint16_t>(x.size()), std::vector<float>(x.size())};
  ptsim::runtime::narrow_16bit(h.bits.data(), x.data(), x.size(), dtype_of(s));
  ptsim::runtime::widen_16bit(h.wide.data(), h.bits.data(), x.size(), dtype_of(s));
  return h;
}

Half random_half(size_t n, uint32_t seed, Storage s, float lo = -2.0f, float hi = 2.0f) {
  return half_of(random_floats(n, seed, lo, hi), s);
}

// An output buffer for each run: 16 bits (sentinel-filled) and fp32 (NaN-filled), or a copy of an operand for
// outputs that accumulate (+=).
struct Out {
  std::vector<uint16_t> bits;
  std::vector<float> wide;
  explicit Out(size_t n) : bits(n, kSentinel), wide(n, std::numeric_limits<float>::quiet_NaN()) {}
  explicit Out(const Half& start) : bits(start.bits), wide(start.wide) {}
};

// The 16-bit run's output against the fp32 run's, narrowed once (the boundary's bits).
void check_boundary_bits(const Out& o, Storage s, const std::string& what) {
  std::vector<uint16_t> want(o.wide.size());
  ptsim::runtime::narrow_16bit(want.data(), o.wide.data(), o.wide.size(), dtype_of(s));
  const int64_t at = first_bit_difference(o.bits, want);
  CHECK_MESSAGE(at == -1, what << " (" << ptsim::models::to_string(dtype_of(s)) << "): element " << at
                               << " differs from the boundary's bits");
}

const Storage kStorages[] = {Storage::bf16, Storage::f16};

}  // namespace

TEST_CASE("emulated elementwise kernels on 16-bit storage give the op boundary's bits") {
  const int64_t n = 777;  // three blocks of 256 and a ragged tail
  for (Storage s : kStorages) {
    const Half a = random_half(n, 301, s), b = random_half(n, 302, s), c = random_half(n, 303, s);
    {  // add of three inputs: one fp32 sum, rounded once — also the CPU's boundary (widen, add_forward, narrow)
      Out y(n);
      const void* const xs16[] = {a.bits.data(), b.bits.data(), c.bits.data()};
      const void* const xs32[] = {a.wide.data(), b.wide.data(), c.wide.data()};
      emu::launch_add(y.bits.data(), xs16, n, s, kStream);
      emu::launch_add(y.wide.data(), xs32, n, Storage::f32, kStream);
      check_boundary_bits(y, s, "add");
      const float* const cpu_xs[] = {a.wide.data(), b.wide.data(), c.wide.data()};
      cpu::add_forward<float>(y.wide.data(), cpu_xs, n);
      check_boundary_bits(y, s, "add against the CPU's boundary");
    }
    {  // dropout forward (same mask) and backward
      const uint64_t key = cpu::dropout_key(3, 4, 0, 1);
      Out y(n), dx(n);
      std::vector<uint8_t> mask16(n), mask32(n);
      emu::launch_dropout_forward(y.bits.data(), mask16.data(), a.bits.data(), n, 0.25, key, s, kStream);
      emu::launch_dropout_forward(y.wide.data(), mask32.data(), a.wide.data(), n, 0.25, key, Storage::f32, kStream);
      CHECK(mask16 == mask32);
      check_boundary_bits(y, s, "dropout");
      emu::launch_dropout_backward(dx.bits.data(), b.bits.data(), mask16.data(), n, 0.25, s, kStream);
      emu::launch_dropout_backward(dx.wide.data(), b.wide.data(), mask32.data(), n, 0.25, Storage::f32, kStream);
      check_boundary_bits(dx, s, "dropout backward");
    }
    for (bool tanh_form : {false, true}) {
      Out y(n), dx(n);
      emu::launch_gelu_forward(y.bits.data(), a.bits.data(), n, tanh_form, s, kStream);
      emu::launch_gelu_forward(y.wide.data(), a.wide.data(), n, tanh_form, Storage::f32, kStream);
      check_boundary_bits(y, s, tanh_form ? "gelu (tanh form)" : "gelu");
      emu::launch_gelu_backward(dx.bits.data(), b.bits.data(), a.bits.data(), n, tanh_form, s, kStream);
      emu::launch_gelu_backward(dx.wide.data(), b.wide.data(), a.wide.data(), n, tanh_form, Storage::f32, kStream);
      check_boundary_bits(dx, s, tanh_form ? "gelu backward (tanh form)" : "gelu backward");
    }
    {
      Out y(n), dx(n);
      emu::launch_tanh_forward(y.bits.data(), a.bits.data(), n, s, kStream);
      emu::launch_tanh_forward(y.wide.data(), a.wide.data(), n, Storage::f32, kStream);
      check_boundary_bits(y, s, "tanh");
      emu::launch_tanh_backward(dx.bits.data(), b.bits.data(), c.bits.data(), n, s, kStream);
      emu::launch_tanh_backward(dx.wide.data(), b.wide.data(), c.wide.data(), n, Storage::f32, kStream);
      check_boundary_bits(dx, s, "tanh backward");
    }
  }
}

TEST_CASE("emulated copies on 16-bit storage (heads, gather_rows) move the stored bits") {
  for (Storage s : kStorages) {
    const int64_t B = 2, S = 5, nh = 3, d = 7;
    const Half x = random_half(B * S * nh * d, 311, s);
    Out y(x.bits.size()), back(x.bits.size());
    emu::launch_split_heads(y.bits.data(), x.bits.data(), B, S, nh, d, s, kStream);
    emu::launch_split_heads(y.wide.data(), x.wide.data(), B, S, nh, d, Storage::f32, kStream);
    check_boundary_bits(y, s, "split_heads");
    emu::launch_merge_heads(back.bits.data(), y.bits.data(), B, S, nh, d, s, kStream);
    CHECK(back.bits == x.bits);
    const int64_t M = 19, N = 33, P = 23;
    const Half table = random_half(M * N, 312, s);
    std::vector<int32_t> index(P);
    for (int64_t p = 0; p < P; ++p) index[p] = static_cast<int32_t>((p * 5 + 2) % M);
    Out g(P * N);
    DeviceScratch error(sizeof(emu::DeviceError));
    *static_cast<emu::DeviceError*>(error.p) = emu::DeviceError{};
    auto* e = static_cast<emu::DeviceError*>(error.p);
    emu::launch_gather_rows(g.bits.data(), table.bits.data(), index.data(), P, M, N, emu::DeviceErrorKind::gather_index,
                            e, s, kStream);
    emu::launch_gather_rows(g.wide.data(), table.wide.data(), index.data(), P, M, N,
                            emu::DeviceErrorKind::gather_index, e, Storage::f32, kStream);
    CHECK(e->kind == 0);
    check_boundary_bits(g, s, "gather_rows");
  }
}

TEST_CASE("emulated bias_grad and bias_dropout_residual on 16-bit storage give the op boundary's bits") {
  for (Storage s : kStorages) {
    const int64_t M = 150, N = 41;  // two row chunks of column sums
    const Half dy = random_half(M * N, 321, s), dbias0 = random_half(N, 322, s);
    DeviceScratch scratch(emu::column_sums_scratch_bytes(M, N));
    Out dbias(dbias0);
    emu::launch_bias_grad(dbias.bits.data(), dy.bits.data(), M, N, s, scratch.p, kStream);
    emu::launch_bias_grad(dbias.wide.data(), dy.wide.data(), M, N, Storage::f32, scratch.p, kStream);
    check_boundary_bits(dbias, s, "bias_grad");

    const Half y = random_half(M * N, 323, s), bias = random_half(N, 324, s), residual = random_half(M * N, 325, s);
    const uint64_t key = cpu::dropout_key(8, 1, 1, 4);
    Out out(M * N), dyo(M * N), db(dbias0);
    std::vector<uint8_t> mask16(M * N), mask32(M * N);
    emu::launch_bias_dropout_residual_forward(out.bits.data(), mask16.data(), y.bits.data(), bias.bits.data(),
                                              residual.bits.data(), M, N, 0.1, key, s, kStream);
    emu::launch_bias_dropout_residual_forward(out.wide.data(), mask32.data(), y.wide.data(), bias.wide.data(),
                                              residual.wide.data(), M, N, 0.1, key, Storage::f32, kStream);
    CHECK(mask16 == mask32);
    check_boundary_bits(out, s, "bias_dropout_residual");
    DeviceScratch bscratch(emu::bias_dropout_residual_backward_scratch_bytes(M, N));
    emu::launch_bias_dropout_residual_backward(dyo.bits.data(), db.bits.data(), dy.bits.data(), mask16.data(), M, N,
                                               0.1, bscratch.p, s, kStream);
    emu::launch_bias_dropout_residual_backward(dyo.wide.data(), db.wide.data(), dy.wide.data(), mask32.data(), M, N,
                                               0.1, bscratch.p, Storage::f32, kStream);
    check_boundary_bits(dyo, s, "bias_dropout_residual backward dy");
    check_boundary_bits(db, s, "bias_dropout_residual backward dbias");
  }
}

TEST_CASE("emulated layernorm on 16-bit storage gives the op boundary's bits") {
  for (Storage s : kStorages) {
    const int64_t M = 4, N = 300 + 13;
    const Half x = random_half(M * N, 331, s), gamma = random_half(N, 332, s), beta = random_half(N, 333, s);
    const Half dy = random_half(M * N, 334, s), dgamma0 = random_half(N, 335, s), dbeta0 = random_half(N, 336, s);
    Out y(M * N);
    std::vector<float> mean16(M), rstd16(M), mean32(M), rstd32(M);
    emu::launch_layernorm_forward(s, y.bits.data(), mean16.data(), rstd16.data(), x.bits.data(), gamma.bits.data(),
                                  beta.bits.data(), M, N, 1e-5, kStream);
    emu::launch_layernorm_forward(Storage::f32, y.wide.data(), mean32.data(), rstd32.data(), x.wide.data(),
                                  gamma.wide.data(), beta.wide.data(), M, N, 1e-5, kStream);
    check_boundary_bits(y, s, "layernorm y");
    CHECK(first_bit_difference(mean16, mean32) == -1);  // fp32 statistics of the same widened values
    CHECK(first_bit_difference(rstd16, rstd32) == -1);
    Out dx(M * N), dgamma(dgamma0), dbeta(dbeta0);
    DeviceScratch scratch(2 * emu::column_sums_scratch_bytes(M, N));
    emu::launch_layernorm_backward(s, dx.bits.data(), dgamma.bits.data(), dbeta.bits.data(), dy.bits.data(),
                                   x.bits.data(), gamma.bits.data(), mean32.data(), rstd32.data(), M, N, scratch.p,
                                   kStream);
    emu::launch_layernorm_backward(Storage::f32, dx.wide.data(), dgamma.wide.data(), dbeta.wide.data(), dy.wide.data(),
                                   x.wide.data(), gamma.wide.data(), mean32.data(), rstd32.data(), M, N, scratch.p,
                                   kStream);
    check_boundary_bits(dx, s, "layernorm dx");
    check_boundary_bits(dgamma, s, "layernorm dgamma");
    check_boundary_bits(dbeta, s, "layernorm dbeta");
  }
}

TEST_CASE("emulated softmax, softmax+dropout and cross entropy on 16-bit storage give the op boundary's bits") {
  for (Storage s : kStorages) {
    const int64_t B = 2, heads = 2, S = 37, rows = B * heads * S, cols = S;
    const Half scores = random_half(rows * cols, 341, s, -6.0f, 6.0f), dprobs = random_half(rows * cols, 342, s);
    std::vector<int32_t> keep(B * S, 1);
    for (int64_t j = S - 4; j < S; ++j) keep[S + j] = 0;
    Out probs(rows * cols), ds(rows * cols);
    emu::launch_softmax_forward(s, probs.bits.data(), scores.bits.data(), rows, cols, keep.data(), heads, S, true,
                                kStream);
    emu::launch_softmax_forward(Storage::f32, probs.wide.data(), scores.wide.data(), rows, cols, keep.data(), heads, S,
                                true, kStream);
    check_boundary_bits(probs, s, "softmax");
    const Half p16 = half_of(probs.wide, s);  // the backward reads stored probabilities
    emu::launch_softmax_backward(s, ds.bits.data(), dprobs.bits.data(), p16.bits.data(), rows, cols, kStream);
    emu::launch_softmax_backward(Storage::f32, ds.wide.data(), dprobs.wide.data(), p16.wide.data(), rows, cols,
                                 kStream);
    check_boundary_bits(ds, s, "softmax backward");

    const uint64_t key = cpu::dropout_key(4, 4, 0, 2);
    Out dropped(rows * cols), sp(rows * cols), dsd(rows * cols);
    std::vector<uint8_t> mask16(rows * cols), mask32(rows * cols);
    emu::launch_softmax_dropout_forward(s, dropped.bits.data(), sp.bits.data(), mask16.data(), scores.bits.data(), rows,
                                        cols, keep.data(), heads, S, false, 0.2, key, kStream);
    emu::launch_softmax_dropout_forward(Storage::f32, dropped.wide.data(), sp.wide.data(), mask32.data(),
                                        scores.wide.data(), rows, cols, keep.data(), heads, S, false, 0.2, key,
                                        kStream);
    CHECK(mask16 == mask32);
    check_boundary_bits(dropped, s, "softmax_dropout dropped");
    check_boundary_bits(sp, s, "softmax_dropout probs");
    emu::launch_softmax_dropout_backward(s, dsd.bits.data(), dprobs.bits.data(), p16.bits.data(), mask16.data(), rows,
                                         cols, 0.2, kStream);
    emu::launch_softmax_dropout_backward(Storage::f32, dsd.wide.data(), dprobs.wide.data(), p16.wide.data(),
                                         mask32.data(), rows, cols, 0.2, kStream);
    check_boundary_bits(dsd, s, "softmax_dropout backward");

    const int64_t P = 7, C = 250 + 3, valid = 240;
    const Half logits = random_half(P * C, 343, s, -5.0f, 5.0f);
    std::vector<int32_t> labels(P);
    for (int64_t p = 0; p < P; ++p) labels[p] = p == 3 ? -1 : static_cast<int32_t>((p * 41) % valid);
    DeviceScratch scratch(emu::cross_entropy_scratch_bytes(P)), error(sizeof(emu::DeviceError));
    auto* e = static_cast<emu::DeviceError*>(error.p);
    *e = emu::DeviceError{};
    float loss16 = 0, loss32 = 0;
    std::vector<float> lse16(P), lse32(P);
    emu::launch_cross_entropy_forward(s, &loss16, lse16.data(), logits.bits.data(), labels.data(), P, C, valid,
                                      scratch.p, e, kStream);
    emu::launch_cross_entropy_forward(Storage::f32, &loss32, lse32.data(), logits.wide.data(), labels.data(), P, C,
                                      valid, scratch.p, e, kStream);
    CHECK(e->kind == 0);
    CHECK(first_bit_difference(lse16, lse32) == -1);  // fp32 outputs from the same widened logits
    CHECK(first_bit_difference(std::vector<float>{loss16}, std::vector<float>{loss32}) == -1);
    const float dloss = 0.75f;
    Out dlogits(P * C);
    emu::launch_cross_entropy_backward(s, dlogits.bits.data(), &dloss, logits.bits.data(), labels.data(), lse32.data(),
                                       P, C, valid, scratch.p, e, kStream);
    emu::launch_cross_entropy_backward(Storage::f32, dlogits.wide.data(), &dloss, logits.wide.data(), labels.data(),
                                       lse32.data(), P, C, valid, scratch.p, e, kStream);
    check_boundary_bits(dlogits, s, "cross entropy backward");
  }
}
