// tests/cuda_emu/test_emulator.cpp — the emulator itself (docs/cuda-emulation.md): barriers order the block's
// threads, shuffles exchange as CUDA defines them, and what CUDA leaves undefined or reports (a shuffle not
// every lane of its mask reaches, __trap, a bad launch geometry) is an error, not a silent result.
#include <doctest/doctest.h>

#include <cuda_runtime_api.h>

#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include "block_scheduler.hpp"
#include "emulator_probe_kernels.hpp"
#include "launch.hpp"
#include "warp_collective.hpp"
#include "warp_intrinsics.hpp"

namespace {

unsigned thread_x() { return cuda_emu::current_thread_index().x; }

// Recurses `depth` frames of about 256 bytes each before throwing, so the throw starts deep in a fiber's stack.
void throw_at_depth(unsigned depth) {
  volatile char frame[256] = {};  // volatile: the frame (and the recursion) is not optimised away
  frame[depth % sizeof frame] = 1;
  if (depth == 0 || frame[0] == 2) throw cuda_emu::KernelError("thrown deep in thread " + std::to_string(thread_x()));
  throw_at_depth(depth - 1);
}

// Counts its destruction: shows which threads' stacks were unwound.
struct Unwound {
  int& count;
  ~Unwound() { ++count; }
};

}  // namespace

TEST_CASE("cuda_emu: __syncthreads makes every thread's write visible to every thread after it") {
  // each thread writes its slot, waits, then sums every slot: only a working barrier gives each the full
  // sum 0+1+...+(n−1) (without it, thread 0 would read slots nobody has written yet)
  constexpr unsigned n = 96;
  std::vector<int> slots(n, -1000), sums(n, 0);
  cuda_emu::run_grid(dim3(1), dim3(n), 0, [&] {
    const unsigned t = thread_x();
    slots[t] = static_cast<int>(t);
    cuda_emu::sync_block();
    sums[t] = std::accumulate(slots.begin(), slots.end(), 0);
  });
  for (unsigned t = 0; t < n; ++t) CHECK(sums[t] == static_cast<int>(n * (n - 1) / 2));
}

TEST_CASE("cuda_emu: shuffles read the lane the CUDA Programming Guide names") {
  std::vector<int> xor_got(64), down_got(64), down16_got(64);
  cuda_emu::run_grid(dim3(1), dim3(64), 0, [&] {
    const int t = static_cast<int>(thread_x());
    xor_got[t] = __shfl_xor_sync(0xffffffffu, t, 5);
    down_got[t] = __shfl_down_sync(0xffffffffu, t, 3);
    down16_got[t] = __shfl_down_sync(0xffffffffu, t, 4, 16);
  });
  for (int t = 0; t < 64; ++t) {
    const int lane = t % 32, warp_base = t - lane;
    CHECK(xor_got[t] == warp_base + (lane ^ 5));
    CHECK(down_got[t] == (lane + 3 < 32 ? t + 3 : t));                 // past the warp's end: own value
    CHECK(down16_got[t] == (lane % 16 + 4 < 16 ? t + 4 : t));          // past its 16-lane group: own value
  }
}

TEST_CASE("cuda_emu: a shuffle that not every lane of its mask reaches is an error") {
  // lane 7 skips the full-warp shuffle: on a GPU the result is undefined; the emulator names it
  auto divergent = [] {
    const int t = static_cast<int>(thread_x());
    if (t != 7) (void)__shfl_xor_sync(0xffffffffu, t, 1);
  };
  CHECK_THROWS_WITH_AS(cuda_emu::run_grid(dim3(1), dim3(32), 0, divergent),
                       doctest::Contains("lane 7 of its warp (thread 7) is returned"), cuda_emu::KernelError);
  // a full mask in a block of 16 threads names lanes that do not exist
  CHECK_THROWS_WITH_AS(cuda_emu::run_grid(dim3(1), dim3(16), 0, [] { (void)__shfl_xor_sync(0xffffffffu, 1, 1); }),
                       doctest::Contains("not a thread of this block"), cuda_emu::KernelError);
  // the stuck threads are not resumed by the next launch: it runs whole, from fresh threads
  std::vector<int> got(32, -1);
  cuda_emu::run_grid(dim3(1), dim3(32), 0, [&] {
    const int t = static_cast<int>(thread_x());
    got[t] = __shfl_xor_sync(0xffffffffu, t, 1);
  });
  for (int t = 0; t < 32; ++t) CHECK(got[t] == (t ^ 1));
}

