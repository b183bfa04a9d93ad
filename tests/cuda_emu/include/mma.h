// tests/cuda_emu/include/mma.h — the emulator's nvcuda::wmma (docs/cuda-emulation.md, "The WMMA shim"): the
// subset attention_tc_wmma.cuh uses — m16n16k16 fragments of matrix_a / matrix_b (__half or __nv_bfloat16,
// row_major or col_major) and of the fp32 accumulator, load_matrix_sync, store_matrix_sync, fill_fragment
// and mma_sync. CUDA leaves the element-to-lane mapping unspecified and the project never touches fragment
// elements, so every lane's fragment holds the whole 16×16 tile. What the shim does check, per the CUDA
// Programming Guide's WMMA section: the operations are warp-collective (all 32 lanes, the same arguments:
// warp_collective.hpp), pointers are 256-bit (32-byte) aligned and ldm is a multiple of 16 bytes.
// mma_sync's arithmetic: D[r][c] = C[r][c], then + A[r][x]·B[x][c] for x = 0, 1, …, 15, each product exact
// in fp32 (16-bit × 16-bit) and each add rounded to fp32 — the host tile algorithm's order
// (math/attention_tc_host_mma.hpp), which a GPU's tensor cores do not promise.
#pragma once
#include <cuda_runtime_api.h>  // first: the emulator's, which keeps the toolkit's out (cuda_emu_prelude.hpp)
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>

#include "warp_collective.hpp"

namespace nvcuda::wmma {

struct matrix_a {};
struct matrix_b {};
struct accumulator {};
struct row_major {};
struct col_major {};
enum layout_t { mem_row_major, mem_col_major };

// One m16n16k16 fragment: the whole tile, row-major by its logical (row, column), in every lane, widened to
// fp32 at the load (exact), so mma_sync multiplies floats (the toolkit's host __half2float is slow).
template <class Use, int M, int N, int K, class T, class Layout = void>
class fragment {
  static_assert(M == 16 && N == 16 && K == 16, "the emulator's WMMA shim has the m16n16k16 shape only");
  static_assert(std::is_same_v<Use, accumulator> ? std::is_same_v<T, float> && std::is_void_v<Layout>
                                                 : (std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>) &&
                                                       (std::is_same_v<Layout, row_major> ||
                                                        std::is_same_v<Layout, col_major>),
                "the shim's fragments: matrix_a/matrix_b of __half or __nv_bfloat16 with a layout, fp32 accumulator");

 public:
  float emulated_tile[16 * 16];  // not CUDA's per-lane x[]: the project reads no fragment element
};

namespace detail {

enum class Op : uint64_t { load_ab = 1, load_accumulator, store, fill, mma };

inline float widen(__half x) { return __half2float(x); }
inline float widen(__nv_bfloat16 x) { return __bfloat162float(x); }
inline float widen(float x) { return x; }

inline uint64_t address(const void* p) { return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(p)); }

// The CUDA Programming Guide's contract for every load and store: a 256-bit aligned pointer, ldm a multiple
// of 16 bytes (8 16-bit or 4 fp32 elements).
inline void check_memory(const char* what, const void* p, unsigned ldm, size_t element_bytes) {
  if (address(p) % 32 != 0)
    throw ::cuda_emu::KernelError(std::string(what) + ": the pointer is not 256-bit (32-byte) aligned");
  if (ldm * element_bytes % 16 != 0)
    throw ::cuda_emu::KernelError(std::string(what) + ": ldm " + std::to_string(ldm) + " elements is not a multiple of 16 bytes");
}

// Every lane at the same collective with the same arguments (warp_collective.hpp).
inline void collective(const char* what, Op op, uint64_t a, uint64_t b = 0, uint64_t c = 0) {
  uint64_t s = ::cuda_emu::signature_add(static_cast<uint64_t>(op), a);
  s = ::cuda_emu::signature_add(s, b);
  ::cuda_emu::warp_collective(what, ::cuda_emu::signature_add(s, c));
}

// A fragment type's part of a signature: lanes must agree on the template arguments too.
template <class Use, class T, class Layout>
uint64_t type_code() {
  return (std::is_same_v<Use, matrix_a> ? 1u : std::is_same_v<Use, matrix_b> ? 2u : 3u) |
         (std::is_same_v<T, __half> ? 4u : std::is_same_v<T, __nv_bfloat16> ? 8u : 16u) |
         (std::is_same_v<Layout, row_major> ? 32u : std::is_same_v<Layout, col_major> ? 64u : 128u);
}

// Element (r, c) of a 16×16 matrix stored row-major (r·ldm + c) or column-major (c·ldm + r).
inline size_t at(bool rows, unsigned ldm, int r, int c) {
  return rows ? static_cast<size_t>(r) * ldm + c : static_cast<size_t>(c) * ldm + r;
}

}  // namespace detail

