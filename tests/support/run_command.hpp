// tests/support/run_command.hpp — run a shell command (or the built `ptsim` binary) from a test and capture
// its output.
// PTSIM_BINARY is set by tests/meson.build to the path of the built executable.
#pragma once
#include <array>
#include <cstdio>
#include <string>
#include <sys/wait.h>

namespace ptsim::test {

struct CommandResult {
  int exit_code = -1;
  std::string output;
};

// Runs `command` through the shell; `output` is its standard output (append 2>&1 for stderr too).
inline CommandResult run_command(const std::string& command) {
  CommandResult result;
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return result;
  std::array<char, 4096> buffer{};
  size_t n = 0;
  while ((n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0) result.output.append(buffer.data(), n);
  int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

// `args` is appended to the binary path verbatim (quote what needs quoting); `env` ("NAME=value …", for
// the shell) goes before it. Output is stdout and stderr together.
inline CommandResult run_ptsim(const std::string& args, const std::string& env = "") {
  return run_command((env.empty() ? "" : env + " ") + std::string(PTSIM_BINARY) + " " + args + " 2>&1");
}

}  // namespace ptsim::test
