// tests/runtime/exec/test_native16_rows.cpp — the CUDA row kernels' storage-typed reads and writes
// (runtime/exec/math/row_storage.hpp) and which ops take them (runtime/exec/cuda/native_16bit_rows.hpp),
// on the host (cpu suite; the functions are PTSIM_HD, the same source the kernels compile). The contract is
// the op boundary's bits: a typed load/compute/store must equal widen → fp32 → narrow with the CPU
// boundary's own conversions (precision.hpp: widen_16bit, narrow_16bit), so every comparison is exact (0
// differing values): all 65,536 16-bit patterns through the loads, the fp32 sweep of half_bits_patterns.hpp
// (NaN, ±inf, subnormals, overflow, ties) through the stores, every pattern as one operand of each element
// function (a computed NaN result only has to be a NaN: its sign is unspecified), and the accumulate-into
// outputs (dγ, dβ, dtable +=). Three row algorithms run here through the same
// code and equal the CPU backend's boundary path exactly (bound 0, tighter than the CUDA-vs-CPU tests'):
// the embedding backward's and gather_rows_backward's segment sums (the CPU adds in the same row order) and
// LayerNorm's output given the CPU's fp32 mean and rstd. Each comparison is shown to fail on a store that rounds twice.
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <string>
#include <type_traits>
#include <vector>

#include "runtime/exec/backend.hpp"
#include "runtime/exec/cuda/native_16bit_rows.hpp"
#include "runtime/exec/math/row_storage.hpp"
#include "runtime/exec/math/storage_dtype.hpp"  // defines: dtype_of
#include "runtime/exec/precision.hpp"
#include "tests/runtime/exec/gemm_16bit_support.hpp"
#include "tests/runtime/exec/half_bits_patterns.hpp"

using namespace ptsim;
using namespace ptsim::runtime::math;
using models::DType;
using models::OpKind;

namespace {

std::vector<uint16_t> all_patterns() {
  std::vector<uint16_t> v(65536);
  for (uint32_t h = 0; h < 65536; ++h) v[h] = static_cast<uint16_t>(h);
  return v;
}
// A second operand for pattern h: another pattern, so every pair of positions meets a mix of values.
uint16_t partner(uint32_t h, uint32_t salt) { return static_cast<uint16_t>((h * 40503u + salt) & 0xffffu); }

// The boundary's conversions (the CPU's widen_16bit / narrow_16bit), one value at a time.
float widen(uint16_t h, DType t) {
  float f = 0;
  runtime::widen_16bit(&f, &h, 1, t);
  return f;
}
uint16_t narrow(float f, DType t) {
  uint16_t h = 0;
  runtime::narrow_16bit(&h, &f, 1, t);
  return h;
}

// The other 16-bit type (bf16 ↔ fp16).
DType other(DType t) { return t == DType::bf16 ? DType::f16 : DType::bf16; }

// A store that rounds twice (first to the other 16-bit type, then to the storage: what reading back a 16-bit
// intermediate does): each comparison below must catch it.
template <class S>
uint16_t double_rounded_store(float v) {
  using Other = std::conditional_t<std::is_same_v<S, Bf16Storage>, F16Storage, Bf16Storage>;
  return S::store(Other::load(Other::store(v)));
}

// Over every pattern h as the first operand: how many typed results differ from widen → f → narrow, where
// typed(h) and fp32(widened operands) are the two sides.
template <class Typed, class Fp32>
size_t differing(Typed typed, Fp32 fp32, DType t, bool double_round = false) {
  size_t wrong = 0;
  for (uint32_t h = 0; h < 65536; ++h) {
    const float want_f = fp32(h);
    uint16_t want = narrow(want_f, t);
    if (double_round) want = narrow(widen(narrow(want_f, other(t)), other(t)), t);
    const uint16_t got = typed(h);
    // A NaN result's sign is not the formula's (IEEE 754 §6.3 leaves it unspecified; x86 picks the operand
    // the compiler put first, and commuting a product is allowed), so two NaN results agree; every GPU
    // arithmetic NaN is the one canonical NaN anyway. NaN operands are still checked bit for bit above.
    if (std::isnan(widen(got, t)) && std::isnan(widen(want, t))) continue;
    wrong += got != want;
  }
  return wrong;
}

}  // namespace

