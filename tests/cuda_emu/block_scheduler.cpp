// tests/cuda_emu/block_scheduler.cpp — the fibers of one thread block and their barriers (block_scheduler.hpp).
#include "block_scheduler.hpp"

#include <boost/context/fiber.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <exception>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace cuda_emu {
namespace {

namespace ctx = boost::context;

std::string hex_mask(unsigned mask) { return fmt::format("{:#010x}", mask); }

constexpr size_t kStackBytes = 64 * 1024;  // per thread: the kernels keep a few scalars and small arrays
// Stacks are reserved for CUDA's largest block at once (64 MiB of address space, touched only as used), so the
// pool rarely has to be rebuilt for a larger block.
constexpr size_t kMinStackThreads = 1024;

enum class FiberState { runnable, at_block_barrier, at_warp_barrier, done };

struct Fiber {
  ctx::fiber context;  // the suspended thread; a thread that returned waits for the next block in it
  FiberState state = FiberState::runnable;
  uint3 index{};
  unsigned linear = 0;
  // the shuffle this fiber waits at
  unsigned mask = 0;
  uint64_t sent = 0, received = 0;
  int source = -1;
  std::exception_ptr error;
};

// Gives Boost.Context one slot of the block's preallocated stacks; the slot outlives the fiber, so nothing is
// freed when the fiber ends.
struct SlotStack {
  char* base;
  ctx::stack_context allocate() {
    ctx::stack_context s;
    s.size = kStackBytes;
    s.sp = base + kStackBytes;  // the stack grows down from the slot's end
    return s;
  }
  void deallocate(ctx::stack_context&) noexcept {}
};

// The fibers are kept from block to block and launch to launch (a pool as large as the largest block yet):
// a thread that returns waits at the end of its loop and runs the body again when the next block resumes it,
// so a block costs no fiber creation. Declared before `fibers`: the stacks must outlive them.
struct Block {
  std::unique_ptr<char[]> stacks;  // uninitialised: pages are touched only as deep as a thread's stack goes
  size_t stack_threads = 0;
  std::vector<Fiber> fibers;
  size_t threads = 0;         // of the running block: fibers[0, threads)
  dim3 indexed_dim{0, 0, 0};  // the block shape the fibers' index fields were computed for
  ctx::fiber scheduler;       // the scheduler, while a thread runs
  Fiber* current = nullptr;
  const std::function<void()>* body = nullptr;
};

thread_local Block block_state;

std::span<Fiber> running_fibers(Block& b) { return {b.fibers.data(), b.threads}; }

void yield_to_scheduler() { block_state.scheduler = std::move(block_state.scheduler).resume(); }

// A thread's whole life: run the body, report, wait for the next block. Its exception is kept for the scheduler
// and never leaves the fiber; Boost's forced_unwind (a pool fiber being destroyed) must pass through.
ctx::fiber fiber_main(ctx::fiber&& scheduler) {
  Block& b = block_state;
  b.scheduler = std::move(scheduler);
  for (;;) {
    try {
      (*b.body)();
    } catch (const ctx::detail::forced_unwind&) {
      throw;
    } catch (...) {
      b.current->error = std::current_exception();
    }
    b.current->state = FiberState::done;
    yield_to_scheduler();
  }
}

const char* state_name(FiberState s) {
  switch (s) {
    case FiberState::runnable: return "running";
    case FiberState::at_block_barrier: return "waiting at __syncthreads";
    case FiberState::at_warp_barrier: return "waiting at a warp shuffle";
    case FiberState::done: return "returned";
  }
  return "?";
}

// No thread can run and the block barrier cannot open: say which warp waits on which lanes.
[[noreturn]] void report_stuck_block(Block& b) {
  for (const Fiber& f : running_fibers(b)) {
    if (f.state != FiberState::at_warp_barrier) continue;
    const unsigned warp = f.linear / kWarpSize;
    for (unsigned lane = 0; lane < kWarpSize; ++lane) {
      if (!(f.mask >> lane & 1u)) continue;
      const unsigned t = warp * kWarpSize + lane;
      if (t >= b.threads)
        throw KernelError("warp shuffle: mask " + hex_mask(f.mask) + " of warp " + std::to_string(warp) +
                          " names lane " + std::to_string(lane) + ", which is not a thread of this block (" +
                          std::to_string(b.threads) + " threads)");
      if (b.fibers[t].state != FiberState::at_warp_barrier)
        throw KernelError("divergent warp shuffle: thread " + std::to_string(f.linear) + " waits at a shuffle with mask " +
                          hex_mask(f.mask) + " but lane " + std::to_string(lane) + " of its warp (thread " +
                          std::to_string(t) + ") is " + state_name(b.fibers[t].state));
    }
  }
  throw KernelError("thread block cannot make progress (emulator: no runnable thread)");
}

// Destroys every pool fiber; Boost unwinds the stack of one that has not finished (forced_unwind) on its own
// stack, so its frames' destructors run and nothing crosses into the scheduler.
void discard_fibers(Block& b) {
  b.fibers.clear();
  b.threads = 0;
  b.indexed_dim = dim3{0, 0, 0};
}

void grow_pool(Block& b, size_t threads) {
  if (b.stack_threads < threads) {
    discard_fibers(b);  // they live on the old stacks
    const size_t slots = std::max(threads, kMinStackThreads);
    b.stacks.reset(new char[slots * kStackBytes]);
    b.stack_threads = slots;
  }
  b.fibers.reserve(threads);
  while (b.fibers.size() < threads) {
    char* slot = b.stacks.get() + b.fibers.size() * kStackBytes;
    b.fibers.emplace_back().context = ctx::fiber(std::allocator_arg, SlotStack{slot}, fiber_main);
  }
}

void prepare_fibers(Block& b, dim3 dim) {
  const size_t threads = size_t{dim.x} * dim.y * dim.z;
  if (b.fibers.size() < threads) grow_pool(b, threads);
  b.threads = threads;
  const bool same_shape = b.indexed_dim.x == dim.x && b.indexed_dim.y == dim.y && b.indexed_dim.z == dim.z;
  for (size_t t = 0; t < threads; ++t) {
    Fiber& f = b.fibers[t];
    f.state = FiberState::runnable;
    if (same_shape) continue;
    f.linear = static_cast<unsigned>(t);
    f.index = uint3{static_cast<unsigned>(t % dim.x), static_cast<unsigned>(t / dim.x % dim.y),
                    static_cast<unsigned>(t / (size_t{dim.x} * dim.y))};
  }
  b.indexed_dim = dim;
}

// Opens the block barrier when every live thread waits at it; false when nothing could be released.
bool release_block_barrier(Block& b) {
  bool any = false;
  for (const Fiber& f : running_fibers(b)) {
    if (f.state == FiberState::at_warp_barrier || f.state == FiberState::runnable) return false;
    any = any || f.state == FiberState::at_block_barrier;
  }
  for (Fiber& f : running_fibers(b))
    if (f.state == FiberState::at_block_barrier) f.state = FiberState::runnable;
  return any;
}

}  // namespace

