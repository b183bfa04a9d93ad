// tests/runtime/exec/test_16bit_storage_cuda.cpp — 16-bit storage on the CUDA backend (suite gpu; exits 77
// without a GPU, tests/support/gpu_doctest_main.cpp): the conversion kernels (runtime/exec/cuda/
// convert_16bit.cu) give the CPU's widen_16bit / narrow_16bit bits exactly, over all 65,536 16-bit patterns
// and the fp32 sweep of half_bits_patterns.hpp (both run math/half_bits.hpp, NaNs included, so no
// tolerance); and a bf16 and an fp16 step of bert-tiny on CUDA equal the CPU backend's within
// model_steps_check.hpp's rounding_bounds (both sides store 16-bit activations as 16 bits and round every op
// output once; the GEMMs' summation orders differ, so a value near a 16-bit rounding boundary may land on
// either side: √D·u, u = 2^-8 / 2^-11), with the activation arena the same bytes on both backends, exactly:
// the simulator's memory plan of the graph as stored, about half the fp32-stored one. And the elementwise
// kernels that take 16-bit storage directly (runtime/exec/cuda/native_16bit_elementwise.hpp) against the
// same CUDA backend with PTSIM_CUDA_NATIVE_16BIT=0 (every such op through the boundary): every output bit
// equal, NaNs included (both run the same fp32 operations per element, and CUDA's NaN results are all
// 0x7fffffff), over native16_elementwise_cases.hpp; and against the CPU bit for bit for the ops whose fp32
// maths is the CPU's operation for operation (moves, add, dropout, the dropout backward's dy and dbias for
// M ≤ 128; a NaN's sign free, as in that header), the others (libm calls, FMA contraction) reported.
// And the native 16-bit bias gradient kernel against the boundary path around the fp32 one, bit for bit.
// Built in every build (the conversion cases only with CUDA), so that the gpu suite lists it and skips it
// cleanly.
#include <doctest/doctest.h>

#include <bit>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "models/memory_plan.hpp"
#include "runtime/exec/precision.hpp"
#include "runtime/exec/cuda/native_16bit_switch.hpp"  // defines: kNative16bitEnv (plain C++)
#include "tests/runtime/exec/half_bits_patterns.hpp"
#include "tests/runtime/exec/native16_elementwise_cases.hpp"
#include "tests/runtime/train/model_steps_check.hpp"

#ifdef PTSIM_HAVE_CUDA  // the kernels' header needs the CUDA toolkit; without it main exits 77 before any test
#include <cuda_runtime_api.h>

#include "runtime/exec/cuda/convert_16bit.hpp"
#include "runtime/exec/cuda/rows.hpp"  // defines: launch_bias_grad
#include "tests/support/backend_under_test.hpp"  // defines: make_test_backend
#endif

using namespace ptsim;
using namespace ptsim::test::steps;
using models::DType;

#ifdef PTSIM_HAVE_CUDA
namespace {

void require_cuda(cudaError_t status, const char* what) {
  REQUIRE_MESSAGE(status == cudaSuccess, what << ": " << cudaGetErrorString(status));
}

// A device copy of a host vector, freed on scope exit.
template <class T>
struct DeviceArray {
  T* data = nullptr;
  size_t n = 0;
  explicit DeviceArray(size_t count) : n(count) {
    require_cuda(cudaMalloc(reinterpret_cast<void**>(&data), n * sizeof(T)), "cudaMalloc");
  }
  ~DeviceArray() { (void)cudaFree(data); }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  void upload(const std::vector<T>& v) {
    require_cuda(cudaMemcpy(data, v.data(), n * sizeof(T), cudaMemcpyHostToDevice), "cudaMemcpy to device");
  }
  std::vector<T> download() const {
    std::vector<T> v(n);
    require_cuda(cudaMemcpy(v.data(), data, n * sizeof(T), cudaMemcpyDeviceToHost), "cudaMemcpy to host");
    return v;
  }
};

}  // namespace

TEST_CASE("CUDA 16-bit conversions: widening every bf16 and fp16 pattern is the CPU's widen_16bit, bit for bit") {
  std::vector<uint16_t> all(65536);
  for (uint32_t h = 0; h < 65536; ++h) all[h] = static_cast<uint16_t>(h);
  for (const DType t : {DType::bf16, DType::f16}) {
    std::vector<float> want(all.size());
    runtime::widen_16bit(want.data(), all.data(), all.size(), t);
    DeviceArray<uint16_t> src(all.size());
    DeviceArray<float> dst(all.size());
    src.upload(all);
    runtime::cuda::launch_widen_16bit(dst.data, src.data, all.size(), t == DType::bf16, nullptr);
    require_cuda(cudaDeviceSynchronize(), "widen_16bit");
    const std::vector<float> got = dst.download();
    size_t wrong = 0;
    for (size_t i = 0; i < all.size(); ++i) wrong += std::bit_cast<uint32_t>(got[i]) != std::bit_cast<uint32_t>(want[i]);
    CHECK_MESSAGE(wrong == 0, std::string(models::to_string(t)) << ": " << wrong << " of 65536 patterns widen differently");
  }
}

