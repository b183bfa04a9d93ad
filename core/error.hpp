// core/error.hpp — the error types every ptsim module throws.
// InputError: the user's input (a file, a field, a flag) is wrong; the CLI prints it and exits 2.
// IoError: the system failed us (a write, fsync or rename failed: disk full, I/O error); exit 1.
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

// A system call on a file failed where the input was fine (disk full, I/O error, file-size limit). The
// message names the file and the system error; the CLI prints it as an error and exits 1.
class IoError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace ptsim::core
