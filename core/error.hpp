// core/error.hpp — the error types every ptsim module throws.
// InputError: the user's input (a file, a field, a flag) is wrong; the CLI prints it and exits 2.
// Anything else that escapes is an internal failure: exit 1.
#pragma once
#include <stdexcept>
#include <string>

namespace ptsim::core {

// Bad input the user can fix. The message must name what was wrong and what was expected.
class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace ptsim::core