TEST_CASE("CUDA 16-bit conversions: narrowing the fp32 sweep is the CPU's narrow_16bit, bit for bit") {
  const std::vector<uint32_t> patterns = test::fp32_sweep_patterns();
  std::vector<float> x(patterns.size());
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::bit_cast<float>(patterns[i]);
  for (const DType t : {DType::bf16, DType::f16}) {
    std::vector<uint16_t> want(x.size());
    runtime::narrow_16bit(want.data(), x.data(), x.size(), t);
    DeviceArray<float> src(x.size());
    DeviceArray<uint16_t> dst(x.size());
    src.upload(x);
    runtime::cuda::launch_narrow_16bit(dst.data, src.data, x.size(), t == DType::bf16, nullptr);
    require_cuda(cudaDeviceSynchronize(), "narrow_16bit");
    const std::vector<uint16_t> got = dst.download();
    size_t wrong = 0;
    for (size_t i = 0; i < x.size(); ++i) wrong += got[i] != want[i];
    CHECK_MESSAGE(wrong == 0, std::string(models::to_string(t)) << ": " << wrong << " of " << x.size() << " fp32 patterns narrow differently");
  }
}

// The native 16-bit bias gradient (launch_bias_grad on 16-bit storage) against the boundary it replaces on the same GPU
// (widen dy and dbias, the fp32 launch_bias_grad, narrow): the same bits by construction
// (math/column_sum_math.hpp; the cpu suite checks the steps on host, test_column_sum_math.cpp), so no
// tolerance. M = 389 spans four 128-row chunks, N = 67 is odd; dbias starts non-zero.
TEST_CASE("CUDA bias_grad on 16-bit storage: the native kernel gives the boundary path's bits") {
  const int64_t M = 389, N = 67;
  for (const DType t : {DType::bf16, DType::f16}) {
    const bool bf16 = t == DType::bf16;
    std::vector<float> dy_f(static_cast<size_t>(M * N)), db_f(static_cast<size_t>(N));
    for (size_t i = 0; i < dy_f.size(); ++i) dy_f[i] = static_cast<float>((i * 37) % 101) / 25.0f - 2.0f;
    for (size_t i = 0; i < db_f.size(); ++i) db_f[i] = static_cast<float>(i) * 1.5f - 40.0f;
    std::vector<uint16_t> dy16(dy_f.size()), db16(db_f.size());
    runtime::narrow_16bit(dy16.data(), dy_f.data(), dy16.size(), t);
    runtime::narrow_16bit(db16.data(), db_f.data(), db16.size(), t);
    DeviceArray<uint16_t> dy(dy16.size()), native(db16.size()), boundary(db16.size());
    DeviceArray<float> dy32(dy16.size()), db32(db16.size());
    DeviceArray<uint8_t> scratch(runtime::cuda::column_sums_scratch_bytes(M, N));
    dy.upload(dy16);
    native.upload(db16);
    boundary.upload(db16);
    runtime::cuda::launch_bias_grad(native.data, dy.data, M, N, bf16 ? runtime::math::Storage::bf16 : runtime::math::Storage::f16,
                                    scratch.data, nullptr);
    runtime::cuda::launch_widen_16bit(dy32.data, dy.data, dy16.size(), bf16, nullptr);
    runtime::cuda::launch_widen_16bit(db32.data, boundary.data, db16.size(), bf16, nullptr);
    runtime::cuda::launch_bias_grad(db32.data, dy32.data, M, N, runtime::math::Storage::f32, scratch.data, nullptr);
    runtime::cuda::launch_narrow_16bit(boundary.data, db32.data, db16.size(), bf16, nullptr);
    require_cuda(cudaDeviceSynchronize(), "bias_grad");
    const std::vector<uint16_t> got = native.download(), want = boundary.download();
    size_t wrong = 0, changed = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      wrong += got[i] != want[i];
      changed += want[i] != db16[i];
    }
    CHECK_MESSAGE(wrong == 0, std::string(models::to_string(t)) << ": " << wrong << " of " << N << " columns differ");
    CHECK(changed > 0);  // the sums moved dbias
  }
}

#endif  // PTSIM_HAVE_CUDA

