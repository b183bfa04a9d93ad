// tests/cuda_emu/include/cub/device/device_radix_sort.cuh — the emulator's cub::DeviceRadixSort::SortPairs
// (docs/cuda-emulation.md, "The cub shim"), on the host: the emulator's device memory is host memory and its
// streams run work at once. CUB's documented contract: with a null d_temp_storage only temp_storage_bytes is
// set (nothing read or written); a temp storage smaller than that is an error (cudaErrorInvalidValue); the
// sort is stable; only key bits [begin_bit, end_bit) order the items; signed integer keys order as signed
// (CUB flips their sign bit before sorting bits); the inputs are not changed. The sort itself is a
// least-significant-digit radix sort (8-bit digits) whose ping-pong buffers live in the caller's temp storage,
// so a launcher that passes less than it asked for, or the wrong region, breaks it visibly.
// Integer keys only (what the project sorts). Stricter than CUB: a bit range outside [0, key bits] or a
// negative num_items is cudaErrorInvalidValue.
#pragma once
#include <cuda_runtime_api.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace cub {

namespace emulated_detail {

inline size_t round_up(size_t bytes) { return (bytes + 255) / 256 * 256; }

// The key as the unsigned bits CUB sorts: a signed key's sign bit flipped, so unsigned order is signed order.
template <class KeyT>
std::make_unsigned_t<KeyT> sort_bits(KeyT key) {
  using U = std::make_unsigned_t<KeyT>;
  U u;
  std::memcpy(&u, &key, sizeof u);
  if constexpr (std::is_signed_v<KeyT>) u ^= U(U(1) << (8 * sizeof(KeyT) - 1));
  return u;
}

// One stable counting-sort pass on the digit of `width` bits at `shift`: from (keys, values) into (keys_to,
// values_to).
template <class KeyT, class ValueT>
void digit_pass(const KeyT* keys, const ValueT* values, KeyT* keys_to, ValueT* values_to, size_t n, int shift,
                int width) {
  const unsigned mask = (1u << width) - 1;
  std::array<size_t, 257> start{};
  for (size_t i = 0; i < n; ++i) ++start[((sort_bits(keys[i]) >> shift) & mask) + 1];
  for (size_t d = 1; d < start.size(); ++d) start[d] += start[d - 1];
  for (size_t i = 0; i < n; ++i) {
    const size_t to = start[(sort_bits(keys[i]) >> shift) & mask]++;
    keys_to[to] = keys[i];
    values_to[to] = values[i];
  }
}

}  // namespace emulated_detail

struct DeviceRadixSort {
  template <class KeyT, class ValueT, class NumItemsT>
  static cudaError_t SortPairs(void* d_temp_storage, size_t& temp_storage_bytes, const KeyT* d_keys_in,
                               KeyT* d_keys_out, const ValueT* d_values_in, ValueT* d_values_out, NumItemsT num_items,
                               int begin_bit = 0, int end_bit = sizeof(KeyT) * 8, cudaStream_t stream = nullptr) {
    static_assert(std::is_integral_v<KeyT>, "the emulator's radix sort sorts integer keys");
    (void)stream;  // the emulator's streams run work when it is issued
    if (num_items < 0 || begin_bit < 0 || begin_bit > end_bit || end_bit > static_cast<int>(8 * sizeof(KeyT)))
      return cudaErrorInvalidValue;
    const auto n = static_cast<size_t>(num_items);
    // the alternate key and value buffers, 256-byte aligned from a 256-byte aligned start (+255 for one that is not)
    const size_t key_bytes = emulated_detail::round_up(n * sizeof(KeyT));
    const size_t needed = key_bytes + emulated_detail::round_up(n * sizeof(ValueT)) + 255;
    if (d_temp_storage == nullptr) {
      temp_storage_bytes = needed;
      return cudaSuccess;
    }
    if (temp_storage_bytes < needed) return cudaErrorInvalidValue;
    const auto base = (reinterpret_cast<uintptr_t>(d_temp_storage) + 255) / 256 * 256;
    auto* keys_alt = reinterpret_cast<KeyT*>(base);
    auto* values_alt = reinterpret_cast<ValueT*>(base + key_bytes);
    const int passes = (end_bit - begin_bit + 7) / 8;
    if (passes == 0) {  // no bit orders anything: a stable sort keeps the input order
      std::memmove(d_keys_out, d_keys_in, n * sizeof(KeyT));
      std::memmove(d_values_out, d_values_in, n * sizeof(ValueT));
      return cudaSuccess;
    }
    // pass i writes the output arrays when passes − 1 − i is even, so the last pass ends there
    const KeyT* keys = d_keys_in;
    const ValueT* values = d_values_in;
    for (int i = 0; i < passes; ++i) {
      const bool to_out = (passes - 1 - i) % 2 == 0;
      KeyT* keys_to = to_out ? d_keys_out : keys_alt;
      ValueT* values_to = to_out ? d_values_out : values_alt;
      const int shift = begin_bit + 8 * i, width = end_bit - shift < 8 ? end_bit - shift : 8;
      emulated_detail::digit_pass(keys, values, keys_to, values_to, n, shift, width);
      keys = keys_to;
      values = values_to;
    }
    return cudaSuccess;
  }
};

}  // namespace cub