TEST_CASE("cuda_emu: a bad launch geometry sets cudaErrorInvalidConfiguration and runs nothing") {
  (void)cudaGetLastError();
  bool ran = false;
  cuda_emu::run_grid(dim3(1), dim3(1025), 0, [&] { ran = true; });
  CHECK_FALSE(ran);
  CHECK(cudaGetLastError() == cudaErrorInvalidConfiguration);
  CHECK(cudaGetLastError() == cudaSuccess);  // read once, then cleared
}

TEST_CASE("cuda_emu: dynamic shared memory past 48 KiB needs the kernel's own opt-in, else cudaErrorInvalidValue") {
  // CUDA C++ Programming Guide, "Shared Memory": above 48 KB per block a kernel must opt in with
  // cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, n); a launch past its limit
  // fails with cudaErrorInvalidValue ("invalid argument") and runs nothing. The limit is per kernel.
  constexpr size_t kDefault = 48 * 1024, kOptIn = 64 * 1024;
  int runs[2] = {0, 0};
  CHECK(cuda_emu_probe::launch_dynamic_shared_probe(0, kDefault, runs) == cudaSuccess);  // at the default: runs
  CHECK(runs[0] == 1);
  CHECK(cuda_emu_probe::launch_dynamic_shared_probe(0, kDefault + 16, runs) == cudaErrorInvalidValue);
  CHECK(runs[0] == 1);  // refused: did not run
  REQUIRE(cuda_emu_probe::opt_in_dynamic_shared_probe(0, static_cast<int>(kOptIn)) == cudaSuccess);
  CHECK(cuda_emu_probe::launch_dynamic_shared_probe(0, kOptIn, runs) == cudaSuccess);
  CHECK(runs[0] == 2);
  CHECK(cuda_emu_probe::launch_dynamic_shared_probe(0, kOptIn + 16, runs) == cudaErrorInvalidValue);  // past it
  // the other kernel did not opt in: still 48 KiB
  CHECK(cuda_emu_probe::launch_dynamic_shared_probe(1, kOptIn, runs) == cudaErrorInvalidValue);
  CHECK(runs[1] == 0);
  // an opt-in past the device's maximum (163 KiB on the emulated sm_80) is itself refused
  CHECK(cuda_emu_probe::opt_in_dynamic_shared_probe(1, 200 * 1024) == cudaErrorInvalidValue);
  (void)cudaGetLastError();
  REQUIRE(cuda_emu_probe::opt_in_dynamic_shared_probe(0, static_cast<int>(kDefault)) == cudaSuccess);  // restore
}

TEST_CASE("cuda_emu: every block of a 3 × 2 grid runs once, with its own blockIdx") {
  std::vector<unsigned> seen(6 * 2, 0);
  cuda_emu::run_grid(dim3(3, 2), dim3(2), 0, [&] {
    const uint3 b = cuda_emu::block_index();
    seen[(b.y * 3 + b.x) * 2 + thread_x()] += 1 + b.x + 10 * b.y;
  });
  for (unsigned y = 0; y < 2; ++y)
    for (unsigned x = 0; x < 3; ++x)
      for (unsigned t = 0; t < 2; ++t) CHECK(seen[(y * 3 + x) * 2 + t] == 1 + x + 10 * y);
}

TEST_CASE("cuda_emu: dynamic shared memory starts every block as 0xFF bytes, not the previous block's values") {
  // Block x writes its index into the 8 bytes after reading them; each block must read the fill (0xFF),
  // never what the block before it wrote (a kernel reading unwritten shared memory would then look correct).
  std::vector<uint64_t> first_read(4, 0);
  cuda_emu::run_grid(dim3(4), dim3(1), sizeof(uint64_t), [&] {
    auto* word = static_cast<uint64_t*>(cuda_emu::dynamic_shared_memory());
    first_read[cuda_emu::block_index().x] = *word;
    *word = cuda_emu::block_index().x;
  });
  for (uint64_t v : first_read) CHECK(v == ~uint64_t{0});
}

