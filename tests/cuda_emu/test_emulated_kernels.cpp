// tests/cuda_emu/test_emulated_kernels.cpp — the CUDA backend's kernels, compiled by g++ and run under the
// emulator (docs/cuda-emulation.md), against the CPU backend's kernels (cpu_backend.hpp) on small odd shapes
// (rows and columns that are not multiples of the block size or the warp). Exact where both sides do the same
// operations in the same order (stated per case); otherwise a tolerance from the summation order, said where.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "emulated_kernels.hpp"
#include "emulated_test_util.hpp"
#include "runtime/exec/cpu_16bit_vectors.hpp"
#include "runtime/exec/cpu_parallel.hpp"

namespace {

namespace cpu = ptsim::runtime::cpu;
using ptsim::runtime::math::Storage;
constexpr cudaStream_t kStream = nullptr;

using emu_test::check_close;
using emu_test::DeviceScratch;
using emu_test::random_floats;

}  // namespace

TEST_CASE("emulated sum of squares equals the CPU's double bits") {
  // docs/cuda-backend.md: same chunks, same 16-lane order, chunks added in order → the same double, bit for bit
  const size_t chunk = ptsim::runtime::cpu::kChunkElements;
  for (size_t n : {size_t{1}, size_t{17}, size_t{1000}, 2 * chunk + 333}) {
    const std::vector<float> x = random_floats(n, 7 + static_cast<uint32_t>(n));
    DeviceScratch out(sizeof(double)), partials(sizeof(double) * ((n + chunk - 1) / chunk));
    emu::launch_sum_of_squares(static_cast<double*>(out.p), static_cast<double*>(partials.p), x.data(), n, chunk,
                               kStream);
    const double cpu_sum =
        ptsim::runtime::cpu::scaled_sum_of_squares_host(x.data(), n, ptsim::models::DType::f32, 1.0f, 1);
    CHECK_MESSAGE(*static_cast<double*>(out.p) == cpu_sum, "n = " << n);
  }
}

TEST_CASE("emulated elementwise kernels: add, dropout (same mask), GELU, tanh") {
  const int64_t n = 1000 + 37;  // four blocks of 256 and a ragged tail
  const std::vector<float> a = random_floats(n, 1), b = random_floats(n, 2), c = random_floats(n, 3);
  std::vector<float> got(n), want(n);

  // add: y = a + b + c in the same order on both sides (add_forward's loop, elementwise_steps.hpp) → exact
  const void* const xs_dev[] = {a.data(), b.data(), c.data()};
  const float* const xs_cpu[] = {a.data(), b.data(), c.data()};
  emu::launch_add(got.data(), xs_dev, n, Storage::f32, kStream);
  cpu::add_forward<float>(want.data(), xs_cpu, n);
  CHECK(got == want);

  // dropout: the mask is dropout_mask.hpp's hash on both backends → identical masks and products
  std::vector<uint8_t> mask_got(n), mask_want(n);
  const uint64_t key = cpu::dropout_key(1234, 5, 1, 2);
  emu::launch_dropout_forward(got.data(), mask_got.data(), a.data(), n, 0.3, key, Storage::f32, kStream);
  cpu::dropout_forward<float>(want.data(), mask_want.data(), a.data(), n, 0.3, key);
  CHECK(mask_got == mask_want);
  CHECK(got == want);
  emu::launch_dropout_backward(got.data(), b.data(), mask_got.data(), n, 0.3, Storage::f32, kStream);
  cpu::dropout_backward<float>(want.data(), b.data(), mask_want.data(), n, 0.3);
  CHECK(got == want);

  // GELU: activation_math.hpp's PTSIM_HD formulas on both sides, but the CPU evaluates erf/tanh/exp through
  // Eigen's vectorised approximations (cpu_backend.cpp) and the emulated kernel through glibc's erff/tanhf:
  // a few ulp apart. 1e-6 relative is ~8 ulp of fp32; a wrong formula or index is off by O(1).
  for (bool tanh_form : {false, true}) {
    emu::launch_gelu_forward(got.data(), a.data(), n, tanh_form, Storage::f32, kStream);
    cpu::gelu_forward<float>(want.data(), a.data(), n, tanh_form);
    check_close(got, want, 1e-6, tanh_form ? "gelu (tanh form)" : "gelu");
    emu::launch_gelu_backward(got.data(), b.data(), a.data(), n, tanh_form, Storage::f32, kStream);
    cpu::gelu_backward<float>(want.data(), b.data(), a.data(), n, tanh_form);
    check_close(got, want, 1e-6, tanh_form ? "gelu backward (tanh form)" : "gelu backward");
  }
  // tanh: std::tanh on both sides (cpu_backend.cpp's tanh_forward) → exact
  emu::launch_tanh_forward(got.data(), a.data(), n, Storage::f32, kStream);
  cpu::tanh_forward<float>(want.data(), a.data(), n);
  CHECK(got == want);
}

