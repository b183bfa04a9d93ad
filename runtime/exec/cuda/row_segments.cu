// runtime/exec/cuda/row_segments.cu — dst[index[m]] += src[m] without float atomics (the embedding and
// gather_rows backward): (index, m) pairs are sorted by index with CUB's stable radix sort, then each run
// of equal indices is one segment; the block at a segment's first position adds the segment's rows onto
// dst in ascending m, exactly the CPU's order. One block walks a whole segment, so a very frequent id
// (padding tokens) serialises its rows: correct, but a load imbalance to measure on a GPU. dst and src in
// their storage (S: math/row_storage.hpp): a 16-bit dst row is widened, its segment's rows added in fp32,
// rounded once — the op boundary's bits for every row a segment touches (the rest are left as stored).
#include <cub/device/device_radix_sort.cuh>

#include "runtime/exec/cuda/cuda_check.hpp"
#include "runtime/exec/cuda/gather.hpp"
#include "runtime/exec/cuda/kernel_common.cuh"
#include "runtime/exec/math/row_storage.hpp"

namespace ptsim::runtime::cuda {
namespace {

// keys[m] = index[m] (V for a bad one, sorted past every real row and skipped), values[m] = m.
__global__ void segment_keys_kernel(int32_t* keys, int32_t* values, const int32_t* index, int64_t M, int64_t V,
                                    DeviceErrorKind bad, DeviceError* error) {
  PTSIM_GRID_STRIDE(m, M) {
    const int32_t id = index[m];
    const bool ok = id >= 0 && id < V;
    if (!ok) report_device_error(error, bad, id, m, V);
    keys[m] = ok ? id : static_cast<int32_t>(V);
    values[m] = static_cast<int32_t>(m);
  }
}

template <class S>
__global__ void segment_add_kernel(typename S::Elem* dst, const typename S::Elem* src, const int32_t* keys,
                                   const int32_t* rows, int64_t M, int64_t H, int64_t V) {
  const int64_t first = blockIdx.x;
  const int32_t key = keys[first];
  if (key >= V || (first > 0 && keys[first - 1] == key)) return;  // not a segment start, or bad ids
  int64_t end = first + 1;
  while (end < M && keys[end] == key) ++end;
  typename S::Elem* out = dst + static_cast<int64_t>(key) * H;
  for (int64_t h = threadIdx.x; h < H; h += blockDim.x)
    out[h] = math::segment_column_add<S>(out[h], src, rows + first, end - first, H, h);
}

int key_bits(int64_t V) {
  int bits = 1;
  while ((int64_t{1} << bits) <= V) ++bits;  // keys go up to V
  return bits;
}

size_t sort_temp_bytes(int64_t M, int64_t V) {
  size_t bytes = 0;
  const int32_t* in = nullptr;
  int32_t* out = nullptr;
  PTSIM_CUDA_CHECK(
      cub::DeviceRadixSort::SortPairs(nullptr, bytes, in, out, in, out, static_cast<int>(M), 0, key_bits(V)));
  return bytes;
}

size_t aligned(size_t bytes) { return (bytes + 255) / 256 * 256; }

}  // namespace

size_t row_segments_scratch_bytes(int64_t M, int64_t V) {
  return 4 * aligned(static_cast<size_t>(M) * sizeof(int32_t)) + aligned(sort_temp_bytes(M, V));
}

void launch_row_segments_add(math::Storage storage, void* dst, const void* src, const int32_t* index, int64_t M,
                             int64_t H, int64_t V, DeviceErrorKind bad_index, void* scratch, size_t scratch_bytes,
                             DeviceError* error, cudaStream_t stream) {
  if (M == 0) return;
  auto* base = static_cast<char*>(scratch);
  const size_t block = aligned(static_cast<size_t>(M) * sizeof(int32_t));
  auto* keys_in = reinterpret_cast<int32_t*>(base);
  auto* keys_out = reinterpret_cast<int32_t*>(base + block);
  auto* rows_in = reinterpret_cast<int32_t*>(base + 2 * block);
  auto* rows_out = reinterpret_cast<int32_t*>(base + 3 * block);
  void* temp = base + 4 * block;
  size_t temp_bytes = scratch_bytes - 4 * block;
  segment_keys_kernel<<<blocks_for(M), kThreads, 0, stream>>>(keys_in, rows_in, index, M, V, bad_index, error);
  check_launch("segment_keys");
  PTSIM_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(temp, temp_bytes, keys_in, keys_out, rows_in, rows_out,
                                                   static_cast<int>(M), 0, key_bits(V), stream));
  math::with_storage(storage, [&](auto tag) {
    using S = decltype(tag);
    segment_add_kernel<S><<<static_cast<unsigned>(M), kThreads, 0, stream>>>(
        static_cast<typename S::Elem*>(dst), static_cast<const typename S::Elem*>(src), keys_out, rows_out, M, H, V);
  });
}

}  // namespace ptsim::runtime::cuda
