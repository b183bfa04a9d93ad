// tests/cuda_emu/test_emulated_row_segments.cpp — the emulator's cub::DeviceRadixSort::SortPairs shim against
// CUB's documented contract, and row_segments.cu (the CUDA embedding / gather_rows backward: a stable radix
// sort by id, then one block per id adding its rows in order) run under the emulator against the CPU
// backend's embedding_backward / gather_rows_backward, bit for bit: both add each id's rows in ascending row
// order in fp32 onto the stored value (16-bit storage: widened, summed in fp32, rounded once — the CPU's
// fp32 kernel between the op boundary's widen and narrow), so every output bit must agree.
#include <doctest/doctest.h>

#include <Eigen/Core>
#include <algorithm>
#include <bit>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

#include <cub/device/device_radix_sort.cuh>  // the emulator's (tests/cuda_emu/include)

#include "core/error.hpp"
#include "emulated_kernels.hpp"

namespace {

namespace cpu = ptsim::runtime::cpu;
using ptsim::runtime::math::Storage;

// ids in [0, V): a third are id 3 (a padding token: one long segment), the rest uniform, so most ids repeat.
std::vector<int32_t> frequent_ids(int64_t M, int64_t V, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> any(0, static_cast<int32_t>(V - 1));
  std::vector<int32_t> ids(static_cast<size_t>(M));
  for (int32_t& id : ids) id = rng() % 3 == 0 ? 3 : any(rng);
  return ids;
}

std::vector<float> random_floats(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-2.0f, 2.0f);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

// Runs launch_row_segments_add on dst (in place) with scratch of the size the launcher asks for; returns the
// DeviceError the kernels left.
emu::DeviceError segments_add(Storage storage, void* dst, const void* src, const std::vector<int32_t>& ids, int64_t H,
                              int64_t V, emu::DeviceErrorKind bad) {
  const auto M = static_cast<int64_t>(ids.size());
  const size_t bytes = emu::row_segments_scratch_bytes(M, V);
  std::vector<unsigned char> scratch(bytes + 256);
  void* aligned = scratch.data() + (256 - reinterpret_cast<uintptr_t>(scratch.data()) % 256) % 256;  // cudaMalloc's
  emu::DeviceError error{};
  emu::launch_row_segments_add(storage, dst, src, ids.data(), M, H, V, bad, aligned, bytes, &error, nullptr);
  return error;
}

// sorts (keys, values = 0, 1, …) with the shim over bits [begin, end); returns the sorted pairs.
std::pair<std::vector<int32_t>, std::vector<int32_t>> shim_sort(const std::vector<int32_t>& keys, int begin, int end) {
  const int n = static_cast<int>(keys.size());
  std::vector<int32_t> values(keys.size()), keys_out(keys.size(), -7), values_out(keys.size(), -7);
  std::iota(values.begin(), values.end(), 0);
  size_t bytes = 0;
  REQUIRE(cub::DeviceRadixSort::SortPairs(nullptr, bytes, keys.data(), keys_out.data(), values.data(),
                                          values_out.data(), n, begin, end) == cudaSuccess);
  std::vector<unsigned char> temp(bytes);
  REQUIRE(cub::DeviceRadixSort::SortPairs(temp.data(), bytes, keys.data(), keys_out.data(), values.data(),
                                          values_out.data(), n, begin, end, cudaStream_t{}) == cudaSuccess);
  return {keys_out, values_out};
}

// The expected order: a stable sort of the positions by CUB's sort bits (sign bit flipped) in [begin, end).
std::vector<int32_t> stable_order(const std::vector<int32_t>& keys, int begin, int end) {
  std::vector<int32_t> order(keys.size());
  std::iota(order.begin(), order.end(), 0);
  const uint64_t mask = (uint64_t{1} << (end - begin)) - 1;
  auto bits = [&](int32_t k) { return ((std::bit_cast<uint32_t>(k) ^ 0x80000000u) >> begin) & mask; };
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return bits(keys[a]) < bits(keys[b]); });
  return order;
}

}  // namespace

TEST_CASE("emulated cub SortPairs: the temp-storage query and a too-small temp storage change nothing") {
  const std::vector<int32_t> keys = {5, 1, 4}, values = {0, 1, 2};
  std::vector<int32_t> keys_out(3, -7), values_out(3, -7);
  size_t bytes = 0;
  CHECK(cub::DeviceRadixSort::SortPairs(nullptr, bytes, keys.data(), keys_out.data(), values.data(), values_out.data(),
                                        3) == cudaSuccess);
  CHECK(bytes > 0);
  CHECK(keys_out == std::vector<int32_t>(3, -7));  // the query sorts nothing
  std::vector<unsigned char> temp(bytes);
  size_t too_few = bytes - 1;
  CHECK(cub::DeviceRadixSort::SortPairs(temp.data(), too_few, keys.data(), keys_out.data(), values.data(),
                                        values_out.data(), 3) == cudaErrorInvalidValue);
  CHECK(keys_out == std::vector<int32_t>(3, -7));
  CHECK(cub::DeviceRadixSort::SortPairs(temp.data(), bytes, keys.data(), keys_out.data(), values.data(),
                                        values_out.data(), 3) == cudaSuccess);
  CHECK(keys_out == std::vector<int32_t>{1, 4, 5});
  CHECK(values_out == std::vector<int32_t>{1, 2, 0});
  CHECK(keys == std::vector<int32_t>{5, 1, 4});  // inputs unchanged
}

