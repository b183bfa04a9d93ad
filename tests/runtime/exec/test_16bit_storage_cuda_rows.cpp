// tests/runtime/exec/test_16bit_storage_cuda_rows.cpp — the CUDA row kernels on 16-bit storage (suite gpu,
// part of test_16bit_storage_cuda; exits 77 without a GPU): LayerNorm and its backward, softmax (padding
// mask, all-masked rows, causal, rows over 128 keys), softmax_dropout and its backward, the cross-entropy
// and its backward, the embedding backward and gather_rows_backward, each in bf16 and fp16, run three ways on the same stored
// inputs:
//  * CUDA native (PTSIM_CUDA_NATIVE_16BIT unset: the storage-typed kernels, native_16bit_rows.hpp) against
//    CUDA through the op boundary (PTSIM_CUDA_NATIVE_16BIT=0: widen, the fp32 kernel, narrow): every output
//    byte equal (their contract; no tolerance);
//  * CUDA native against the CPU backend's boundary path, per element
//      |a − b| ≤ 2·(4·n + 32)·u32·max|b| + 1.01·u16·(|a| + |b|)
//    n the row length, u32 = 2^-24, u16 the storage's unit roundoff (0 for fp32 outputs): the backend-ops
//    harness's widest row-op bound (LayerNorm backward's normwise c = 4·n + 32, backend_ops_cases.cpp),
//    doubled as neither side is exact, plus one 16-bit rounding on each side (test_backend_ops_16bit.cpp's
//    composition); u8 masks exactly.
// Built in every build, but the cases only with CUDA (gpu_doctest_main exits 77 before them otherwise).
#include <doctest/doctest.h>

#ifdef PTSIM_HAVE_CUDA
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "runtime/exec/backend.hpp"
#include "runtime/exec/cuda/native_16bit_rows.hpp"
#include "runtime/exec/cuda/native_16bit_switch.hpp"
#include "runtime/exec/precision.hpp"
#include "tests/runtime/exec/gemm_16bit_support.hpp"
#include "tests/support/backend_under_test.hpp"  // defines: make_test_backend

using namespace ptsim;
using models::DType;
using models::OpKind;

namespace {

using Bytes = std::map<int, std::vector<std::byte>>;  // tensor id → its stored bytes

struct RowCase {
  std::string label;
  models::TaskGraph graph;
  Bytes initial;
  int64_t row_length = 1;
};

// The stored bytes of values v in dtype t (16-bit: narrow_16bit; f32 as is; i32/u8 from the integers).
std::vector<std::byte> stored(DType t, const std::vector<double>& v) {
  if (t == DType::f32 || test::is_16bit(t)) return test::encode(t, v);
  std::vector<std::byte> bytes(v.size() * static_cast<size_t>(models::dtype_bytes(t)));
  for (size_t i = 0; i < v.size(); ++i) {
    if (t == DType::i32) {
      const auto x = static_cast<int32_t>(v[i]);
      std::memcpy(bytes.data() + 4 * i, &x, 4);
    } else if (t == DType::u8) {
      bytes[i] = static_cast<std::byte>(v[i] != 0 ? 1 : 0);
    }
  }
  return bytes;
}

// Builds one case's graph and its stored inputs (data tensors: N(0,1) values rounded to the storage).
class CaseBuilder {
 public:
  CaseBuilder(std::string label, DType d) : d_(d) { c_.label = std::move(label) + " " + models::to_string(d); }
  int data(const std::string& name, std::vector<int64_t> shape, uint64_t seed) {
    return add(name, shape, d_, test::random_in(d_, count(shape), seed));
  }
  int add(const std::string& name, std::vector<int64_t> shape, DType t, const std::vector<double>& values) {
    const int id = test::add_tensor(c_.graph, name, std::move(shape), t);
    c_.initial[id] = stored(t, values);
    return id;
  }
  RowCase finish(OpKind kind, std::vector<int> in, std::vector<int> out, const models::OpAttrs& a, int64_t n) {
    test::add_op(c_.graph, kind, std::move(in), std::move(out), a);
    c_.row_length = n;
    return std::move(c_);
  }
  static size_t count(const std::vector<int64_t>& shape) {
    int64_t n = 1;
    for (int64_t s : shape) n *= s;
    return static_cast<size_t>(n);
  }