TEST_CASE("emulated layernorm forward and backward against the CPU's") {
  const int64_t M = 5, N = 300 + 13;  // N > one block of 256 threads, not a multiple of 32
  const std::vector<float> x = random_floats(M * N, 11), gamma = random_floats(N, 12), beta = random_floats(N, 13);
  const std::vector<float> dy = random_floats(M * N, 14);
  std::vector<float> y(M * N), mean(M), rstd(M), y_cpu(M * N), mean_cpu(M), rstd_cpu(M);
  emu::launch_layernorm_forward(Storage::f32, y.data(), mean.data(), rstd.data(), x.data(), gamma.data(),
                                beta.data(), M, N, 1e-5, kStream);
  cpu::layernorm_forward<float>(y_cpu.data(), mean_cpu.data(), rstd_cpu.data(), x.data(), gamma.data(), beta.data(),
                                M, N, 1e-5);
  // the block's tree reduction adds in another order than the CPU's row loop: fp32 sums of N ≈ 300 terms of
  // size ≤ 4 agree to a few hundred ulp of their size; 1e-5 relative is ~80 ulp of fp32, several times above
  // what a reordering gives here and far below an indexing error (O(1))
  check_close(mean, mean_cpu, 1e-5, "mean");
  check_close(rstd, rstd_cpu, 1e-5, "rstd");
  check_close(y, y_cpu, 1e-5, "y");

  std::vector<float> dx(M * N), dgamma(N, 0.5f), dbeta(N, -0.25f);
  std::vector<float> dx_cpu(M * N), dgamma_cpu(N, 0.5f), dbeta_cpu(N, -0.25f);  // += into prior values
  DeviceScratch scratch(2 * emu::column_sums_scratch_bytes(M, N));
  emu::launch_layernorm_backward(Storage::f32, dx.data(), dgamma.data(), dbeta.data(), dy.data(), x.data(),
                                 gamma.data(), mean_cpu.data(), rstd_cpu.data(), M, N, scratch.p, kStream);
  cpu::layernorm_backward<float>(dx_cpu.data(), dgamma_cpu.data(), dbeta_cpu.data(), dy.data(), x.data(),
                                 gamma.data(), mean_cpu.data(), rstd_cpu.data(), M, N);
  check_close(dx, dx_cpu, 1e-5, "dx");
  check_close(dgamma, dgamma_cpu, 1e-5, "dgamma");  // sums over M = 5 rows
  check_close(dbeta, dbeta_cpu, 1e-5, "dbeta");
}

