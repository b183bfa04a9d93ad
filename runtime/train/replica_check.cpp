// runtime/train/replica_check.cpp — the cross-rank comparison of a state hash (replica_check.hpp).
#include "runtime/train/replica_check.hpp"

#include <fmt/format.h>

#include <span>
#include <stdexcept>

#include "runtime/comm/communicator.hpp"

namespace ptsim::runtime {

bool replicas_agree(Communicator& comm, uint64_t hash) {
  if (comm.size() == 1) return true;
  double word[4], sums[8];
  for (int k = 0; k < 4; ++k) {
    word[k] = static_cast<double>((hash >> (16 * k)) & 0xffffu);
    sums[2 * k] = word[k];
    sums[2 * k + 1] = word[k] * word[k];  // < 2^32: N ranks' sum is exact in double for N < 2^21
  }
  comm.all_reduce_sum(std::span<double>(sums, 8));
  const double n = comm.size();
  bool same = true;
  for (int k = 0; k < 4; ++k) same = same && sums[2 * k] == n * word[k] && sums[2 * k + 1] == n * word[k] * word[k];
  return same;
}

void require_replicas_agree(Communicator& comm, uint64_t hash, const std::string& what) {
  if (replicas_agree(comm, hash)) return;
  throw std::runtime_error(fmt::format("data-parallel ranks diverged: {} hashes to {} on rank {} of {}, and not every "
                                       "rank has that hash (the ranks must hold bit-identical weights, optimizer state, "
                                       "loss scale and data cursor; nothing was saved)",
                                       what, hash_hex(hash), comm.rank(), comm.size()));
}

std::string hash_hex(uint64_t hash) { return fmt::format("0x{:016x}", hash); }

}  // namespace ptsim::runtime