 private:
  DType d_;
  RowCase c_;
};

std::vector<double> uniform(size_t n, double lo, double hi, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<double> v(n);
  for (double& x : v) x = u(rng);
  return v;
}
std::vector<double> integers(size_t n, int64_t lo, int64_t hi, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int64_t> u(lo, hi);
  std::vector<double> v(n);
  for (double& x : v) x = static_cast<double>(u(rng));
  return v;
}

std::vector<RowCase> row_cases(DType d) {
  std::vector<RowCase> out;
  {
    CaseBuilder b("layernorm (7, 129)", d);
    const int x = b.data("x", {7, 129}, 1), g = b.data("gamma", {129}, 2), be = b.data("beta", {129}, 3);
    const int y = b.data("y", {7, 129}, 4);
    const int mean = b.add("mean", {7}, DType::f32, std::vector<double>(7, 0.0));
    const int rstd = b.add("rstd", {7}, DType::f32, std::vector<double>(7, 0.0));
    models::OpAttrs a;
    a.epsilon = 1e-12;
    out.push_back(b.finish(OpKind::layernorm, {x, g, be}, {y, mean, rstd}, a, 129));
  }
  {
    CaseBuilder b("layernorm_backward (300, 65), dγ dβ +=", d);  // 300 rows: three column-sum chunks
    const int dy = b.data("dy", {300, 65}, 5), x = b.data("x", {300, 65}, 6), g = b.data("gamma", {65}, 7);
    const int mean = b.add("mean", {300}, DType::f32, uniform(300, -0.2, 0.2, 8));
    const int rstd = b.add("rstd", {300}, DType::f32, uniform(300, 0.5, 2.0, 9));
    const int dx = b.data("dx", {300, 65}, 10), dg = b.data("dgamma", {65}, 11), db = b.data("dbeta", {65}, 12);
    out.push_back(b.finish(OpKind::layernorm_backward, {dy, x, g, mean, rstd}, {dx, dg, db}, {}, 300));
  }
  {
    CaseBuilder b("softmax (2·2, 9, 9), padding mask, batch 1 all masked", d);
    const int s = b.data("scores", {4, 9, 9}, 13);
    std::vector<double> keep(18, 1.0);
    for (int j = 6; j < 9; ++j) keep[j] = 0;      // batch 0: keys 6-8 masked
    for (int j = 9; j < 18; ++j) keep[j] = 0;     // batch 1: every key masked
    const int k = b.add("keep", {2, 9}, DType::i32, keep);
    const int p = b.data("probs", {4, 9, 9}, 14);
    models::OpAttrs a;
    a.heads = 2;
    a.seq = 9;
    out.push_back(b.finish(OpKind::softmax, {s, k}, {p}, a, 9));
  }
  {
    CaseBuilder b("softmax (2, 130, 130), causal", d);  // over 128 keys: 256 threads a row
    const int s = b.data("scores", {2, 130, 130}, 15), p = b.data("probs", {2, 130, 130}, 16);
    models::OpAttrs a;
    a.causal = true;
    a.seq = 130;
    out.push_back(b.finish(OpKind::softmax, {s}, {p}, a, 130));
  }
  {
    CaseBuilder b("softmax_backward (36, 130)", d);
    const int dp = b.data("dprobs", {36, 130}, 17);
    const int p = b.add("probs", {36, 130}, d, uniform(36 * 130, 0.0, 0.02, 18));
    const int ds = b.data("dscores", {36, 130}, 19);
    out.push_back(b.finish(OpKind::softmax_backward, {dp, p}, {ds}, {}, 130));
  }
  {
    CaseBuilder b("softmax_dropout (2·2, 9, 9), p 0.1, padding mask", d);
    const int s = b.data("scores", {4, 9, 9}, 20);
    std::vector<double> keep(18, 1.0);
    keep[4] = keep[13] = 0;
    const int k = b.add("keep", {2, 9}, DType::i32, keep);
    const int dr = b.data("dropped", {4, 9, 9}, 21), p = b.data("probs", {4, 9, 9}, 22);
    const int m = b.add("mask", {4, 9, 9}, DType::u8, std::vector<double>(324, 0.0));
    models::OpAttrs a;
    a.heads = 2;
    a.seq = 9;
    a.dropout_p = 0.1;
    a.rng_stream = 7;
    out.push_back(b.finish(OpKind::softmax_dropout, {s, k}, {dr, p, m}, a, 9));
  }
  {
    CaseBuilder b("softmax_dropout_backward (36, 130), p 0.1", d);
    const int dd = b.data("ddropped", {36, 130}, 23);
    const int p = b.add("probs", {36, 130}, d, uniform(36 * 130, 0.0, 0.02, 24));
    const int m = b.add("mask", {36, 130}, DType::u8, integers(36 * 130, 0, 1, 25));
    const int ds = b.data("dscores", {36, 130}, 26);
    models::OpAttrs a;
    a.dropout_p = 0.1;
    out.push_back(b.finish(OpKind::softmax_dropout_backward, {dd, p, m}, {ds}, a, 130));
  }
  {
    CaseBuilder b("cross_entropy (33, 50), 45 valid classes, ignored rows", d);
    const int z = b.data("logits", {33, 50}, 27);
    const int l = b.add("labels", {33}, DType::i32, integers(33, -1, 44, 28));
    const int loss = b.add("loss", {1}, DType::f32, {0.0});
    const int lse = b.add("lse", {33}, DType::f32, std::vector<double>(33, 0.0));
    models::OpAttrs a;
    a.valid_classes = 45;
    out.push_back(b.finish(OpKind::cross_entropy, {z, l}, {loss, lse}, a, 50));
  }
  {
    CaseBuilder b("cross_entropy_backward (33, 50), 45 valid classes", d);
    const int dl = b.add("dloss", {1}, DType::f32, {1.0});
    const int z = b.data("logits", {33, 50}, 29);
    const int l = b.add("labels", {33}, DType::i32, integers(33, -1, 44, 30));
    const int lse = b.add("lse", {33}, DType::f32, uniform(33, 3.5, 4.5, 31));
    const int dz = b.data("dlogits", {33, 50}, 32);
    models::OpAttrs a;
    a.valid_classes = 45;
    out.push_back(b.finish(OpKind::cross_entropy_backward, {dl, z, l, lse}, {dz}, a, 50));
  }
  {
    CaseBuilder b("embedding_backward (37, 19) into (11, 19), dtable +=", d);
    const int dy = b.data("dy", {37, 19}, 33);
    const int ids = b.add("ids", {37}, DType::i32, integers(37, 0, 10, 34));
    const int dt = b.data("dtable", {11, 19}, 35);
    out.push_back(b.finish(OpKind::embedding_backward, {dy, ids}, {dt}, {}, 37));
  }
  {
    CaseBuilder b("gather_rows_backward (41, 13) into (9, 13), rows 7 and 8 never gathered", d);
    const int dy = b.data("dy", {41, 13}, 36);
    const int index = b.add("index", {41}, DType::i32, integers(41, 0, 6, 37));
    const int dx = b.data("dx", {9, 13}, 38);  // overwritten: the op zeroes dx first
    out.push_back(b.finish(OpKind::gather_rows_backward, {dy, index}, {dx}, {}, 41));
  }
  return out;
}

// The case's op on `backend` from its stored inputs; every tensor's bytes after it.
Bytes run_raw(runtime::Backend& backend, const RowCase& c) {
  std::vector<runtime::DeviceBuffer> buffers;
  for (const auto& t : c.graph.tensors) {
    buffers.push_back(backend.allocate(c.initial.at(t.id).size()));
    backend.copy_to_device(runtime::DeviceSpan::of(buffers.back()), c.initial.at(t.id).data());
  }
  auto address = [&](int id) { return backend.kernel_address(runtime::DeviceSpan::of(buffers[static_cast<size_t>(id)])); };
  const models::Op& op = c.graph.ops.at(0);
  std::vector<void*> in, out;
  for (int id : op.inputs) in.push_back(address(id));
  for (int id : op.outputs) out.push_back(address(id));
  backend.run(c.graph, op, in, out, runtime::OpContext{});
  backend.synchronize();
  Bytes after;
  for (const auto& t : c.graph.tensors) {
    after[t.id].resize(buffers[static_cast<size_t>(t.id)].bytes);
    backend.copy_to_host(after[t.id].data(), runtime::DeviceSpan::of(buffers[static_cast<size_t>(t.id)]));
    backend.free(buffers[static_cast<size_t>(t.id)]);
  }
  return after;
}

// A CUDA backend built with PTSIM_CUDA_NATIVE_16BIT set to `value` (null: unset), the variable restored.
std::unique_ptr<runtime::Backend> cuda_backend_with(const char* value) {
  const char* old = std::getenv(runtime::cuda::kNative16bitEnv);
  const std::optional<std::string> saved = old ? std::optional<std::string>(old) : std::nullopt;
  if (value)
    setenv(runtime::cuda::kNative16bitEnv, value, 1);
  else
    unsetenv(runtime::cuda::kNative16bitEnv);
  auto backend = test::make_test_backend(runtime::BackendKind::cuda, runtime::ComputeType::f32, 1);
  if (saved)
    setenv(runtime::cuda::kNative16bitEnv, saved->c_str(), 1);
  else
    unsetenv(runtime::cuda::kNative16bitEnv);
  return backend;
}

double unit_roundoff(DType t) { return t == DType::bf16 ? 1.0 / 256 : t == DType::f16 ? 1.0 / 2048 : 0.0; }

// Elements of output `id` outside the CPU bound (header); u8 and i32 outputs exactly.
size_t outside_cpu_bound(const RowCase& c, int id, const Bytes& got, const Bytes& cpu, double& worst) {
  const DType t = c.graph.tensor(id).dtype;
  if (t == DType::u8 || t == DType::i32) return got.at(id) == cpu.at(id) ? 0 : 1;
  const std::vector<double> a = test::decode(t, got.at(id)), b = test::decode(t, cpu.at(id));
  double scale = 0;
  for (const double v : b) scale = std::max(scale, std::abs(v));
  const double fp32_part = 2.0 * double(4 * c.row_length + 32) * 5.9604644775390625e-8 * scale;
  size_t bad = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double bound = fp32_part + 1.01 * unit_roundoff(t) * (std::abs(a[i]) + std::abs(b[i]));
    const double err = std::abs(a[i] - b[i]);
    if (std::isnan(a[i]) != std::isnan(b[i]) || err > bound) ++bad;
    if (bound > 0 && !std::isnan(err)) worst = std::max(worst, err / bound);
  }
  return bad;
}

}  // namespace

