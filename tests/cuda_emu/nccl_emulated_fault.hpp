// tests/cuda_emu/nccl_emulated_fault.hpp — fault injection for the NCCL shim's tests (docs/cuda-emulation.md,
// "The NCCL shim"): PTSIM_EMU_NCCL_FAULT=KIND:RANK:N makes NCCL rank RANK's Nth ncclAllReduce (counted from 1,
// per communicator) fail; RANK `all`: every rank's Nth. KIND `async-error`: the call returns as usual and the
// communicator's asynchronous error becomes ncclRemoteError (as when a peer's connection closes); `hang`: the
// call and its enqueueing finish as a healthy one's (ncclCommGetAsyncError says ncclSuccess), but the
// all-reduce never completes on its stream (cuda_emu::stall_stream: events after it stay not ready, host
// syncs on it block) until ncclCommAbort, and every later all-reduce of the communicator hangs behind it, as
// on a GPU whose NCCL kernel waits for a dead peer. Either way the rank sends nothing, so its peers' same
// all-reduce never finishes either (`hang:all:N`: every rank hangs on the device, what every survivor sees
// when a peer dies mid-collective). Read by ncclCommInitRankConfig, which refuses a malformed value.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

namespace cuda_emu::nccl {

struct Fault {
  enum class Kind { async_error, hang };
  Kind kind = Kind::async_error;
  int rank = 0;       // kEveryRank: RANK `all`
  int64_t call = 1;  // the Nth all-reduce, from 1
  std::string text;  // the variable's value, for messages
  static constexpr int kEveryRank = -1;
  bool strikes(int nccl_rank, int64_t nth_all_reduce) const {
    return (rank == kEveryRank || nccl_rank == rank) && nth_all_reduce == call;
  }
};

// `value` parsed; nullopt for null or empty. Throws nothing: false with `why` naming the variable, the value
// and the expected form.
bool parse_fault(const char* value, std::optional<Fault>& fault, std::string& why);
// parse_fault of getenv("PTSIM_EMU_NCCL_FAULT").
bool fault_from_env(std::optional<Fault>& fault, std::string& why);

}  // namespace cuda_emu::nccl
