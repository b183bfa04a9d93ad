// tests/runtime/exec/native16_elementwise_cases.hpp — the cases of the native 16-bit elementwise tests
// (test_native16_elementwise.cpp in the cpu suite: the typed steps' host emulation against the CPU
// backend's op boundary; test_16bit_storage_cuda.cpp in the gpu suite: the CUDA backend's native kernels
// against its own boundary and the CPU): one single-op graph per op kind the CUDA backend runs natively
// (runtime/exec/cuda/native_16bit_elementwise.hpp), stored as bf16 or fp16, with odd sizes and inputs that
// mix N(0,1) values, values scaled by 2^-30…2^16 (products that underflow to subnormals or overflow to
// inf) and the special patterns (±0, ±inf, NaNs with payloads, subnormals, the largest finite values);
// the tensors as raw bytes (the 16-bit patterns as stored), so a NaN's bits survive; and one graph run on
// any Backend through its interface.
#pragma once
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "models/task_graph.hpp"
#include "runtime/exec/backend.hpp"
#include "runtime/exec/precision.hpp"
#include "tests/runtime/exec/gemm_16bit_support.hpp"  // defines: add_tensor, add_op

namespace ptsim::test::native16 {

using models::DType;
using models::OpKind;
using Bytes = std::vector<std::byte>;
using RawValues = std::map<int, Bytes>;  // tensor id → its bytes as stored

// The special 16-bit patterns every input array contains (at positions that differ per operand).
inline std::vector<uint16_t> special_patterns(DType t) {
  if (t == DType::bf16)
    return {0x0000, 0x8000, 0x7f80, 0xff80, 0x7fc0, 0xffc0, 0x7f81, 0xffa5,  // ±0, ±inf, NaNs (payloads too)
            0x0001, 0x8003, 0x007f, 0x0080,                                  // subnormals, smallest normal
            0x7f7f, 0xff7f, 0x7f00, 0x3f80, 0xbf80, 0x4000};                 // largest finite, 2^127, ±1, 2
  return {0x0000, 0x8000, 0x7c00, 0xfc00, 0x7e00, 0xfe00, 0x7c01, 0xfe55,  // ±0, ±inf, NaNs (payloads too)
          0x0001, 0x8003, 0x03ff, 0x0400,                                  // subnormals, smallest normal
          0x7bff, 0xfbff, 0x7800, 0x3c00, 0xbc00, 0x4000};                 // 65504, 2^15, ±1, 2
}

// n 16-bit patterns of dtype t: the specials from position `offset` on (cycled), the rest N(0,1) values,
// every other one scaled by 2^k, k uniform in [-30, 16], all rounded to t.
inline std::vector<uint16_t> patterns(DType t, size_t n, uint64_t seed, size_t offset) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal;
  std::uniform_int_distribution<int> exponent(-30, 16);
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = i % 2 == 0 ? normal(rng) : std::ldexp(normal(rng), exponent(rng));
  std::vector<uint16_t> h(n);
  runtime::narrow_16bit(h.data(), v.data(), n, t);
  const std::vector<uint16_t> special = special_patterns(t);
  for (size_t k = 0; k < special.size() && offset + k < n; ++k) h[offset + k] = special[k];
  return h;
}

inline Bytes bytes_of(const void* p, size_t n) {
  Bytes b(n);
  std::memcpy(b.data(), p, n);
  return b;
}
inline Bytes bytes16(const std::vector<uint16_t>& h) { return bytes_of(h.data(), h.size() * 2); }

// One case: a single-op graph and every tensor's initial bytes (outputs too: dbias is added into).
struct Case {
  std::string label;
  models::TaskGraph graph;
  RawValues initial;
  // Whether the CUDA kernel's fp32 maths is the CPU's, operation for operation (no libm call, nothing nvcc
  // contracts into an FMA, the same summation order): then CUDA must give the CPU's bits.
  bool same_fp32_maths_as_cpu = true;
};

