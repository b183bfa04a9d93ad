// runtime/exec/cpu_parallel.hpp — deterministic data parallelism for the CPU backend's vector passes
// (grad norm, unscale, optimizer updates): work is cut into fixed chunks whose boundaries depend only on
// the element count (kChunkElements), the chunks are dealt to threads in contiguous runs, and any
// reduction adds the per-chunk partial results in chunk order. Results therefore never depend on the
// scheduling, nor on the thread count. Threads are started per call (std::thread): these passes run a
// few times per optimizer step, where a thread start (tens of µs) is noise.
// Not here: GEMM threads (OpenBLAS/Eigen pools, cpu_gemm.hpp).
#pragma once
#include <algorithm>
#include <cstddef>
#include <exception>
#include <thread>
#include <vector>

namespace ptsim::runtime::cpu {

// Elements per chunk: 2^15 floats = 128 KiB, large enough that a thread start is amortised, small enough
// that 4M-element tensors give every thread work.
inline constexpr size_t kChunkElements = size_t{1} << 15;

inline size_t chunk_count(size_t n) { return (n + kChunkElements - 1) / kChunkElements; }

// The threads the vector passes get when GEMMs run on `gemm_threads` threads: the cores not taken by the
// GEMM pool's workers, at most gemm_threads, at least 1. OpenBLAS's (and OpenMP's) workers keep spinning
// for a while after each GEMM, so a pass started right after backward competes with gemm_threads − 1 busy
// workers: on a 2-core machine with --threads 2, a second pass thread made bert-tiny's LAMB update 1.5×
// slower and the step 1.4× slower (docs/executor.md, "Threads and determinism"). Results do not depend on
// the count (fixed chunks), so this is purely a speed choice.
inline int vector_pass_threads(int gemm_threads, unsigned cores = std::thread::hardware_concurrency()) {
  if (gemm_threads <= 1) return 1;
  const int free_cores = static_cast<int>(cores) - (gemm_threads - 1);
  return std::max(1, std::min(gemm_threads, free_cores));
}

// Calls body(c) for every chunk c in [0, chunks), on up to `threads` threads (≤ 1: the caller's thread).
// Each thread takes a contiguous run of chunks. An exception in a body is rethrown after every thread
// has finished (the first one, by thread order).
template <class Body>
void for_each_chunk(size_t chunks, int threads, Body&& body) {
  const size_t workers = std::min<size_t>(chunks, threads > 1 ? static_cast<size_t>(threads) : 1);
  if (workers <= 1) {
    for (size_t c = 0; c < chunks; ++c) body(c);
    return;
  }
  std::vector<std::exception_ptr> errors(workers);
  auto run = [&](size_t w) {
    const size_t begin = chunks * w / workers, end = chunks * (w + 1) / workers;
    try {
      for (size_t c = begin; c < end; ++c) body(c);
    } catch (...) {
      errors[w] = std::current_exception();
    }
  };
  std::vector<std::thread> pool;
  pool.reserve(workers - 1);
  for (size_t w = 1; w < workers; ++w) pool.emplace_back(run, w);
  run(0);
  for (std::thread& t : pool) t.join();
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace ptsim::runtime::cpu
