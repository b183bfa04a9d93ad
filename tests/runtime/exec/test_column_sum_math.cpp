// tests/runtime/exec/test_column_sum_math.cpp — the CUDA bias gradient on 16-bit storage
// (runtime/exec/math/column_sum_math.hpp, the PTSIM_HD steps cuda/bias_grad.cu runs: each dy element widened,
// fp32 column sums in 128-row chunks, added to the widened stored dbias, rounded once) against the op
// boundary it replaces, bit for bit: the CPU's cpu::OpBoundary (widen dy and dbias into fp32 scratch, narrow
// after) around the same fp32 column sums the CUDA fp32 kernel forms. bf16 and fp16; M, N odd and M over
// several chunks; a non-zero dbias accumulated into; NaN, ±Inf and overflow. A double-rounded variant (the
// column sum narrowed to 16 bits first, as a 16-bit epilogue vector would be, then added) must disagree, so
// the comparison can fail. For one chunk (M ≤ 128) the CPU backend's own bias_grad through its boundary
// (Eigen's column sums, row order) gives the same bits too. And which ops bias_grad_runs_natively takes.
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "runtime/exec/cpu_backend.hpp"  // defines: cpu::bias_grad
#include "runtime/exec/cpu_16bit_boundary.hpp"
#include "runtime/exec/cuda/bias_grad_16bit.hpp"
#include "runtime/exec/math/column_sum_math.hpp"
#include "runtime/exec/math/storage_dtype.hpp"  // defines: dtype_of
#include "runtime/exec/precision.hpp"

using namespace ptsim::runtime;
namespace models = ptsim::models;
using ptsim::models::DType;
using ptsim::models::Op;
using ptsim::models::OpKind;
using ptsim::models::TaskGraph;
using ptsim::models::Tensor;

namespace {

// A one-op graph: bias_grad of dy (M, N) into dbias (N), both of `dtype` (as stored).
TaskGraph bias_grad_graph(int64_t M, int64_t N, DType dy_type, DType dbias_type) {
  TaskGraph g;
  auto tensor = [&](std::vector<int64_t> shape, DType dtype) {
    Tensor t;
    t.id = static_cast<int>(g.tensors.size());
    t.name = "t";
    t.name += std::to_string(t.id);
    t.shape = std::move(shape);
    t.dtype = dtype;
    g.tensors.push_back(t);
    return t.id;
  };
  Op op;
  op.kind = OpKind::bias_grad;
  op.name = "bias_grad";
  op.inputs = {tensor({M, N}, dy_type)};
  op.outputs = {tensor({N}, dbias_type)};
  g.ops.push_back(op);
  return g;
}

// The CUDA fp32 kernel's column sums (column_sums.cuh) on host: dst += Σ_m dy(m, ·), chunked.
void f32_column_sums(float* dst, const float* dy, int64_t M, int64_t N) {
  const int64_t chunks = math::column_sum_chunks(M);
  std::vector<float> partial(static_cast<size_t>(chunks * N));
  for (int64_t c = 0; c < chunks; ++c)
    for (int64_t n = 0; n < N; ++n) partial[static_cast<size_t>(c * N + n)] = math::column_chunk_sum(math::StoredColumnTerm<math::F32Storage>{dy, N}, c, M, n);
  for (int64_t n = 0; n < N; ++n) dst[n] = math::column_finish(dst[n], partial.data(), chunks, N, n);
}

// The typed step, as bias_grad.cu runs it on storage S: partials of widened dy, then column_finish_stored
// per column. double_round: the variant that narrows Σ dy to 16 bits before adding it (must disagree somewhere).
template <class S>
std::vector<uint16_t> typed_bias_grad(std::vector<uint16_t> dbias, const std::vector<uint16_t>& dy, int64_t M,
                                      int64_t N, bool double_round = false) {
  const int64_t chunks = math::column_sum_chunks(M);
  std::vector<float> partial(static_cast<size_t>(chunks * N));
  const math::StoredColumnTerm<S> term{dy.data(), N};
  for (int64_t c = 0; c < chunks; ++c)
    for (int64_t n = 0; n < N; ++n) partial[static_cast<size_t>(c * N + n)] = math::column_chunk_sum(term, c, M, n);
  for (int64_t n = 0; n < N; ++n) {
    auto& d = dbias[static_cast<size_t>(n)];
    if (!double_round) {
      d = math::column_finish_stored<S>(d, partial.data(), chunks, N, n);
      continue;
    }
    const uint16_t sum16 = S::store(math::column_finish(0.0f, partial.data(), chunks, N, n));
    d = S::store(S::load(d) + S::load(sum16));
  }
  return dbias;
}

// The op boundary of the CPU backend (cpu::OpBoundary: the shared plan, widen_16bit / narrow_16bit) around
// an fp32 column-sum kernel `sums` (dst, dy, M, N).
template <class Sums>
std::vector<uint16_t> boundary_bias_grad(std::vector<uint16_t> dbias, std::vector<uint16_t> dy, int64_t M, int64_t N,
                                         DType dtype, Sums sums) {
  const TaskGraph g = bias_grad_graph(M, N, dtype, dtype);
  void* in[] = {dy.data()};
  void* out[] = {dbias.data()};
  cpu::OpBoundary boundary;
  REQUIRE(boundary.prepare(g, g.ops[0], in, out));
  sums(static_cast<float*>(boundary.outputs()[0]), static_cast<const float*>(boundary.inputs()[0]), M, N);
  boundary.finish();
  return dbias;
}

// 16-bit patterns of values in ±4 (dy) / ±64 (dbias), rounded from fp32 as the boundary rounds.
template <class S>
std::vector<uint16_t> random_16bit(size_t n, float scale, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-scale, scale);
  std::vector<uint16_t> v(n);
  for (auto& h : v) h = S::store(u(rng));
  return v;
}

