// tests/cuda_emu/nccl_emulated_state.hpp — what the NCCL shim can tell a test about the communicators it made
// (nccl_emulated.cpp): how each one ended, so a test of NcclCommunicator's destructor can see that a healthy
// communicator was finalized and destroyed, and a failed one aborted, never left alive.
#pragma once

namespace cuda_emu::nccl {

struct CommunicatorCounts {
  int live = 0;                  // initialised, not yet destroyed or aborted
  int finalized_destroyed = 0;   // ncclCommFinalize finished, then ncclCommDestroy
  int destroyed_unfinalized = 0;  // ncclCommDestroy without a finished ncclCommFinalize
  int aborted = 0;               // ncclCommAbort
};

// Over every communicator this process has made.
CommunicatorCounts communicator_counts();

}  // namespace cuda_emu::nccl
