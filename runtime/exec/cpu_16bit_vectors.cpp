// runtime/exec/cpu_16bit_vectors.cpp — conversion and the scaled sum of squares over host arrays (see the
// header), chunked as every step-tail pass is.
#include "runtime/exec/cpu_16bit_vectors.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "runtime/exec/cpu_parallel.hpp"  // defines: for_each_chunk, kChunkElements
#include "runtime/exec/cpu_vector_kernels.hpp"
#include "runtime/exec/precision.hpp"

namespace ptsim::runtime::cpu {

size_t tail_element_bytes(models::DType dtype) {
  if (dtype == models::DType::f32) return 4;
  if (is_16bit_float(dtype)) return 2;
  throw std::logic_error("step-tail vector pass: only f32, f16 and bf16 arrays");
}

void convert_host(void* dst, models::DType dst_dtype, const void* src, models::DType src_dtype, size_t n, int threads) {
  const size_t out = tail_element_bytes(dst_dtype), in = tail_element_bytes(src_dtype);
  if (dst_dtype != src_dtype && out == in)
    throw std::logic_error("convert: between f16 and bf16 (not a step-tail conversion)");
  for_each_chunk(chunk_count(n), threads, [&](size_t c) {
    const size_t begin = c * kChunkElements, count = std::min(n, begin + kChunkElements) - begin;
    auto* d = static_cast<char*>(dst) + begin * out;
    const auto* s = static_cast<const char*>(src) + begin * in;
    if (dst_dtype == src_dtype) std::memcpy(d, s, count * out);
    else if (dst_dtype == models::DType::f32) widen_16bit(reinterpret_cast<float*>(d), s, count, src_dtype);
    else narrow_16bit(d, reinterpret_cast<const float*>(s), count, dst_dtype);
  });
}

void scale_16bit_host(void* x, size_t n, models::DType dtype, float factor, int threads) {
  if (!is_16bit_float(dtype)) throw std::logic_error("scale_16bit: only f16 and bf16 arrays");
  for_each_chunk(chunk_count(n), threads, [&](size_t c) {
    thread_local std::vector<float> scratch;
    scratch.resize(kChunkElements);
    const size_t begin = c * kChunkElements, count = std::min(n, begin + kChunkElements) - begin;
    char* chunk = static_cast<char*>(x) + begin * 2;
    widen_16bit(scratch.data(), chunk, count, dtype);
    for (size_t i = 0; i < count; ++i) scratch[i] *= factor;  // fp32 product, as scale() on fp32 storage
    narrow_16bit(chunk, scratch.data(), count, dtype);
  });
}

const float* fp32_chunk(const void* grad, models::DType dtype, float factor, size_t begin, size_t n, float* scratch) {
  if (dtype == models::DType::f32) {
    const float* g = static_cast<const float*>(grad) + begin;
    if (factor == 1.0f) return g;
    for (size_t i = 0; i < n; ++i) scratch[i] = g[i] * factor;
    return scratch;
  }
  widen_16bit(scratch, static_cast<const char*>(grad) + begin * tail_element_bytes(dtype), n, dtype);
  if (factor != 1.0f)
    for (size_t i = 0; i < n; ++i) scratch[i] *= factor;  // fp32 product, as scale() on fp32 storage
  return scratch;
}

double scaled_sum_of_squares_host(const void* x, size_t n, models::DType dtype, float factor, int threads) {
  const CpuIsa isa = detected_cpu_isa();
  std::vector<double> partial(chunk_count(n), 0.0);
  for_each_chunk(partial.size(), threads, [&](size_t c) {
    thread_local std::vector<float> scratch;
    scratch.resize(kChunkElements);
    const size_t begin = c * kChunkElements, count = std::min(n, begin + kChunkElements) - begin;
    partial[c] = chunk_sum_of_squares(isa, fp32_chunk(x, dtype, factor, begin, count, scratch.data()), count);
  });
  double sum = 0.0;
  for (double p : partial) sum += p;  // chunk order: independent of the thread count
  return sum;
}

}  // namespace ptsim::runtime::cpu
