// tests/cuda_emu/block_scheduler.cpp — the fibers of one thread block and their barriers (block_scheduler.hpp).
#include "block_scheduler.hpp"

#include <ucontext.h>

#include <fmt/format.h>

#include <exception>
#include <memory>
#include <string>
#include <vector>

namespace cuda_emu {
namespace {

std::string hex_mask(unsigned mask) { return fmt::format("{:#010x}", mask); }

constexpr size_t kStackBytes = 64 * 1024;  // per thread: the kernels keep a few scalars and small arrays

enum class FiberState { runnable, at_block_barrier, at_warp_barrier, done };

struct Fiber {
  ucontext_t context;
  FiberState state = FiberState::runnable;
  uint3 index{};
  unsigned linear = 0;
  // the shuffle this fiber waits at
  unsigned mask = 0;
  uint64_t sent = 0, received = 0;
  int source = -1;
  std::exception_ptr error;
};

struct Block {
  std::vector<Fiber> fibers;
  std::unique_ptr<char[]> stacks;  // uninitialised: pages are touched only as deep as a thread's stack goes
  size_t stack_threads = 0;
  ucontext_t scheduler;
  Fiber* current = nullptr;
  const std::function<void()>* body = nullptr;
};

thread_local Block block_state;

void fiber_entry() {
  Block& b = block_state;
  Fiber& f = *b.current;
  try {
    (*b.body)();
  } catch (...) {
    f.error = std::current_exception();
  }
  f.state = FiberState::done;  // uc_link returns to the scheduler
}

void yield_to_scheduler() {
  Fiber& f = *block_state.current;
  swapcontext(&f.context, &block_state.scheduler);
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
[[noreturn]] void report_stuck_block(const Block& b) {
  for (const Fiber& f : b.fibers) {
    if (f.state != FiberState::at_warp_barrier) continue;
    const unsigned warp = f.linear / kWarpSize;
    for (unsigned lane = 0; lane < kWarpSize; ++lane) {
      if (!(f.mask >> lane & 1u)) continue;
      const unsigned t = warp * kWarpSize + lane;
      if (t >= b.fibers.size())
        throw KernelError("warp shuffle: mask " + hex_mask(f.mask) + " of warp " + std::to_string(warp) +
                          " names lane " + std::to_string(lane) + ", which is not a thread of this block (" +
                          std::to_string(b.fibers.size()) + " threads)");
      if (b.fibers[t].state != FiberState::at_warp_barrier)
        throw KernelError("divergent warp shuffle: thread " + std::to_string(f.linear) + " waits at a shuffle with mask " +
                          hex_mask(f.mask) + " but lane " + std::to_string(lane) + " of its warp (thread " +
                          std::to_string(t) + ") is " + state_name(b.fibers[t].state));
    }
  }
  throw KernelError("thread block cannot make progress (emulator: no runnable thread)");
}

void prepare_fibers(Block& b, dim3 dim) {
  const size_t threads = size_t{dim.x} * dim.y * dim.z;
  if (b.stack_threads < threads) {
    b.stacks.reset(new char[threads * kStackBytes]);
    b.stack_threads = threads;
  }
  b.fibers.assign(threads, Fiber{});
  for (size_t t = 0; t < threads; ++t) {
    Fiber& f = b.fibers[t];
    f.linear = static_cast<unsigned>(t);
    f.index = uint3{static_cast<unsigned>(t % dim.x), static_cast<unsigned>(t / dim.x % dim.y),
                    static_cast<unsigned>(t / (size_t{dim.x} * dim.y))};
    getcontext(&f.context);
    f.context.uc_stack.ss_sp = b.stacks.get() + t * kStackBytes;
    f.context.uc_stack.ss_size = kStackBytes;
    f.context.uc_link = &b.scheduler;
    makecontext(&f.context, fiber_entry, 0);
  }
}

// Opens the block barrier when every live thread waits at it; false when nothing could be released.
bool release_block_barrier(Block& b) {
  bool any = false;
  for (const Fiber& f : b.fibers) {
    if (f.state == FiberState::at_warp_barrier || f.state == FiberState::runnable) return false;
    any = any || f.state == FiberState::at_block_barrier;
  }
  for (Fiber& f : b.fibers)
    if (f.state == FiberState::at_block_barrier) f.state = FiberState::runnable;
  return any;
}

}  // namespace

void run_block(dim3 dim, const std::function<void()>& body) {
  Block& b = block_state;
  b.body = &body;
  prepare_fibers(b, dim);
  for (;;) {
    bool ran = false, all_done = true;
    for (Fiber& f : b.fibers) {
      if (f.state == FiberState::runnable) {
        b.current = &f;
        swapcontext(&b.scheduler, &f.context);
        ran = true;
        if (f.error) std::rethrow_exception(f.error);
      }
      all_done = all_done && f.state == FiberState::done;
    }
    if (all_done) break;
    if (!ran && !release_block_barrier(b)) report_stuck_block(b);
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
  std::vector<Fiber*> lanes(kWarpSize, nullptr);
  for (unsigned l = 0; l < kWarpSize; ++l) {
    if (!(mask >> l & 1u)) continue;
    const size_t t = size_t{warp} * kWarpSize + l;
    if (t >= b.fibers.size() || b.fibers[t].state != FiberState::at_warp_barrier) {
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