TEST_CASE_TEMPLATE("row storage: loads of every 16-bit pattern are the boundary's widening, stores of the fp32 sweep its narrowing", S,
                   Bf16Storage, F16Storage) {
  const DType t = dtype_of<S>();
  size_t load_wrong = 0;
  for (const uint16_t h : all_patterns())
    load_wrong += std::bit_cast<uint32_t>(S::load(h)) != std::bit_cast<uint32_t>(widen(h, t));
  CHECK(load_wrong == 0);
  size_t store_wrong = 0, double_wrong = 0;
  for (const uint32_t p : ptsim::test::fp32_sweep_patterns()) {
    const float x = std::bit_cast<float>(p);
    store_wrong += S::store(x) != narrow(x, t);
    double_wrong += double_rounded_store<S>(x) != narrow(x, t);
  }
  CHECK(store_wrong == 0);
  CHECK(double_wrong > 0);  // the comparison tells a twice-rounded store apart
  // fp32 storage is the identity both ways (the fp32 kernels' own reads and writes).
  CHECK(std::bit_cast<uint32_t>(F32Storage::load(-0.0f)) == 0x80000000u);
  CHECK(std::bit_cast<uint32_t>(F32Storage::store(std::bit_cast<float>(0x7f800001u))) == 0x7f800001u);
}

TEST_CASE_TEMPLATE("row storage: each typed element function is widen → the fp32 formula → one narrowing", S, Bf16Storage,
                   F16Storage) {
  const DType t = dtype_of<S>();
  const float mean = 0.375f, rstd = 1.75f, g_mean = -0.0625f, gx_mean = 0.1875f, dot = 0.3125f, scale = 1.25f;
  auto w = [&](uint32_t h, uint32_t salt) { return widen(partner(h, salt), t); };
  auto x = [&](uint32_t h) { return static_cast<uint16_t>(h); };

  auto ln_typed = [&](uint32_t h) {
    return layernorm_output_stored<S>(x(h), mean, rstd, partner(h, 1), partner(h, 2));
  };
  auto ln_fp32 = [&](uint32_t h) { return layernorm_output(widen(x(h), t), mean, rstd, w(h, 1), w(h, 2)); };
  CHECK(differing(ln_typed, ln_fp32, t) == 0);
  CHECK(differing(ln_typed, ln_fp32, t, true) > 0);

  auto dx_typed = [&](uint32_t h) {
    return layernorm_dx_stored<S>(x(h), partner(h, 3), partner(h, 4), mean, rstd, g_mean, gx_mean);
  };
  auto dx_fp32 = [&](uint32_t h) {
    return layernorm_dx(widen(x(h), t), w(h, 3), layernorm_xhat(w(h, 4), mean, rstd), rstd, g_mean, gx_mean);
  };
  CHECK(differing(dx_typed, dx_fp32, t) == 0);
  CHECK(differing(dx_typed, dx_fp32, t, true) > 0);

  auto sm_typed = [&](uint32_t h) { return softmax_dscore_stored<S>(x(h), partner(h, 5), dot); };
  auto sm_fp32 = [&](uint32_t h) { return softmax_dscore(widen(x(h), t), w(h, 5), dot); };
  CHECK(differing(sm_typed, sm_fp32, t) == 0);
  CHECK(differing(sm_typed, sm_fp32, t, true) > 0);

  for (const bool keep : {true, false}) {
    auto sd_typed = [&](uint32_t h) { return softmax_dropout_dscore_stored<S>(x(h), partner(h, 6), keep, scale, dot); };
    auto sd_fp32 = [&](uint32_t h) { return softmax_dropout_dscore(widen(x(h), t), w(h, 6), keep, scale, dot); };
    CHECK(differing(sd_typed, sd_fp32, t) == 0);
    CHECK(differing(sd_typed, sd_fp32, t, true) > 0);
  }

  for (const bool is_label : {true, false}) {
    const float lse = 2.5f, s = 1.0f / 3.0f;
    auto ce_typed = [&](uint32_t h) { return cross_entropy_dlogit_stored<S>(x(h), lse, s, is_label); };
    auto ce_fp32 = [&](uint32_t h) { return cross_entropy_dlogit(widen(x(h), t), lse, s, is_label); };
    CHECK(differing(ce_typed, ce_fp32, t) == 0);
    CHECK(differing(ce_typed, ce_fp32, t, true) > 0);
  }
}

