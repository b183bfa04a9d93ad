// tests/runtime/exec/gemm_16bit_support.hpp — helpers of the 16-bit GEMM tests (test_lt_gemm_16bit.cpp in
// the cpu suite, test_backend_ops_16bit.cpp in the gpu suite): tensor values as stored (fp32 bytes or
// 16-bit patterns, through the CPU's narrow_16bit / widen_16bit), random values representable in a dtype,
// small graph builders, and one graph run on any Backend through its interface only.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "models/task_graph.hpp"
#include "runtime/exec/backend.hpp"
#include "runtime/exec/precision.hpp"

namespace ptsim::test {

using Values = std::map<int, std::vector<double>>;  // tensor id → values
using models::DType;

inline bool is_16bit(DType t) { return t == DType::bf16 || t == DType::f16; }

// Values as stored in dtype t (fp32 bytes, or 16-bit patterns), and back.
inline std::vector<std::byte> encode(DType t, const std::vector<double>& v) {
  std::vector<float> f(v.begin(), v.end());
  if (!is_16bit(t)) {
    std::vector<std::byte> bytes(f.size() * 4);
    std::memcpy(bytes.data(), f.data(), bytes.size());
    return bytes;
  }
  std::vector<std::byte> bytes(f.size() * 2);
  runtime::narrow_16bit(bytes.data(), f.data(), f.size(), t);
  return bytes;
}
inline std::vector<double> decode(DType t, const std::vector<std::byte>& bytes) {
  std::vector<float> f(bytes.size() / (is_16bit(t) ? 2 : 4));
  if (is_16bit(t))
    runtime::widen_16bit(f.data(), bytes.data(), f.size(), t);
  else
    std::memcpy(f.data(), bytes.data(), bytes.size());
  return {f.begin(), f.end()};
}
// N(0,1) values rounded to dtype t.
inline std::vector<double> random_in(DType t, size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> d;
  std::vector<double> v(n);
  for (double& x : v) x = d(rng);
  return decode(t, encode(t, v));
}

inline int add_tensor(models::TaskGraph& g, const std::string& name, std::vector<int64_t> shape, DType t) {
  models::Tensor x;
  x.name = name;
  x.shape = std::move(shape);
  x.dtype = t;
  return g.add_tensor(std::move(x));
}
inline void add_op(models::TaskGraph& g, models::OpKind kind, std::vector<int> in, std::vector<int> out,
                   const models::OpAttrs& a) {
  models::Op op;
  op.kind = kind;
  op.name = std::string(models::to_string(kind));
  op.inputs = std::move(in);
  op.outputs = std::move(out);
  op.attrs = a;
  g.add_op(std::move(op));
}

// The graph's ops run in order on `backend` from `initial` (every tensor's values, by id; 16-bit tensors
// stored as their patterns); every tensor's values after them.
inline Values run_graph(runtime::Backend& backend, const models::TaskGraph& g, const Values& initial) {
  std::vector<runtime::DeviceBuffer> buffers;
  for (const auto& t : g.tensors) {
    const std::vector<std::byte> bytes = encode(t.dtype, initial.at(t.id));
    buffers.push_back(backend.allocate(bytes.size()));
    backend.copy_to_device(runtime::DeviceSpan::of(buffers.back()), bytes.data());
  }
  for (const auto& op : g.ops) {
    std::vector<void*> in, out;
    auto address = [&](int id) { return backend.kernel_address(runtime::DeviceSpan::of(buffers[static_cast<size_t>(id)])); };
    for (int id : op.inputs) in.push_back(address(id));
    for (int id : op.outputs) out.push_back(address(id));
    backend.run(g, op, in, out, runtime::OpContext{});
  }
  backend.synchronize();
  Values after;
  for (const auto& t : g.tensors) {
    std::vector<std::byte> bytes(buffers[static_cast<size_t>(t.id)].bytes);
    backend.copy_to_host(bytes.data(), runtime::DeviceSpan::of(buffers[static_cast<size_t>(t.id)]));
    after[t.id] = decode(t.dtype, bytes);
    backend.free(buffers[static_cast<size_t>(t.id)]);
  }
  return after;
}

}  // namespace ptsim::test