TEST_CASE("emulated cub SortPairs: stable, signed keys in signed order, only bits [begin_bit, end_bit)") {
  // 1007 keys in [−40, 40): every key repeats ~12 times, so stability shows in the values' order
  std::mt19937 rng(11);
  std::vector<int32_t> keys(1007);
  for (int32_t& k : keys) k = static_cast<int32_t>(rng() % 80) - 40;
  for (auto [begin, end] : {std::pair{0, 32}, std::pair{0, 7}, std::pair{3, 9}, std::pair{5, 5}}) {
    const auto [k, v] = shim_sort(keys, begin, end);
    const std::vector<int32_t> order = stable_order(keys, begin, end);
    CHECK_MESSAGE(v == order, "bits [" << begin << ", " << end << ")");
    bool keys_follow = true;
    for (size_t i = 0; i < keys.size(); ++i) keys_follow = keys_follow && k[i] == keys[static_cast<size_t>(v[i])];
    CHECK(keys_follow);
  }
  // the full width orders as signed integers: −40 first, 39 last
  const auto [k, v] = shim_sort(keys, 0, 32);
  CHECK(std::is_sorted(k.begin(), k.end()));
  CHECK(k.front() == -40);
}

TEST_CASE("emulated row_segments_add equals the CPU's embedding and gather_rows backward, bit for bit") {
  const int64_t M = 301, H = 37, V = 53;  // 301 rows, not a multiple of the 256-thread blocks; id 3 is frequent
  const std::vector<int32_t> ids = frequent_ids(M, V, 5);
  const std::vector<float> dy = random_floats(static_cast<size_t>(M * H), 6);
  // embedding backward adds into the table's gradient as it stands
  std::vector<float> got = random_floats(static_cast<size_t>(V * H), 7), want = got;
  const emu::DeviceError e = segments_add(Storage::f32, got.data(), dy.data(), ids, H, V, emu::DeviceErrorKind::token_id);
  cpu::embedding_backward<float>(want.data(), dy.data(), ids.data(), M, H, V);
  CHECK(e.kind == 0);
  CHECK(got == want);
  // gather_rows backward: the backend zeroes dx first (cuda_backend.cpp), the CPU's fills it
  std::vector<float> dx(static_cast<size_t>(V * H), 0.0f), dx_cpu(dx.size(), 5.0f);
  segments_add(Storage::f32, dx.data(), dy.data(), ids, H, V, emu::DeviceErrorKind::gather_index);
  cpu::gather_rows_backward<float>(dx_cpu.data(), dy.data(), ids.data(), M, V, H);
  CHECK(dx == dx_cpu);
}

TEST_CASE_TEMPLATE("emulated row_segments_add on 16-bit storage equals widen, the CPU's fp32 backward, narrow", E,
                   Eigen::bfloat16, Eigen::half) {
  const Storage storage = std::is_same_v<E, Eigen::bfloat16> ? Storage::bf16 : Storage::f16;
  const int64_t M = 203, H = 19, V = 29;
  const std::vector<int32_t> ids = frequent_ids(M, V, 8);
  auto bits_of = [](const std::vector<float>& x) {
    std::vector<uint16_t> b(x.size());
    for (size_t i = 0; i < x.size(); ++i) b[i] = std::bit_cast<uint16_t>(E(x[i]));
    return b;
  };
  auto widen = [](const std::vector<uint16_t>& b) {
    std::vector<float> x(b.size());
    for (size_t i = 0; i < b.size(); ++i) x[i] = static_cast<float>(std::bit_cast<E>(b[i]));
    return x;
  };
  const std::vector<uint16_t> dy = bits_of(random_floats(static_cast<size_t>(M * H), 9));
  std::vector<uint16_t> table = bits_of(random_floats(static_cast<size_t>(V * H), 10));
  // the reference: the boundary's exact widening, the CPU's fp32 kernel, one round-to-nearest-even narrowing
  // (rows no id touches round-trip unchanged)
  std::vector<float> want = widen(table);
  cpu::embedding_backward<float>(want.data(), widen(dy).data(), ids.data(), M, H, V);
  CHECK(segments_add(storage, table.data(), dy.data(), ids, H, V, emu::DeviceErrorKind::token_id).kind == 0);
  CHECK(table == bits_of(want));
}

TEST_CASE("emulated row_segments_add reports a bad id in the DeviceError and adds every other row") {
  const int64_t M = 77, H = 9, V = 11;
  std::vector<int32_t> ids = frequent_ids(M, V, 12);
  const std::vector<float> dy = random_floats(static_cast<size_t>(M * H), 13);
  for (int32_t bad : {static_cast<int32_t>(V), -1}) {
    ids[40] = bad;
    std::vector<float> got(static_cast<size_t>(V * H), 0.0f), want = got;
    const emu::DeviceError e = segments_add(Storage::f32, got.data(), dy.data(), ids, H, V, emu::DeviceErrorKind::token_id);
    CHECK(e.kind == static_cast<int32_t>(emu::DeviceErrorKind::token_id));
    CHECK(e.value == bad);
    CHECK(e.position == 40);
    CHECK(e.limit == V);
    // the CPU throws for it; without that row its result is the kernel's
    CHECK_THROWS_AS(cpu::embedding_backward<float>(want.data(), dy.data(), ids.data(), M, H, V), ptsim::core::InputError);
    std::fill(want.begin(), want.end(), 0.0f);
    std::vector<int32_t> good_ids = ids;
    std::vector<float> good_dy = dy;
    good_ids.erase(good_ids.begin() + 40);
    good_dy.erase(good_dy.begin() + 40 * H, good_dy.begin() + 41 * H);
    cpu::embedding_backward<float>(want.data(), good_dy.data(), good_ids.data(), M - 1, H, V);
    CHECK(got == want);
  }
}