TEST_CASE("16-bit storage on CUDA: the native row kernels give the boundary path's bits and the CPU's values within the harness bound") {
  const auto native = cuda_backend_with(nullptr);
  const auto boundary = cuda_backend_with("0");
  const auto cpu = runtime::make_cpu_backend(runtime::ComputeType::f32, 1);
  for (const DType d : {DType::bf16, DType::f16}) {
    for (const RowCase& c : row_cases(d)) {
      const models::Op& op = c.graph.ops.at(0);
      REQUIRE_MESSAGE(runtime::cuda::rows_run_16bit_natively(c.graph, op), c.label << ": not a native row op");
      const Bytes got = run_raw(*native, c), via_boundary = run_raw(*boundary, c), ref = run_raw(*cpu, c);
      double worst = 0;
      for (const int id : op.outputs) {
        const std::string what = c.label + " [" + c.graph.tensor(id).name + "]";
        size_t differing_bytes = 0;
        for (size_t i = 0; i < got.at(id).size(); ++i) differing_bytes += got.at(id)[i] != via_boundary.at(id)[i];
        CHECK_MESSAGE(differing_bytes == 0, what << ": " << differing_bytes << " bytes differ from the boundary path");
        const size_t bad = outside_cpu_bound(c, id, got, ref, worst);
        CHECK_MESSAGE(bad == 0, what << ": " << bad << " elements outside the CPU bound");
      }
      MESSAGE(c.label << ": bits as the boundary's; worst |Δ|/bound against the CPU " << worst);
    }
  }
}

TEST_CASE("16-bit storage on CUDA: the comparison with the CPU can fail (one element moved by 8 bf16 ulps plus 1)") {
  const RowCase c = row_cases(DType::bf16).front();  // layernorm
  const auto cpu = runtime::make_cpu_backend(runtime::ComputeType::f32, 1);
  const Bytes ref = run_raw(*cpu, c);
  const int y = c.graph.ops[0].outputs[0];
  std::vector<double> moved = test::decode(DType::bf16, ref.at(y));
  moved[moved.size() / 2] += std::abs(moved[moved.size() / 2]) * 8.0 / 256 + 1.0;
  Bytes wrong = ref;
  wrong[y] = test::encode(DType::bf16, moved);
  double worst = 0;
  CHECK(outside_cpu_bound(c, y, wrong, ref, worst) == 1);
}
#endif  // PTSIM_HAVE_CUDA
