// core/error.hpp — the error types every ptsim module throws.
// InputError: the user's input (a file, a field, a flag) is wrong; the CLI prints it and exits 2.
// InfeasibleError: an InputError that says the configuration is well-formed but cannot run as asked
// (does not fit memory, the GPU lacks the precision): a sweep records it as a reason and goes on.
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

// What kind of infeasibility; the sweep reports it per configuration (docs/sweep.md).
enum class Infeasibility { memory, precision, parallelism };

class InfeasibleError : public InputError {
 public:
  InfeasibleError(Infeasibility kind, const std::string& message, double over_bytes = 0)
      : InputError(message), kind_(kind), over_bytes_(over_bytes) {}
  Infeasibility kind() const { return kind_; }
  double over_bytes() const { return over_bytes_; }  // memory: needed − available

 private:
  Infeasibility kind_;
  double over_bytes_;
};

inline const char* to_string(Infeasibility kind) {
  switch (kind) {
    case Infeasibility::memory: return "memory";
    case Infeasibility::precision: return "precision";
    case Infeasibility::parallelism: return "parallelism";
  }
  return "?";
}

// A system call on a file failed where the input was fine (disk full, I/O error, file-size limit). The
// message names the file and the system error; the CLI prints it as an error and exits 1.
class IoError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace ptsim::core