TEST_CASE_TEMPLATE("row storage: an accumulated output is widened, summed in fp32 in order, rounded once", S, Bf16Storage,
                   F16Storage) {
  const DType t = dtype_of<S>();
  // Every pattern as the stored dst (dγ/dβ/dtable), plus three terms: the boundary widens dst, the fp32 kernel
  // adds the terms in order, the narrowing rounds once.
  const float terms[] = {0.1f, -3.0e-3f, 7.5f};
  auto acc_typed = [&](uint32_t h) {
    return accumulate_stored<S>(static_cast<uint16_t>(h), 3, [&](int64_t i) { return terms[i]; });
  };
  auto acc_fp32 = [&](uint32_t h) {
    float s = widen(static_cast<uint16_t>(h), t);
    for (const float v : terms) s += v;
    return s;
  };
  CHECK(differing(acc_typed, acc_fp32, t) == 0);
  CHECK(differing(acc_typed, acc_fp32, t, true) > 0);
  // A sum rounded after each term (a store per term) is not the boundary's.
  size_t per_term_wrong = 0;
  for (uint32_t h = 0; h < 65536; ++h) {
    uint16_t v = static_cast<uint16_t>(h);
    for (const float term : terms) v = S::store(S::load(v) + term);
    per_term_wrong += v != acc_typed(h);
  }
  CHECK(per_term_wrong > 0);

  // segment_column_add: dst[id][h] + the rows listed, in their order, each source value loaded.
  const std::vector<uint16_t> src = {narrow(0.5f, t), narrow(-1.25f, t), narrow(3.0e-2f, t), narrow(9.0f, t)};  // (4, 1)
  const int32_t rows[] = {3, 0, 2};
  for (uint32_t h = 0; h < 65536; ++h) {
    const auto out = static_cast<uint16_t>(h);
    const float want = widen(out, t) + widen(src[3], t) + widen(src[0], t) + widen(src[2], t);
    REQUIRE(segment_column_add<S>(out, src.data(), rows, 3, 1, 0) == narrow(want, t));
  }
}

namespace {

// The CPU backend's boundary path on a one-op graph (embedding_backward or layernorm) in dtype t.
struct RowCase {
  models::TaskGraph graph;
  test::Values values;
};

RowCase embedding_backward_case(DType t) {
  RowCase c;
  const int64_t M = 37, H = 19, V = 11;
  const int dy = test::add_tensor(c.graph, "dy", {M, H}, t);
  const int ids = test::add_tensor(c.graph, "ids", {M}, DType::i32);
  const int dtable = test::add_tensor(c.graph, "dtable", {V, H}, t);
  test::add_op(c.graph, OpKind::embedding_backward, {dy, ids}, {dtable}, {});
  c.values[dy] = test::random_in(t, M * H, 11);
  c.values[dtable] = test::random_in(t, V * H, 12);
  // run_graph stores a non-16-bit tensor's values as fp32 bytes: an i32 id is the float with its bits (a
  // subnormal, exact through double and back).
  std::vector<double> id(M);
  for (int64_t m = 0; m < M; ++m) id[m] = std::bit_cast<float>(static_cast<int32_t>((m * 7 + 3) % V));  // every id, repeated, unsorted
  c.values[ids] = id;
  return c;
}

// The segment algorithm of row_segments.cu on the host: rows grouped by id in ascending m (the stable sort),
// each dst value plus its segment's rows through segment_column_add.
template <class S>
std::vector<uint16_t> host_segments(const std::vector<uint16_t>& dtable, const std::vector<uint16_t>& dy,
                                    const std::vector<int32_t>& ids, int64_t H, int64_t V) {
  std::vector<uint16_t> out = dtable;
  for (int64_t id = 0; id < V; ++id) {
    std::vector<int32_t> rows;
    for (size_t m = 0; m < ids.size(); ++m)
      if (ids[m] == id) rows.push_back(static_cast<int32_t>(m));
    if (rows.empty()) continue;
    for (int64_t h = 0; h < H; ++h)
      out[id * H + h] =
          segment_column_add<S>(out[id * H + h], dy.data(), rows.data(), static_cast<int64_t>(rows.size()), H, h);
  }
  return out;
}

// The i32 ids a case stores as the floats with their bits (embedding_backward_case), decoded.
std::vector<int32_t> ids_of(const std::vector<double>& stored) {
  std::vector<int32_t> ids;
  ids.reserve(stored.size());
  for (const double v : stored) ids.push_back(std::bit_cast<int32_t>(static_cast<float>(v)));
  return ids;
}

std::vector<uint16_t> bits_of(const std::vector<double>& v, DType t) {
  const std::vector<std::byte> bytes = test::encode(t, v);
  std::vector<uint16_t> h(v.size());
  std::memcpy(h.data(), bytes.data(), bytes.size());
  return h;
}

}  // namespace