size_t differing(const std::vector<uint16_t>& a, const std::vector<uint16_t>& b) {
  size_t d = 0;
  for (size_t i = 0; i < a.size(); ++i) d += a[i] != b[i];
  return d;
}

struct Case {
  int64_t M, N;
};
// Odd N (not a multiple of 16: the boundary pads); M one row, under one chunk, exactly one, and 3+ chunks.
const Case kCases[] = {{1, 7}, {77, 33}, {128, 5}, {389, 67}};

}  // namespace

TEST_CASE_TEMPLATE("bias_grad on 16-bit storage: the typed column sums give the op boundary's bits (bf16, fp16)", S,
                   math::Bf16Storage, math::F16Storage) {
  const DType dtype = math::dtype_of<S>();
  size_t double_rounded_differ = 0, compared = 0;
  for (const Case c : kCases) {
    const auto dy = random_16bit<S>(static_cast<size_t>(c.M * c.N), 4.0f, 11u + static_cast<uint32_t>(c.M));
    const auto dbias = random_16bit<S>(static_cast<size_t>(c.N), 64.0f, 5u + static_cast<uint32_t>(c.N));
    const auto want = boundary_bias_grad(dbias, dy, c.M, c.N, dtype, f32_column_sums);
    const auto got = typed_bias_grad<S>(dbias, dy, c.M, c.N);
    CHECK_MESSAGE(differing(got, want) == 0, models::to_string(dtype) << " M=" << c.M << " N=" << c.N);
    CHECK(differing(want, dbias) > 0);  // the sums changed dbias (the comparison is not of two untouched copies)
    double_rounded_differ += differing(typed_bias_grad<S>(dbias, dy, c.M, c.N, true), want);
    compared += want.size();
    if (c.M <= math::kRowsPerChunk) {  // one chunk: the CPU backend's own kernel sums in the same order
      const auto cpu_bits = boundary_bias_grad(dbias, dy, c.M, c.N, dtype, cpu::bias_grad<float>);
      CHECK_MESSAGE(differing(got, cpu_bits) == 0, "cpu::bias_grad " << models::to_string(dtype) << " M=" << c.M);
    }
  }
  // A 16-bit Σ dy added to dbias rounds twice: it must lose bits on some of these columns (it did on
  // 10-50% of them when written; any non-zero count shows the comparison above can fail).
  CHECK_MESSAGE(double_rounded_differ > 0, models::to_string(dtype) << ": " << compared << " columns compared");
}

TEST_CASE_TEMPLATE("bias_grad on 16-bit storage: NaN, ±Inf and fp16 overflow as the boundary gives them", S,
                   math::Bf16Storage, math::F16Storage) {
  const DType dtype = math::dtype_of<S>();
  const bool bf16 = dtype == DType::bf16;
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  const int64_t M = 3, N = 5;
  // Columns: a NaN in dy; +Inf in dy; +Inf and −Inf (NaN); a finite dy into an Inf dbias; three 60000s (fp16
  // overflows to +Inf in the sum, bf16 does not).
  const float dyv[M][N] = {{nan, inf, inf, 1.0f, 60000.0f}, {1.0f, 2.0f, -inf, 2.0f, 60000.0f}, {0.5f, 0.5f, 1.0f, 3.0f, 60000.0f}};
  const float dbv[N] = {1.0f, 1.0f, 1.0f, -inf, 1.0f};
  std::vector<uint16_t> dy, dbias;
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) dy.push_back(S::store(dyv[m][n]));
  for (float v : dbv) dbias.push_back(S::store(v));
  const auto want = boundary_bias_grad(dbias, dy, M, N, dtype, f32_column_sums);
  const auto got = typed_bias_grad<S>(dbias, dy, M, N);
  CHECK(differing(got, want) == 0);
  CHECK(std::isnan(S::load(got[0])));
  CHECK(S::load(got[1]) == inf);
  CHECK(std::isnan(S::load(got[2])));
  CHECK(S::load(got[3]) == -inf);
  CHECK(std::isinf(S::load(got[4])) == !bf16);  // 180001 > fp16's 65504
}

TEST_CASE("bias_grad_runs_natively: dy and dbias of one 16-bit type only") {
  const auto native = [](DType dy, DType db) {
    const TaskGraph g = bias_grad_graph(4, 3, dy, db);
    return cuda::bias_grad_runs_natively(g, g.ops[0]);
  };
  CHECK(native(DType::bf16, DType::bf16));
  CHECK(native(DType::f16, DType::f16));
  CHECK_FALSE(native(DType::f32, DType::f32));   // fp32: no 16-bit operand
  CHECK_FALSE(native(DType::bf16, DType::f32));  // fp32 dbias (the epilogue pairing's case): the boundary
  CHECK_FALSE(native(DType::f32, DType::bf16));
  CHECK_FALSE(native(DType::bf16, DType::f16));
  TaskGraph g = bias_grad_graph(4, 3, DType::bf16, DType::bf16);
  g.ops[0].kind = OpKind::add;  // not a bias_grad
  CHECK_FALSE(cuda::bias_grad_runs_natively(g, g.ops[0]));
}