TEST_CASE("emulated softmax forward (causal and padding masks) and backward against the CPU's") {
  const int64_t B = 2, heads = 3, S = 37;  // rows B·nh·S = 222, 37 columns (one partial warp)
  const int64_t rows = B * heads * S, cols = S;
  const std::vector<float> scores = random_floats(rows * cols, 21, -6.0f, 6.0f);
  const std::vector<float> dprobs = random_floats(rows * cols, 22);
  std::vector<int32_t> keep(B * S, 1);
  for (int64_t j = S - 5; j < S; ++j) keep[1 * S + j] = 0;  // batch 1 pads its last 5 keys
  for (bool causal : {false, true}) {
    std::vector<float> probs(rows * cols), probs_cpu(rows * cols);
    emu::launch_softmax_forward(Storage::f32, probs.data(), scores.data(), rows, cols, keep.data(), heads, S, causal,
                                kStream);
    cpu::softmax_forward<float>(probs_cpu.data(), scores.data(), rows, cols,
                                cpu::SoftmaxMask{keep.data(), heads, S, causal});
    // max and Σexp are block reductions (another order than the CPU's): probabilities agree to ~1e-6 relative
    check_close(probs, probs_cpu, 1e-5, causal ? "causal probs" : "probs");
    for (size_t i = 0; i < probs.size(); ++i)
      if (probs_cpu[i] == 0.0f) REQUIRE_MESSAGE(probs[i] == 0.0f, "masked key " << i << " must be exactly 0");
    std::vector<float> ds(rows * cols), ds_cpu(rows * cols);
    emu::launch_softmax_backward(Storage::f32, ds.data(), dprobs.data(), probs_cpu.data(), rows, cols, kStream);
    cpu::softmax_backward<float>(ds_cpu.data(), dprobs.data(), probs_cpu.data(), rows, cols);
    check_close(ds, ds_cpu, 1e-5, "dscores");
  }
}

TEST_CASE("emulated cross entropy forward and backward against the CPU's") {
  const int64_t P = 9, C = 300 + 7, valid = 290;  // classes ≥ valid are padding
  const std::vector<float> logits = random_floats(P * C, 31, -5.0f, 5.0f);
  std::vector<int32_t> labels(P);
  for (int64_t p = 0; p < P; ++p) labels[p] = p == 4 ? -1 : static_cast<int32_t>((p * 37) % valid);  // row 4 ignored
  DeviceScratch scratch(emu::cross_entropy_scratch_bytes(P)), error(sizeof(emu::DeviceError));
  *static_cast<emu::DeviceError*>(error.p) = emu::DeviceError{};
  float loss = 0, loss_cpu = 0;
  std::vector<float> lse(P), lse_cpu(P);
  emu::launch_cross_entropy_forward(Storage::f32, &loss, lse.data(), logits.data(), labels.data(), P, C, valid,
                                    scratch.p, static_cast<emu::DeviceError*>(error.p), kStream);
  cpu::cross_entropy_forward<float>(&loss_cpu, lse_cpu.data(), logits.data(), labels.data(), P, C, valid);
  CHECK(static_cast<emu::DeviceError*>(error.p)->kind == 0);
  check_close(lse, lse_cpu, 1e-5, "lse");  // block reductions of ~300 exps: ordering error ~1e-6
  check_close({loss}, {loss_cpu}, 1e-5, "loss");
  const float dloss = 1.5f;
  std::vector<float> dlogits(P * C), dlogits_cpu(P * C);
  emu::launch_cross_entropy_backward(Storage::f32, dlogits.data(), &dloss, logits.data(), labels.data(),
                                     lse_cpu.data(), P, C, valid, scratch.p, static_cast<emu::DeviceError*>(error.p),
                                     kStream);
  cpu::cross_entropy_backward<float>(dlogits_cpu.data(), &dloss, logits.data(), labels.data(), lse_cpu.data(), P, C,
                                     valid);
  check_close(dlogits, dlogits_cpu, 1e-5, "dlogits");

  // a label outside [−1, valid): the kernel reports it in the DeviceError (the CPU throws InputError)
  labels[2] = static_cast<int32_t>(valid);
  emu::launch_cross_entropy_forward(Storage::f32, &loss, lse.data(), logits.data(), labels.data(), P, C, valid,
                                    scratch.p, static_cast<emu::DeviceError*>(error.p), kStream);
  const emu::DeviceError e = *static_cast<emu::DeviceError*>(error.p);
  CHECK(e.kind == static_cast<int32_t>(emu::DeviceErrorKind::label));
  CHECK(e.value == valid);
  CHECK(e.position == 2);
}

