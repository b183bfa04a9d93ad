// tests/core/test_machine_memory.cpp — the up-front memory checks (core/machine_memory.hpp): the message
// names what needs how much and which memory has how much, for the host (MemAvailable) and for a device
// memory the caller measured (a GPU's cudaMemGetInfo, which needs a GPU: here given as a number).
#include <doctest/doctest.h>

#include <limits>
#include <string>

#include "core/error.hpp"
#include "core/machine_memory.hpp"

using ptsim::core::InputError;
using ptsim::core::require_memory;

TEST_CASE("require_memory: passes at or under the available bytes, refuses above with both numbers and the device") {
  CHECK_NOTHROW(require_memory(1000.0, 1000, "GPU 0 (test)", "cudaMemGetInfo", "train", "use less"));
  std::string message;
  try {
    require_memory(3.0 * 1024 * 1024 * 1024, 2ull * 1024 * 1024 * 1024, "GPU 1 (NVIDIA H200)", "cudaMemGetInfo",
                   "ptsim train: bert-large", "use a smaller --micro-batch");
  } catch (const InputError& e) {
    message = e.what();
  }
  CHECK(message.find("ptsim train: bert-large needs 3221225472 bytes (3.00 GiB)") != std::string::npos);
  CHECK(message.find("GPU 1 (NVIDIA H200) has 2147483648 bytes (2.00 GiB) available (cudaMemGetInfo)") != std::string::npos);
  CHECK(message.find("use a smaller --micro-batch") != std::string::npos);
}

TEST_CASE("require_memory: a non-finite need (an overflowed size) is refused, never let through") {
  CHECK_THROWS_AS(require_memory(std::numeric_limits<double>::infinity(), 1ull << 40, "this machine", "test", "x", "y"), InputError);
}