class CaseBuilder {
 public:
  CaseBuilder(std::string label, DType t, uint64_t seed) : t_(t), seed_(seed) { c_.label = std::move(label); }
  // A float tensor of the case's dtype with specials from `offset` on.
  int floats(const std::string& name, std::vector<int64_t> shape, size_t offset) {
    const int id = add_tensor(c_.graph, name, shape, t_);
    c_.initial[id] = bytes16(patterns(t_, static_cast<size_t>(c_.graph.tensor(id).elements()), seed_ + id, offset));
    return id;
  }
  // A u8 mask tensor: random 0/1 (an input) or 0xAA (an output, overwritten by the op).
  int mask(const std::string& name, std::vector<int64_t> shape, bool input) {
    const int id = add_tensor(c_.graph, name, shape, DType::u8);
    std::vector<uint8_t> m(static_cast<size_t>(c_.graph.tensor(id).elements()), 0xAA);
    std::mt19937_64 rng(seed_ + 1000 + id);
    if (input)
      for (uint8_t& b : m) b = static_cast<uint8_t>(rng() % 4 != 0);
    c_.initial[id] = bytes_of(m.data(), m.size());
    return id;
  }
  // An i32 row index tensor with values in [0, rows).
  int index(const std::string& name, int64_t count, int64_t rows) {
    const int id = add_tensor(c_.graph, name, {count}, DType::i32);
    std::vector<int32_t> v(static_cast<size_t>(count));
    for (int64_t p = 0; p < count; ++p) v[static_cast<size_t>(p)] = static_cast<int32_t>((p * 7 + 3) % rows);
    c_.initial[id] = bytes_of(v.data(), v.size() * 4);
    return id;
  }
  Case done(OpKind kind, std::vector<int> in, std::vector<int> out, const models::OpAttrs& a, bool same_maths = true) {
    add_op(c_.graph, kind, std::move(in), std::move(out), a);
    c_.same_fp32_maths_as_cpu = same_maths;
    return std::move(c_);
  }

 private:
  DType t_;
  uint64_t seed_;
  Case c_;
};