void run_block(dim3 dim, const std::function<void()>& body) {
  Block& b = block_state;
  b.body = &body;
  prepare_fibers(b, dim);
  try {
    for (;;) {
      bool ran = false, all_done = true;
      for (Fiber& f : running_fibers(b)) {
        if (f.state == FiberState::runnable) {
          b.current = &f;
          f.context = std::move(f.context).resume();
          ran = true;
          if (f.error) std::rethrow_exception(f.error);
        }
        all_done = all_done && f.state == FiberState::done;
      }
      if (all_done) break;
      if (!ran && !release_block_barrier(b)) report_stuck_block(b);
    }
  } catch (...) {
    // A thread's exception or a stuck block ends the launch: the threads still on their stacks are unwound
    // (none may be resumed by the next block), and the pool is rebuilt at the next launch.
    b.current = nullptr;
    discard_fibers(b);
    throw;
  }
  b.current = nullptr;
}

const uint3& current_thread_index() {
  if (block_state.current == nullptr) throw KernelError("threadIdx read outside a kernel");
  return block_state.current->index;
}

unsigned current_linear_thread() { return block_state.current->linear; }

void sync_block() {
  block_state.current->state = FiberState::at_block_barrier;
  yield_to_scheduler();
}

uint64_t warp_exchange(unsigned mask, uint64_t value, int source) {
  Block& b = block_state;
  Fiber& self = *b.current;
  const unsigned warp = self.linear / kWarpSize, lane = self.linear % kWarpSize;
  if (!(mask >> lane & 1u))
    throw KernelError("warp shuffle: thread " + std::to_string(self.linear) + " is not in its own mask " +
                      hex_mask(mask));
  self.mask = mask;
  self.sent = value;
  self.source = source;
  self.state = FiberState::at_warp_barrier;
  // The last lane of the mask to arrive hands every lane its value and lets them all go on.
  std::array<Fiber*, kWarpSize> lanes{};
  for (unsigned l = 0; l < kWarpSize; ++l) {
    if (!(mask >> l & 1u)) continue;
    const size_t t = size_t{warp} * kWarpSize + l;
    if (t >= b.threads || b.fibers[t].state != FiberState::at_warp_barrier) {
      yield_to_scheduler();
      return self.received;
    }
    if (b.fibers[t].mask != mask)
      throw KernelError("warp shuffle: lanes of warp " + std::to_string(warp) + " arrive with different masks");
    lanes[l] = &b.fibers[t];
  }
  for (unsigned l = 0; l < kWarpSize; ++l) {
    if (lanes[l] == nullptr) continue;
    const int s = lanes[l]->source;
    const bool in_warp = s >= 0 && s < static_cast<int>(kWarpSize);
    if (in_warp && lanes[s] == nullptr)
      throw KernelError("warp shuffle: lane " + std::to_string(l) + " of warp " + std::to_string(warp) +
                        " reads lane " + std::to_string(s) + ", which is not in the mask (undefined in CUDA)");
    lanes[l]->received = in_warp ? lanes[s]->sent : lanes[l]->sent;
    lanes[l]->state = FiberState::runnable;
  }
  return self.received;
}

}  // namespace cuda_emu