template <class Use, class T, class Layout>
void load_matrix_sync(fragment<Use, 16, 16, 16, T, Layout>& f, const T* p, unsigned ldm) {
  static_assert(!std::is_same_v<Use, accumulator>, "an accumulator load takes a layout_t");
  detail::collective("wmma::load_matrix_sync", detail::Op::load_ab, detail::address(p), ldm,
                     detail::type_code<Use, T, Layout>());
  detail::check_memory("wmma::load_matrix_sync", p, ldm, sizeof(T));
  const bool rows = std::is_same_v<Layout, row_major>;
  for (int r = 0; r < 16; ++r)
    for (int c = 0; c < 16; ++c) f.emulated_tile[r * 16 + c] = detail::widen(p[detail::at(rows, ldm, r, c)]);
}

inline void load_matrix_sync(fragment<accumulator, 16, 16, 16, float>& f, const float* p, unsigned ldm,
                             layout_t layout) {
  detail::collective("wmma::load_matrix_sync", detail::Op::load_accumulator, detail::address(p), ldm, layout);
  detail::check_memory("wmma::load_matrix_sync", p, ldm, sizeof(float));
  for (int r = 0; r < 16; ++r)
    for (int c = 0; c < 16; ++c) f.emulated_tile[r * 16 + c] = p[detail::at(layout == mem_row_major, ldm, r, c)];
}

// Every lane writes the whole tile (the same values), so each lane's store covers what all 32 write on a GPU.
inline void store_matrix_sync(float* p, const fragment<accumulator, 16, 16, 16, float>& f, unsigned ldm,
                              layout_t layout) {
  detail::collective("wmma::store_matrix_sync", detail::Op::store, detail::address(p), ldm, layout);
  detail::check_memory("wmma::store_matrix_sync", p, ldm, sizeof(float));
  for (int r = 0; r < 16; ++r)
    for (int c = 0; c < 16; ++c) p[detail::at(layout == mem_row_major, ldm, r, c)] = f.emulated_tile[r * 16 + c];
}

template <class Use, class T, class Layout>
void fill_fragment(fragment<Use, 16, 16, 16, T, Layout>& f, const T& value) {
  uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof(T));
  detail::collective("wmma::fill_fragment", detail::Op::fill, bits, detail::type_code<Use, T, Layout>());
  for (float& x : f.emulated_tile) x = detail::widen(value);
}

// D = A·B + C in fp32, in the order the header comment states. D may be C.
template <class T, class ALayout, class BLayout>
void mma_sync(fragment<accumulator, 16, 16, 16, float>& d, const fragment<matrix_a, 16, 16, 16, T, ALayout>& a,
              const fragment<matrix_b, 16, 16, 16, T, BLayout>& b, const fragment<accumulator, 16, 16, 16, float>& c) {
  detail::collective("wmma::mma_sync", detail::Op::mma, detail::type_code<matrix_a, T, ALayout>(),
                     detail::type_code<matrix_b, T, BLayout>());
  float out[16 * 16];
  for (int r = 0; r < 16; ++r)
    for (int col = 0; col < 16; ++col) {
      float acc = c.emulated_tile[r * 16 + col];
      for (int x = 0; x < 16; ++x)
        acc += a.emulated_tile[r * 16 + x] * b.emulated_tile[x * 16 + col];
      out[r * 16 + col] = acc;
    }
  std::memcpy(d.emulated_tile, out, sizeof out);
}

}  // namespace nvcuda::wmma
