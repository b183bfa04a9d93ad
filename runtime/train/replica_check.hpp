// runtime/train/replica_check.hpp — data-parallel replicas must hold the same state: every rank starts from
// the same weights and applies the same averaged gradients, so after every step its fp32 masters, optimizer
// state, loss scaler and data cursor are bit-identical to every other rank's (Megatron-LM checks the same
// with --check-weight-hash-across-dp-replicas-interval). The trainer hashes that state on every rank at each
// checkpoint and compares the hashes across ranks, so the one checkpoint rank 0 writes stands for all ranks;
// a difference (a collective that reduced differently on one rank, an overflow decided differently) stops
// the run instead of saving one rank's view. docs/training.md, "Data parallelism (MPI)".
#pragma once
#include <cstdint>
#include <string>

namespace ptsim::runtime {

class Communicator;  // runtime/comm/communicator.hpp

// Whether every rank passed the same `hash`, decided identically on every rank from one all-reduce of 8
// doubles: the hash's four 16-bit words w and their squares w² are summed over the N ranks; a rank's word
// equals all the others' iff Σw = N·w and Σw² = N·w² (the ranks' words then have mean w and variance 0).
// Every sum is an integer below 2^53, so exact. Collective: every rank must call it.
bool replicas_agree(Communicator& comm, uint64_t hash);

// Throws std::runtime_error on every rank when the ranks' `hash`es differ, naming `what`, this rank and its
// hash. Collective.
void require_replicas_agree(Communicator& comm, uint64_t hash, const std::string& what);

// "0x" and 16 lower-case hex digits.
std::string hash_hex(uint64_t hash);

}  // namespace ptsim::runtime
