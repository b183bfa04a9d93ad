// tests/runtime/comm/test_replica_check.cpp — replicas_agree (runtime/train/replica_check.hpp) decides the
// same on every rank, without MPI: each rank's view is a communicator whose sum adds the other simulated
// ranks' contributions ([w, w²] of each 16-bit word of their hashes), exactly what MPI_Allreduce would give.
#include <doctest/doctest.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "runtime/comm/communicator.hpp"
#include "runtime/train/replica_check.hpp"

namespace rt = ptsim::runtime;

namespace {

// Rank `rank` of hashes.size() ranks whose hashes are `hashes`.
class SimulatedRanks final : public rt::Communicator {
 public:
  SimulatedRanks(std::vector<uint64_t> hashes, int rank) : hashes_(std::move(hashes)), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return static_cast<int>(hashes_.size()); }
  void all_reduce_sum(std::span<float>) override { throw std::logic_error("not used"); }
  void all_reduce_sum(std::span<double> data) override {
    REQUIRE(data.size() == 8);
    for (size_t r = 0; r < hashes_.size(); ++r) {
      if (static_cast<int>(r) == rank_) continue;  // this rank's own values are already in `data`
      for (int k = 0; k < 4; ++k) {
        const double w = static_cast<double>((hashes_[r] >> (16 * k)) & 0xffffu);
        data[static_cast<size_t>(2 * k)] += w;
        data[static_cast<size_t>(2 * k + 1)] += w * w;
      }
    }
  }
  void barrier() override {}

 private:
  std::vector<uint64_t> hashes_;
  int rank_;
};

// replicas_agree on every simulated rank: the verdicts, in rank order.
std::vector<bool> verdicts(const std::vector<uint64_t>& hashes) {
  std::vector<bool> out;
  for (int r = 0; r < static_cast<int>(hashes.size()); ++r) {
    SimulatedRanks comm(hashes, r);
    out.push_back(rt::replicas_agree(comm, hashes[static_cast<size_t>(r)]));
  }
  return out;
}

}  // namespace

TEST_CASE("replicas_agree: the same verdict on every rank; a difference in any 16-bit word is seen by all") {
  const uint64_t h = 0x0123456789abcdefull;
  CHECK(verdicts({h, h}) == std::vector<bool>{true, true});
  CHECK(verdicts({h, h, h, h, h}) == std::vector<bool>{true, true, true, true, true});
  CHECK(verdicts({h, h ^ 1}) == std::vector<bool>{false, false});                      // the lowest bit
  CHECK(verdicts({h, h, h ^ (1ull << 63)}) == std::vector<bool>{false, false, false});  // the highest, one rank of 3
  // Equal sums, different values (in word 0: 1 + 3 + 2 + 2 = 4·2): the squares tell them apart (18 ≠ 4·2²).
  CHECK(verdicts({1, 3, 2, 2}) == std::vector<bool>{false, false, false, false});
  CHECK(verdicts({0xffffffffffffffffull, 0xffffffffffffffffull}) == std::vector<bool>{true, true});  // no overflow
  SimulatedRanks one({h}, 0);
  CHECK(rt::replicas_agree(one, h));
}

TEST_CASE("require_replicas_agree: throws on every rank, naming what, the rank and its hash") {
  const std::vector<uint64_t> hashes = {5, 6};
  for (int r = 0; r < 2; ++r) {
    SimulatedRanks comm(hashes, r);
    std::string error;
    try {
      rt::require_replicas_agree(comm, hashes[static_cast<size_t>(r)], "the state after step 7");
    } catch (const std::runtime_error& e) {
      error = e.what();
    }
    CHECK_MESSAGE(error.find("data-parallel ranks diverged: the state after step 7 hashes to 0x000000000000000" +
                             std::to_string(5 + r) + " on rank " + std::to_string(r) + " of 2") != std::string::npos,
                  error);
  }
  SimulatedRanks same({9, 9}, 1);
  CHECK_NOTHROW(rt::require_replicas_agree(same, 9, "x"));
}