// Every case for dtype t (bf16 or f16). bias_dropout_residual_backward's M ≤ 128 keeps one column-sum
// chunk (column_sums.cuh's kRowsPerChunk), where the CUDA and CPU sums add in the same order; `long_sums`
// adds M = 300 (three chunks; compared only with CUDA's own boundary, whose chunking is the same).
inline std::vector<Case> cases(DType t, bool long_sums = false) {
  const std::string d = models::to_string(t);
  std::vector<Case> all;
  const int64_t n = 1003;
  for (const bool tanh_form : {false, true}) {
    models::OpAttrs a;
    a.gelu_tanh = tanh_form;
    const std::string form = tanh_form ? " (tanh form)" : " (erf form)";
    {
      CaseBuilder b("gelu" + form + " " + d, t, 11);
      const int x = b.floats("x", {n}, 0), y = b.floats("y", {n}, 0);
      all.push_back(b.done(OpKind::gelu, {x}, {y}, a, false));
    }
    {
      CaseBuilder b("gelu_backward" + form + " " + d, t, 12);
      const int dy = b.floats("dy", {n}, 0), x = b.floats("x", {n}, 5), dx = b.floats("dx", {n}, 0);
      all.push_back(b.done(OpKind::gelu_backward, {dy, x}, {dx}, a, false));
    }
  }
  {
    CaseBuilder b("tanh " + d, t, 13);
    const int x = b.floats("x", {n}, 0), y = b.floats("y", {n}, 0);
    all.push_back(b.done(OpKind::tanh, {x}, {y}, {}, false));
  }
  {
    CaseBuilder b("tanh_backward " + d, t, 14);
    const int dy = b.floats("dy", {n}, 0), y = b.floats("y", {n}, 7), dx = b.floats("dx", {n}, 0);
    all.push_back(b.done(OpKind::tanh_backward, {dy, y}, {dx}, {}, false));
  }
  for (const int inputs : {1, 3, 8}) {
    CaseBuilder b("add of " + std::to_string(inputs) + " " + d, t, 15 + static_cast<uint64_t>(inputs));
    std::vector<int> xs;
    for (int k = 0; k < inputs; ++k) xs.push_back(b.floats(fmt::format("x{}", k), {7, 143}, static_cast<size_t>(3 * k)));
    const int y = b.floats("y", {7, 143}, 0);
    all.push_back(b.done(OpKind::add, xs, {y}, {}));
  }
  {
    models::OpAttrs a;
    a.dropout_p = 0.1;
    a.rng_stream = 3;
    CaseBuilder b("dropout " + d, t, 30);
    const int x = b.floats("x", {n}, 0), y = b.floats("y", {n}, 0), m = b.mask("mask", {n}, false);
    all.push_back(b.done(OpKind::dropout, {x}, {y, m}, a));
    CaseBuilder bb("dropout_backward " + d, t, 31);
    const int dy = bb.floats("dy", {n}, 0), mi = bb.mask("mask", {n}, true), dx = bb.floats("dx", {n}, 0);
    all.push_back(bb.done(OpKind::dropout_backward, {dy, mi}, {dx}, a));
  }
  for (const bool with_mask : {true, false}) {
    models::OpAttrs a;
    a.dropout_p = with_mask ? 0.2 : 0.0;
    a.rng_stream = 5;
    const std::string which = with_mask ? " with dropout " : " without dropout ";
    const int64_t M = 37, N = 29;
    CaseBuilder b("bias_dropout_residual" + which + d, t, 40);
    const int y = b.floats("y", {M, N}, 0), bias = b.floats("bias", {N}, 4), r = b.floats("residual", {M, N}, 9);
    std::vector<int> out = {b.floats("out", {M, N}, 0)};
    if (with_mask) out.push_back(b.mask("mask", {M, N}, false));
    all.push_back(b.done(OpKind::bias_dropout_residual, {y, bias, r}, out, a, false));
    for (const int64_t rows : long_sums ? std::vector<int64_t>{100, 300} : std::vector<int64_t>{100}) {
      CaseBuilder bb("bias_dropout_residual_backward" + which + "M=" + std::to_string(rows) + " " + d, t, 41);
      std::vector<int> in = {bb.floats("dout", {rows, N}, 0)};
      if (with_mask) in.push_back(bb.mask("mask", {rows, N}, true));
      const int dy = bb.floats("dy", {rows, N}, 0), dbias = bb.floats("dbias", {N}, 2);
      all.push_back(bb.done(OpKind::bias_dropout_residual_backward, in, {dy, dbias}, a, rows <= 128));
    }
  }
  {
    models::OpAttrs a;
    a.batch = 2;
    a.seq = 5;
    a.heads = 3;
    a.head_dim = 7;
    CaseBuilder b("split_heads " + d, t, 50);
    const int x = b.floats("x", {10, 21}, 0), y = b.floats("y", {6, 5, 7}, 0);
    all.push_back(b.done(OpKind::split_heads, {x}, {y}, a));
    CaseBuilder bb("merge_heads " + d, t, 51);
    const int xm = bb.floats("x", {6, 5, 7}, 0), ym = bb.floats("y", {10, 21}, 0);
    all.push_back(bb.done(OpKind::merge_heads, {xm}, {ym}, a));
  }
  for (const OpKind kind : {OpKind::gather_rows, OpKind::embedding}) {
    CaseBuilder b(std::string(models::to_string(kind)) + " " + d, t, 60);
    const int x = b.floats("x", {11, 13}, 0), index = b.index("index", 9, 11), y = b.floats("y", {9, 13}, 0);
    all.push_back(b.done(kind, {x, index}, {y}, {}));
  }
  return all;
}