TEST_CASE_TEMPLATE("row storage: the embedding backward's segment sums on the host equal the CPU boundary path, bit for bit", S,
                   Bf16Storage, F16Storage) {
  const DType t = dtype_of<S>();
  const RowCase c = embedding_backward_case(t);
  const auto cpu = runtime::make_cpu_backend(runtime::ComputeType::f32, 1);
  const test::Values after = test::run_graph(*cpu, c.graph, c.values);
  const std::vector<int64_t>& table = c.graph.tensor(2).shape;
  const std::vector<uint16_t> before = bits_of(c.values.at(2), t);
  const std::vector<uint16_t> got = host_segments<S>(before, bits_of(c.values.at(0), t), ids_of(c.values.at(1)),
                                                     table[1], table[0]);
  const std::vector<uint16_t> want = bits_of(after.at(2), t);
  size_t wrong = 0, moved = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    wrong += got[i] != want[i];
    moved += got[i] != before[i];
  }
  CHECK(wrong == 0);
  CHECK(moved > want.size() / 2);  // the sums did change the table
}

namespace {

// gather_rows_backward in dtype t: dy (P,N), index (P) → dx (M,N). Odd sizes; rows 0..6 gathered (row 0
// from 6 positions, the others 5 or 6), rows 7 and 8 never (they must come back +0 whatever dx held);
// dy's N(0,1) values with, spread over it, ±0, ±inf, NaN, ± the smallest subnormal and the largest finite
// value; one dx element summed only from -0s (+0 + -0 = +0), one from two 40000s (in fp16 their fp32 sum,
// 80000, overflows to inf at the one rounding; 40000 = 32768 + 226·32 is exact in fp16).
RowCase gather_rows_backward_case(DType t) {
  RowCase c;
  const int64_t P = 41, N = 13, M = 9, gathered_rows = 7;
  const int dy = test::add_tensor(c.graph, "dy", {P, N}, t);
  const int index = test::add_tensor(c.graph, "index", {P}, DType::i32);
  const int dx = test::add_tensor(c.graph, "dx", {M, N}, t);
  test::add_op(c.graph, OpKind::gather_rows_backward, {dy, index}, {dx}, {});
  std::vector<int32_t> row(P);
  for (int64_t p = 0; p < P; ++p) row[p] = static_cast<int32_t>((p * 5 + 2) % gathered_rows);  // unsorted, repeated
  std::vector<double> v = test::random_in(t, P * N, 21);
  const bool f16 = t == DType::f16;
  const double tiny = f16 ? std::ldexp(1.0, -24) : std::ldexp(1.0, -133), largest = f16 ? 65504.0 : 3.3895313892515355e38;
  const double special[] = {0.0, -0.0, INFINITY, -INFINITY, NAN, tiny, -tiny, largest, -largest};
  for (size_t k = 0; k < std::size(special); ++k) v[(k * 97 + 5) % v.size()] = special[k];
  for (int64_t p = 0; p < P; ++p) {
    if (row[p] == 3) v[p * N + 1] = -0.0;    // dx[3][1]: -0s only
    if (row[p] == 4) v[p * N + 2] = 0.0;     // dx[4][2]: the two 40000s below only
  }
  int placed = 0;
  for (int64_t p = 0; p < P && placed < 2; ++p)
    if (row[p] == 4) v[p * N + 2] = 40000.0, ++placed;
  c.values[dy] = v;
  c.values[dx] = test::random_in(t, M * N, 22);  // overwritten: the op zeroes dx first
  std::vector<double> id(P);  // i32 ids as the floats with their bits (see embedding_backward_case)
  for (int64_t p = 0; p < P; ++p) id[p] = std::bit_cast<float>(row[p]);
  c.values[index] = id;
  return c;
}

}  // namespace