TEST_CASE("cuda_emu: dynamic shared memory is 256-byte aligned (WMMA needs 32)") {
  uintptr_t address = 1;
  cuda_emu::run_grid(dim3(1), dim3(1), 100, [&] { address = reinterpret_cast<uintptr_t>(cuda_emu::dynamic_shared_memory()); });
  CHECK(address % 256 == 0);
}

TEST_CASE("cuda_emu: a warp-collective operation needs every lane of a full warp, with lane 0's arguments") {
  // two warps, each through two collectives: nothing is reported, every lane gets past both
  std::vector<int> passed(64, 0);
  cuda_emu::run_grid(dim3(1), dim3(64), 0, [&] {
    cuda_emu::warp_collective("test collective", 5);
    cuda_emu::warp_collective("test collective", 6);
    ++passed[thread_x()];
  });
  for (int p : passed) CHECK(p == 1);
  // lane 7 skips it: the scheduler names the lane that never came
  CHECK_THROWS_WITH_AS(cuda_emu::run_grid(dim3(1), dim3(32), 0,
                                          [] {
                                            if (thread_x() != 7) cuda_emu::warp_collective("test collective", 5);
                                          }),
                       doctest::Contains("lane 7 of its warp (thread 7) is returned"), cuda_emu::KernelError);
  // lane 3 passes another argument (on a GPU: another pointer to load from)
  CHECK_THROWS_WITH_AS(cuda_emu::run_grid(dim3(1), dim3(32), 0,
                                          [] { cuda_emu::warp_collective("test collective", thread_x() == 3 ? 9 : 5); }),
                       doctest::Contains("test collective: lane 3 of warp 0 calls it with other arguments"),
                       cuda_emu::KernelError);
  // a 48-thread block: warp 1 has 16 lanes
  CHECK_THROWS_WITH_AS(cuda_emu::run_grid(dim3(1), dim3(48), 0, [] { cuda_emu::warp_collective("test collective", 5); }),
                       doctest::Contains("warp 1 of a 48-thread block has 16 lanes"), cuda_emu::KernelError);
}

TEST_CASE("cuda_emu: static __shared__ memory starts every block as 0xFF bytes, not the previous block's values") {
  // The probe kernel reads two static arrays before writing them; without the per-block fill the first block
  // would read zeros and every later one the previous block's index, values a buggy kernel could pass with.
  std::vector<uint32_t> first_reads(4 * 3, 0);
  cuda_emu_probe::launch_static_shared_probe(first_reads.data(), 4);
  for (size_t i = 0; i < first_reads.size(); ++i) CHECK_MESSAGE(first_reads[i] == 0xFFFFFFFFu, "word " << i);
  // a second launch starts from the fill again, not from the last block's writes
  cuda_emu_probe::launch_static_shared_probe(first_reads.data(), 1);
  CHECK(first_reads[0] == 0xFFFFFFFFu);
}

TEST_CASE("cuda_emu: a shuffle width that is not a power of two in 1..32 is an error") {
  for (int width : {0, 3, 12, 64}) {
    CAPTURE(width);
    CHECK_THROWS_WITH_AS(
        cuda_emu::run_grid(dim3(1), dim3(32), 0, [&] { (void)__shfl_down_sync(0xffffffffu, 1, 1, width); }),
        doctest::Contains("is not a power of two"), cuda_emu::KernelError);
    CHECK_THROWS_AS(cuda_emu::run_grid(dim3(1), dim3(32), 0, [&] { (void)__shfl_xor_sync(0xffffffffu, 1, 1, width); }),
                    cuda_emu::KernelError);
  }
}

