// tests/support/bad_inputs.hpp — table-driven checks that a bad input is refused the way docs/cli.md
// promises: exit 2 (not a crash, not "internal error") and a message naming what was wrong.
#pragma once
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "tests/support/run_command.hpp"

namespace ptsim::test {

struct BadInput {
  std::string what;                   // the case, shown when it fails
  std::string args;                   // ptsim arguments
  std::vector<std::string> expected;  // substrings the message must contain (field, value, range)
};

inline void check_refused(const BadInput& c) {
  INFO("case: ", c.what, "\n  ptsim ", c.args);
  const CommandResult r = run_ptsim(c.args);
  INFO("output: ", r.output);
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("internal error") == std::string::npos);
  for (const auto& e : c.expected) {
    INFO("expected in the message: ", e);
    CHECK(r.output.find(e) != std::string::npos);
  }
}

inline void check_all_refused(const std::vector<BadInput>& cases) {
  for (const auto& c : cases) check_refused(c);
}

}  // namespace ptsim::test