TEST_CASE("emulated gather_rows equals the CPU's rows, and reports an index out of range") {
  const int64_t M = 23, N = 77, P = 31;
  const std::vector<float> x = random_floats(M * N, 41);
  std::vector<int32_t> index(P);
  for (int64_t p = 0; p < P; ++p) index[p] = static_cast<int32_t>((p * 7 + 3) % M);
  std::vector<float> y(P * N), y_cpu(P * N);
  DeviceScratch error(sizeof(emu::DeviceError));
  *static_cast<emu::DeviceError*>(error.p) = emu::DeviceError{};
  emu::launch_gather_rows(y.data(), x.data(), index.data(), P, M, N, emu::DeviceErrorKind::gather_index,
                          static_cast<emu::DeviceError*>(error.p), Storage::f32, kStream);
  cpu::gather_rows_forward<float>(y_cpu.data(), x.data(), index.data(), P, M, N);
  CHECK(y == y_cpu);  // a copy: exact
  CHECK(static_cast<emu::DeviceError*>(error.p)->kind == 0);
  index[5] = static_cast<int32_t>(M);
  emu::launch_gather_rows(y.data(), x.data(), index.data(), P, M, N, emu::DeviceErrorKind::gather_index,
                          static_cast<emu::DeviceError*>(error.p), Storage::f32, kStream);
  CHECK(static_cast<emu::DeviceError*>(error.p)->kind == static_cast<int32_t>(emu::DeviceErrorKind::gather_index));
  CHECK(static_cast<emu::DeviceError*>(error.p)->value == M);
}

TEST_CASE("emulated split_heads / merge_heads equal the CPU's permutation") {
  const int64_t B = 2, S = 7, nh = 3, d = 5;  // a permutation: exact
  const std::vector<float> x = random_floats(B * S * nh * d, 51);
  std::vector<float> y(x.size()), y_cpu(x.size()), back(x.size());
  emu::launch_split_heads(y.data(), x.data(), B, S, nh, d, Storage::f32, kStream);
  cpu::split_heads<float>(y_cpu.data(), x.data(), B, S, nh, d);
  CHECK(y == y_cpu);
  emu::launch_merge_heads(back.data(), y.data(), B, S, nh, d, Storage::f32, kStream);
  CHECK(back == x);
}

TEST_CASE("emulated fused softmax+dropout forward (same mask) and backward against the CPU's") {
  const int64_t B = 1, heads = 2, S = 45, rows = B * heads * S, cols = S;
  const std::vector<float> scores = random_floats(rows * cols, 61, -4.0f, 4.0f);
  const std::vector<float> ddropped = random_floats(rows * cols, 62);
  const uint64_t key = cpu::dropout_key(99, 3, 0, 7);
  std::vector<float> dropped(rows * cols), probs(rows * cols), dropped_cpu(rows * cols), probs_cpu(rows * cols);
  std::vector<uint8_t> mask(rows * cols), mask_cpu(rows * cols);
  emu::launch_softmax_dropout_forward(Storage::f32, dropped.data(), probs.data(), mask.data(), scores.data(), rows,
                                      cols, nullptr, heads, S, true, 0.2, key, kStream);
  cpu::softmax_dropout_forward<float>(dropped_cpu.data(), probs_cpu.data(), mask_cpu.data(), scores.data(), rows, cols,
                                      cpu::SoftmaxMask{nullptr, heads, S, true}, 0.2, key);
  CHECK(mask == mask_cpu);  // dropout_mask.hpp's hash on both sides
  check_close(probs, probs_cpu, 1e-5, "probs");  // block reductions vs the CPU's row loop, as for softmax
  check_close(dropped, dropped_cpu, 1e-5, "dropped");
  std::vector<float> ds(rows * cols), ds_cpu(rows * cols);
  emu::launch_softmax_dropout_backward(Storage::f32, ds.data(), ddropped.data(), probs_cpu.data(), mask_cpu.data(),
                                       rows, cols, 0.2, kStream);
  cpu::softmax_dropout_backward<float>(ds_cpu.data(), ddropped.data(), probs_cpu.data(), mask_cpu.data(), rows, cols,
                                       0.2);
  check_close(ds, ds_cpu, 1e-5, "dscores");
}
