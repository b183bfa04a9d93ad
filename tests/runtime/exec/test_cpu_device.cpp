// tests/runtime/exec/test_cpu_device.cpp — the CPU backend's half of the device seam (cpu_device.*):
// buffers and copies, range checks, events, and the step tail's vector passes (scale, sum of squares),
// whose results must not depend on the thread count (fixed chunks, chunk-order sums); and the factory.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "core/error.hpp"
#include "runtime/exec/backend.hpp"
#include "runtime/exec/cpu_parallel.hpp"

using namespace ptsim::runtime;

TEST_CASE("cpu backend memory: zeroed buffers, copies in, out and across, sub-spans, range errors") {
  auto backend = make_backend(BackendKind::cpu, ComputeType::f32, 1);
  CHECK(backend->host_addressable());
  const DeviceBuffer a = backend->allocate(40), b = backend->allocate(40);
  std::vector<float> host(10, -1.0f);
  backend->copy_to_host(host.data(), DeviceSpan::of(a));
  CHECK(host == std::vector<float>(10, 0.0f));  // allocate() zero-fills
  const std::vector<float> in = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  backend->copy_to_device(DeviceSpan::of(a), in.data());
  backend->copy(DeviceSpan::of(b).sub(8, 12), DeviceSpan::of(a).sub(0, 12));  // b[2..5) = a[0..3)
  backend->fill_zero(DeviceSpan::of(a).sub(36, 4));
  backend->copy_to_host(host.data(), DeviceSpan::of(b));
  CHECK(host == std::vector<float>{0, 0, 1, 2, 3, 0, 0, 0, 0, 0});
  backend->copy_to_host(host.data(), DeviceSpan::of(a));
  CHECK(host.back() == 0.0f);
  CHECK_THROWS_AS(backend->copy_to_host(host.data(), DeviceSpan::of(a).sub(4, 40)), std::logic_error);
  CHECK_THROWS_AS(backend->copy(DeviceSpan::of(a).sub(0, 8), DeviceSpan::of(b).sub(0, 4)), std::logic_error);
  backend->free(b);
  CHECK_THROWS_AS(backend->kernel_address(DeviceSpan::of(b)), std::logic_error);  // freed
  // Events are clock reads: a later record is not earlier.
  const Event e0 = backend->create_event(), e1 = backend->create_event();
  backend->record(e0);
  backend->record(e1);
  CHECK(backend->elapsed_seconds(e0, e1) >= 0.0);
}

TEST_CASE("cpu backend vector passes: scale and sum of squares, identical for 1 and 4 threads") {
  // 2.5 chunks of odd values: the sum of squares adds three partial sums in chunk order for any thread count.
  const size_t n = cpu::kChunkElements * 5 / 2 + 3;
  std::vector<float> x(n);
  for (size_t i = 0; i < n; ++i) x[i] = static_cast<float>(std::sin(0.001 * static_cast<double>(i))) + 0.25f;
  double direct = 0;
  for (float v : x) direct += static_cast<double>(v) * v;
  double sums[2] = {};
  std::vector<float> scaled[2];
  const int threads[2] = {1, 4};
  for (int k = 0; k < 2; ++k) {
    auto backend = make_cpu_backend(ComputeType::f32, threads[k]);
    const DeviceBuffer buf = backend->allocate(n * sizeof(float));
    backend->copy_to_device(DeviceSpan::of(buf), x.data());
    sums[k] = backend->sum_of_squares(DeviceSpan::of(buf));
    backend->scale(DeviceSpan::of(buf), 0.5);
    scaled[k].resize(n);
    backend->copy_to_host(scaled[k].data(), DeviceSpan::of(buf));
  }
  CHECK(std::memcmp(&sums[0], &sums[1], sizeof(double)) == 0);
  // Double accumulation of ~8·10^4 terms: the orders differ by rounding only (relative 1e-12 is ~10^4 ulps).
  CHECK(sums[0] == doctest::Approx(direct).epsilon(1e-12));
  CHECK(scaled[0] == scaled[1]);
  for (size_t i = 0; i < n; i += 997) REQUIRE(scaled[0][i] == x[i] * 0.5f);  // ×2^-1 is exact
}

TEST_CASE("backend factory: cpu always; cuda refused with a message in a build without it") {
  CHECK(parse_backend_kind("cpu") == BackendKind::cpu);
  CHECK(parse_backend_kind("cuda") == BackendKind::cuda);
  CHECK_THROWS_WITH_AS(parse_backend_kind("tpu", "--backend"), doctest::Contains("--backend 'tpu' is unknown"),
                       ptsim::core::InputError);
  if (!backend_available(BackendKind::cuda))
    CHECK_THROWS_WITH_AS(make_backend(BackendKind::cuda, ComputeType::f32, 1), doctest::Contains("built without"),
                         ptsim::core::InputError);
}

TEST_CASE("vector passes get the cores the GEMM pool leaves free") {
  // cores − (gemm_threads − 1) spinning GEMM workers, within [1, gemm_threads].
  CHECK(cpu::vector_pass_threads(2, 2) == 1);  // the 2-core machine: the measured slowdown case
  CHECK(cpu::vector_pass_threads(2, 16) == 2);
  CHECK(cpu::vector_pass_threads(4, 6) == 3);
  CHECK(cpu::vector_pass_threads(16, 16) == 1);
  CHECK(cpu::vector_pass_threads(0, 8) == 1);  // 0: the libraries' defaults for GEMMs, one pass thread
  CHECK(cpu::vector_pass_threads(1, 8) == 1);
}