TEST_CASE("cuda_emu: __shfl_sync / __shfl_up_sync and out-of-range lane operands as the Programming Guide and PTX define") {
  std::vector<int> idx(64), idx_mod(64), up(64), up8(64), xor33(64), down33(64);
  cuda_emu::run_grid(dim3(1), dim3(64), 0, [&] {
    const int t = static_cast<int>(thread_x());
    idx[t] = __shfl_sync(0xffffffffu, t, 5);          // lane 5 of the warp
    idx_mod[t] = __shfl_sync(0xffffffffu, t, 35, 16);  // srcLane 35 mod 16 = 3 of the caller's 16-lane group
    up[t] = __shfl_up_sync(0xffffffffu, t, 3);
    up8[t] = __shfl_up_sync(0xffffffffu, t, 2, 8);
    xor33[t] = __shfl_xor_sync(0xffffffffu, t, 33);    // shfl.sync reads the low five bits: 33 → 1
    down33[t] = __shfl_down_sync(0xffffffffu, t, 33);  // likewise 33 → 1
  });
  for (int t = 0; t < 64; ++t) {
    const int lane = t % 32, warp_base = t - lane;
    CHECK(idx[t] == warp_base + 5);
    CHECK(idx_mod[t] == warp_base + (lane & ~15) + 3);
    CHECK(up[t] == (lane >= 3 ? t - 3 : t));          // before the warp's start: own value
    CHECK(up8[t] == (lane % 8 >= 2 ? t - 2 : t));     // before its 8-lane group: own value
    CHECK(xor33[t] == warp_base + (lane ^ 1));
    CHECK(down33[t] == (lane + 1 < 32 ? t + 1 : t));
  }
}

TEST_CASE("cuda_emu: a thread's exception after a barrier ends the launch, unwinds every thread, and the next launch runs") {
  int unwound = 0, blocks_started = 0;
  auto body = [&] {
    Unwound guard{unwound};
    if (thread_x() == 0) ++blocks_started;
    cuda_emu::sync_block();
    if (thread_x() == 5) throw_at_depth(20);
    cuda_emu::sync_block();
  };
  CHECK_THROWS_WITH_AS(cuda_emu::run_grid(dim3(2), dim3(64), 0, body), "thrown deep in thread 5", cuda_emu::KernelError);
  CHECK(blocks_started == 1);  // the launch ended in block 0
  // thread 5 by its exception, threads 0–4 (at the second barrier) and 6–63 (not yet resumed after the first)
  // by the scheduler: all 64 guards, so no thread is left on its stack to be resumed by a later launch
  CHECK(unwound == 64);
  std::vector<int> slots(64, -1), sums(64, 0);
  cuda_emu::run_grid(dim3(1), dim3(64), 0, [&] {
    const unsigned t = thread_x();
    slots[t] = static_cast<int>(t);
    cuda_emu::sync_block();
    sums[t] = std::accumulate(slots.begin(), slots.end(), 0);
  });
  for (unsigned t = 0; t < 64; ++t) CHECK(sums[t] == 64 * 63 / 2);
}

TEST_CASE("cuda_emu: threads reused across blocks and block shapes keep their own stacks and threadIdx") {
  // The same fibers run every block; a shape with as many threads as the last (64 then 8 × 8) must still get
  // its own threadIdx, and a value a thread keeps on its stack across a barrier must be its own.
  for (const dim3 shape : {dim3(64), dim3(8, 8), dim3(1024), dim3(4, 2, 4), dim3(64), dim3(3)}) {
    const unsigned n = shape.x * shape.y * shape.z;
    std::vector<int> seen(n, 0), intact(n, 0);
    cuda_emu::run_grid(dim3(3), shape, 0, [&] {
      const uint3 i = cuda_emu::current_thread_index();
      const unsigned linear = i.x + i.y * shape.x + i.z * shape.x * shape.y;
      CHECK_FALSE((i.x >= shape.x || i.y >= shape.y || i.z >= shape.z || linear != cuda_emu::current_linear_thread()));
      int mine[16];
      for (int k = 0; k < 16; ++k) mine[k] = static_cast<int>(linear) * 16 + k;
      cuda_emu::sync_block();
      bool ok = true;
      for (int k = 0; k < 16; ++k) ok = ok && mine[k] == static_cast<int>(linear) * 16 + k;
      ++seen[linear % n];
      intact[linear % n] += ok;
    });
    for (unsigned t = 0; t < n; ++t) {
      CHECK(seen[t] == 3);  // once per block of the 3
      CHECK(intact[t] == 3);
    }
  }
}