// The case's op run once on `backend` from its initial bytes; every tensor's bytes after it.
inline RawValues run_raw(runtime::Backend& backend, const Case& c) {
  const models::TaskGraph& g = c.graph;
  std::vector<runtime::DeviceBuffer> buffers;
  for (const auto& t : g.tensors) {
    const Bytes& bytes = c.initial.at(t.id);
    buffers.push_back(backend.allocate(bytes.size()));
    backend.copy_to_device(runtime::DeviceSpan::of(buffers.back()), bytes.data());
  }
  auto address = [&](int id) { return backend.kernel_address(runtime::DeviceSpan::of(buffers[static_cast<size_t>(id)])); };
  for (const auto& op : g.ops) {
    std::vector<void*> in, out;
    for (int id : op.inputs) in.push_back(address(id));
    for (int id : op.outputs) out.push_back(address(id));
    backend.run(g, op, in, out, runtime::OpContext{});
  }
  backend.synchronize();
  RawValues after;
  for (const auto& t : g.tensors) {
    Bytes bytes(buffers[static_cast<size_t>(t.id)].bytes);
    backend.copy_to_host(bytes.data(), runtime::DeviceSpan::of(buffers[static_cast<size_t>(t.id)]));
    after[t.id] = std::move(bytes);
    backend.free(buffers[static_cast<size_t>(t.id)]);
  }
  return after;
}

// A 16-bit pattern's position on the number line (adjacent finite values differ by 1; -0 and +0 both 0).
inline int32_t ordinal16(uint16_t h) { return (h & 0x8000u) ? -static_cast<int32_t>(h & 0x7fffu) : static_cast<int32_t>(h); }
inline bool is_nan16(DType t, uint16_t h) {
  return t == DType::bf16 ? (h & 0x7fffu) > 0x7f80u : (h & 0x7fffu) > 0x7c00u;
}

// How two runs' outputs compare: values whose bytes differ (u8 masks: bytes), and the largest distance in
// 16-bit steps between two non-NaN values (a NaN against a number counts as "far"). With
// `any_nan_sign`, two NaNs are equal whatever their signs (counted in nan_signs): IEEE 754 leaves the sign
// of an arithmetic NaN result unspecified, and on x86 it is the first NaN operand's or, for inf − inf,
// negative, so the host compiler's operand order decides it (CUDA always gives the positive 0x7fffffff).
struct Difference {
  size_t differing = 0, far = 0, nan_signs = 0, values = 0;
  int32_t max_steps = 0;
  std::string first;  // where the first difference is
};
inline Difference compare_outputs(const Case& c, const RawValues& a, const RawValues& b, bool any_nan_sign = false) {
  Difference r;
  for (const int id : c.graph.ops.at(0).outputs) {
    const models::Tensor& t = c.graph.tensor(id);
    const Bytes &x = a.at(id), &y = b.at(id);
    const bool half = t.dtype == DType::bf16 || t.dtype == DType::f16;
    const size_t count = half ? x.size() / 2 : x.size();
    for (size_t i = 0; i < count; ++i) {
      ++r.values;
      uint16_t hx = 0, hy = 0;
      if (half) {
        std::memcpy(&hx, x.data() + 2 * i, 2);
        std::memcpy(&hy, y.data() + 2 * i, 2);
      } else {
        hx = static_cast<uint16_t>(x[i]);
        hy = static_cast<uint16_t>(y[i]);
      }
      if (hx == hy) continue;
      if (half && any_nan_sign && is_nan16(t.dtype, hx) && is_nan16(t.dtype, hy)) {
        ++r.nan_signs;
        continue;
      }
      ++r.differing;
      if (r.first.empty()) r.first = t.name + "[" + std::to_string(i) + "]: " + std::to_string(hx) + " vs " + std::to_string(hy);
      if (!half || is_nan16(t.dtype, hx) || is_nan16(t.dtype, hy)) {
        ++r.far;
        continue;
      }
      const int32_t steps = std::abs(ordinal16(hx) - ordinal16(hy));
      if (steps > r.max_steps) r.max_steps = steps;
    }
  }
  return r;
}

}  // namespace ptsim::test::native16