TEST_CASE_TEMPLATE("row storage: gather_rows_backward's segment sums into a zeroed dx equal the CPU boundary path, bit for bit", S,
                   Bf16Storage, F16Storage) {
  const DType t = dtype_of<S>();
  const RowCase c = gather_rows_backward_case(t);
  const auto cpu = runtime::make_cpu_backend(runtime::ComputeType::f32, 1);
  const test::Values after = test::run_graph(*cpu, c.graph, c.values);
  const std::vector<int64_t>& shape = c.graph.tensor(2).shape;
  const int64_t M = shape[0], N = shape[1];
  const std::vector<int32_t> index = ids_of(c.values.at(1));
  const std::vector<uint16_t> dy = bits_of(c.values.at(0), t);
  // The CUDA op: dx memset to zero bits, then row_segments.cu's segment sums (host_segments).
  const std::vector<uint16_t> got = host_segments<S>(std::vector<uint16_t>(static_cast<size_t>(M * N), 0), dy, index, N, M);
  const std::vector<uint16_t> want = bits_of(after.at(2), t);
  size_t wrong = 0, nonfinite = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    wrong += got[i] != want[i];
    nonfinite += !std::isfinite(widen(want[i], t));
  }
  CHECK(wrong == 0);
  CHECK(nonfinite >= 3);  // the inf, -inf and NaN reached dx (and fp16's 80000)
  for (int64_t r = 7; r < M; ++r)
    for (int64_t n = 0; n < N; ++n) CHECK(want[static_cast<size_t>(r * N + n)] == 0);  // never gathered: +0
  CHECK(want[static_cast<size_t>(3 * N + 1)] == 0);  // -0s only: +0 + -0 = +0
  CHECK(widen(want[static_cast<size_t>(4 * N + 2)], t) == (t == DType::f16 ? INFINITY : 79872.0f));
  // A variant that rounds the running sum after each row (a 16-bit accumulator) differs: the test can tell.
  std::vector<uint16_t> per_row(want.size(), 0);
  for (size_t p = 0; p < index.size(); ++p)
    for (int64_t n = 0; n < N; ++n) {
      uint16_t& out = per_row[static_cast<size_t>(index[p] * N + n)];
      out = S::store(S::load(out) + S::load(dy[p * static_cast<size_t>(N) + static_cast<size_t>(n)]));
    }
  size_t per_row_wrong = 0;
  for (size_t i = 0; i < want.size(); ++i) per_row_wrong += per_row[i] != want[i];
  CHECK(per_row_wrong > 0);
}

TEST_CASE_TEMPLATE("row storage: LayerNorm's typed output given the CPU's fp32 statistics equals the CPU boundary path", S,
                   Bf16Storage, F16Storage) {
  const DType t = dtype_of<S>();
  RowCase c;
  const int64_t M = 5, N = 67;
  const int x = test::add_tensor(c.graph, "x", {M, N}, t);
  const int gamma = test::add_tensor(c.graph, "gamma", {N}, t);
  const int beta = test::add_tensor(c.graph, "beta", {N}, t);
  const int y = test::add_tensor(c.graph, "y", {M, N}, t);
  const int mean = test::add_tensor(c.graph, "mean", {M}, DType::f32);
  const int rstd = test::add_tensor(c.graph, "rstd", {M}, DType::f32);
  models::OpAttrs a;
  a.epsilon = 1e-12;
  test::add_op(c.graph, OpKind::layernorm, {x, gamma, beta}, {y, mean, rstd}, a);
  c.values[x] = test::random_in(t, M * N, 21);
  c.values[gamma] = test::random_in(t, N, 22);
  c.values[beta] = test::random_in(t, N, 23);
  c.values[y] = std::vector<double>(M * N, 0.0);
  c.values[mean] = c.values[rstd] = std::vector<double>(M, 0.0);
  const auto cpu = runtime::make_cpu_backend(runtime::ComputeType::f32, 1);
  const test::Values after = test::run_graph(*cpu, c.graph, c.values);
  CHECK(runtime::cuda::rows_run_16bit_natively(c.graph, c.graph.ops[0]));
  const std::vector<uint16_t> xb = bits_of(c.values.at(x), t), gb = bits_of(c.values.at(gamma), t),
                              bb = bits_of(c.values.at(beta), t), want = bits_of(after.at(y), t);
  size_t wrong = 0, wrong_double = 0;
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      const auto mu = static_cast<float>(after.at(mean)[m]), rs = static_cast<float>(after.at(rstd)[m]);
      const size_t i = static_cast<size_t>(m * N + n);
      wrong += layernorm_output_stored<S>(xb[i], mu, rs, gb[n], bb[n]) != want[i];
      const float f = layernorm_output(S::load(xb[i]), mu, rs, S::load(gb[n]), S::load(bb[n]));
      wrong_double += double_rounded_store<S>(f) != want[i];
    }
  CHECK(wrong == 0);
  CHECK(wrong_double > 0);
}