TEST_CASE("16-bit storage on CUDA: a bf16 and an fp16 bert-tiny step equal the CPU backend's; the arena and the parameter buffers are the same bytes") {
  const ModelCase c = bert_tiny();
  for (const models::Precision p : {models::Precision::bf16, models::Precision::fp16}) {
    const std::string what = c.name + " " + models::to_string(p) + ", CUDA vs CPU (16-bit storage on both)";
    const Side cuda{runtime::BackendKind::cuda, runtime::ComputeType::f32, p};
    const Side cpu{runtime::BackendKind::cpu, runtime::ComputeType::f32, p};
    const models::TaskGraph g = models::build_task_graph(c.spec, recipe(c, p, models::OptimizerKind::adamw));
    const Bounds b = rounding_bounds(g, c, p);
    Outcome o;
    compare_step(run_step(c, cuda), run_step(c, cpu), b, o);
    MESSAGE(summary(what, b, o));
    for (const std::string& f : o.failures) FAIL_CHECK(what << ": " << f);

    const auto cuda_session = open_session(c, cuda, models::OptimizerKind::adamw);
    const auto cpu_session = open_session(c, cpu, models::OptimizerKind::adamw);
    const size_t cuda_arena = cuda_session->ex->allocated_activation_bytes();
    const size_t cpu_arena = cpu_session->ex->allocated_activation_bytes();
    // Weight copies and gradients at 2 bytes on both (the executor's 16-bit parameter storage), masters fp32.
    const runtime::Executor::ParameterBytes cuda_params = cuda_session->ex->allocated_parameter_bytes();
    const runtime::Executor::ParameterBytes cpu_params = cpu_session->ex->allocated_parameter_bytes();
    CHECK(cuda_params.weights == cpu_params.weights);
    CHECK(cuda_params.gradients == cpu_params.gradients);
    CHECK(cuda_params.masters == cpu_params.masters);
    CHECK(2 * cuda_params.gradients <= cuda_params.masters + 64 * g.params.size());  // 2 vs 4 bytes, 64-byte alignment each
    const double planned = models::plan_memory(runtime::storage_graph(g, true)).activations_peak_bytes;
    const double fp32_stored = models::plan_memory(runtime::storage_graph(g, false)).activations_peak_bytes;
    MESSAGE(what << ": arena " << cuda_arena << " bytes on CUDA, " << cpu_arena << " on the CPU, planned " << planned
                 << ", fp32-stored " << fp32_stored);
    CHECK(cuda_arena == cpu_arena);
    CHECK(static_cast<double>(cuda_arena) == planned);
    CHECK(static_cast<double>(cuda_arena) < 0.75 * fp32_stored);  // 16-bit activations: about half
  }
}

namespace {

// A CUDA backend made with PTSIM_CUDA_NATIVE_16BIT set to `value` (null: unset); the variable is restored.
std::unique_ptr<runtime::Backend> cuda_backend_with_native_16bit(const char* value) {
  const char* env = runtime::cuda::kNative16bitEnv;
  const char* old = std::getenv(env);
  const std::optional<std::string> saved = old ? std::optional<std::string>(old) : std::nullopt;
  if (value) setenv(env, value, 1);
  else unsetenv(env);
  std::unique_ptr<runtime::Backend> backend = test::make_test_backend(runtime::BackendKind::cuda, runtime::ComputeType::f32, 1);
  if (saved) setenv(env, saved->c_str(), 1);
  else unsetenv(env);
  return backend;
}

}  // namespace

TEST_CASE("16-bit storage on CUDA: the native elementwise kernels give the boundary path's bits (PTSIM_CUDA_NATIVE_16BIT=0), and the CPU's where the fp32 maths is the same") {
  namespace n16 = test::native16;
  const std::unique_ptr<runtime::Backend> native = cuda_backend_with_native_16bit(nullptr);
  const std::unique_ptr<runtime::Backend> boundary = cuda_backend_with_native_16bit("0");
  const std::unique_ptr<runtime::Backend> cpu = runtime::make_backend(runtime::BackendKind::cpu, runtime::ComputeType::f32, 1);
  for (const DType t : {DType::bf16, DType::f16}) {
    for (const n16::Case& c : n16::cases(t, true)) {
      const n16::RawValues got = n16::run_raw(*native, c);
      const n16::Difference d = n16::compare_outputs(c, got, n16::run_raw(*boundary, c));
      CHECK_MESSAGE(d.differing == 0, c.label << ", native vs boundary on CUDA: " << d.differing << " of " << d.values
                                              << " values differ (first " << d.first << ")");
      const n16::Difference e = n16::compare_outputs(c, got, n16::run_raw(*cpu, c), true);
      const std::string vs_cpu = c.label + ", native CUDA vs the CPU backend: " + std::to_string(e.differing) + " of " +
                                 std::to_string(e.values) + " values differ, at most " + std::to_string(e.max_steps) +
                                 " 16-bit steps, " + std::to_string(e.far) + " NaN against a number";
      if (c.same_fp32_maths_as_cpu) CHECK_MESSAGE(e.differing == 0, vs_cpu << " (first " << e.first << ")");
      else MESSAGE(vs_cpu);
    }
  }
}