TEST_CASE("native 16-bit rows: which ops and operand dtypes the typed row kernels take") {
  using runtime::cuda::native_row_storage;
  using runtime::cuda::rows_run_16bit_natively;
  // A one-op graph with the given operand dtypes.
  auto graph = [](OpKind kind, const std::vector<DType>& in, const std::vector<DType>& out) {
    models::TaskGraph g;
    std::vector<int> ins, outs;
    for (size_t i = 0; i < in.size(); ++i) ins.push_back(test::add_tensor(g, "in" + std::to_string(i), {4, 8}, in[i]));
    for (size_t i = 0; i < out.size(); ++i) outs.push_back(test::add_tensor(g, "out" + std::to_string(i), {4, 8}, out[i]));
    test::add_op(g, kind, ins, outs, {});
    return g;
  };
  const DType B = DType::bf16, H = DType::f16, F = DType::f32, I = DType::i32, U = DType::u8;
  struct Row {
    OpKind kind;
    std::vector<DType> in, out;
  };
  const Row ops[] = {
      {OpKind::layernorm, {B, B, B}, {B, F, F}},
      {OpKind::layernorm_backward, {B, B, B, F, F}, {B, B, B}},
      {OpKind::softmax, {B}, {B}},
      {OpKind::softmax, {B, I}, {B}},
      {OpKind::softmax_backward, {B, B}, {B}},
      {OpKind::softmax_dropout, {B, I}, {B, B, U}},
      {OpKind::softmax_dropout, {B}, {B, B, U}},
      {OpKind::softmax_dropout_backward, {B, B, U}, {B}},
      {OpKind::cross_entropy, {B, I}, {F, F}},
      {OpKind::cross_entropy_backward, {F, B, I, F}, {B}},
      {OpKind::embedding_backward, {B, I}, {B}},
      {OpKind::gather_rows_backward, {B, I}, {B}},
  };
  for (const Row& r : ops) {
    const models::TaskGraph g = graph(r.kind, r.in, r.out);
    CHECK_MESSAGE(native_row_storage(g, g.ops[0]) == Storage::bf16, models::to_string(r.kind));
    // The same op in fp16: every 16-bit operand f16.
    auto to_h = [&](std::vector<DType> v) {
      for (DType& d : v) d = d == B ? H : d;
      return v;
    };
    const models::TaskGraph gh = graph(r.kind, to_h(r.in), to_h(r.out));
    CHECK_MESSAGE(native_row_storage(gh, gh.ops[0]) == Storage::f16, models::to_string(r.kind));
    // fp32 data: nothing to take natively (the fp32 kernels run as they are).
    auto to_f = [&](std::vector<DType> v) {
      for (DType& d : v) d = d == B ? F : d;
      return v;
    };
    const models::TaskGraph gf = graph(r.kind, to_f(r.in), to_f(r.out));
    CHECK_MESSAGE(!rows_run_16bit_natively(gf, gf.ops[0]), models::to_string(r.kind));
  }
  // Mixes are refused (they take the boundary): an fp32 γ/β with bf16 x, a bf16 γ with an f16 x, 16-bit
  // statistics, a 16-bit lse or loss, a 16-bit dloss.
  const Row refused[] = {
      {OpKind::layernorm, {B, F, F}, {B, F, F}},
      {OpKind::layernorm, {H, B, B}, {H, F, F}},
      {OpKind::layernorm, {B, B, B}, {B, B, B}},
      {OpKind::layernorm_backward, {B, B, F, F, F}, {B, F, F}},
      {OpKind::softmax_backward, {B, H}, {B}},
      {OpKind::cross_entropy, {B, I}, {F, B}},
      {OpKind::cross_entropy_backward, {B, B, I, F}, {B}},
      {OpKind::embedding_backward, {B, I}, {F}},
      {OpKind::gather_rows_backward, {H, I}, {B}},   // dy and dx of one 16-bit type
      {OpKind::softmax_dropout, {B, I}, {B, B, B}},  // the mask must be u8
      {OpKind::gelu, {B}, {B}},                      // not a row op (the elementwise kernels')
  };
  for (const Row& r : refused) {
    const models::TaskGraph g = graph(r.kind, r.in, r.out);
    CHECK_MESSAGE(!rows_run_16bit_natively(g, g.ops[0]), models::to_string(r.kind));
  }
  // A missing required operand is refused too (a malformed op is the boundary's, and its kernel's, error).
  const models::TaskGraph short_ln = graph(OpKind::layernorm, {B, B}, {B, F, F});
  CHECK(!rows_run_16bit_natively(short_ln, short_ln.ops[0]));
}
