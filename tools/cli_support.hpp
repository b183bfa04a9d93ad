// tools/cli_support.hpp — CLI11 parsing with ptsim's exit-code contract.
// parse_or_exit: --help prints and returns the exit code 0 through `exit_code`; a bad flag becomes an
// InputError (exit 2) whose message names the flag and what was expected.
#pragma once
#include <CLI/CLI.hpp>
#include <optional>

#include "core/error.hpp"

namespace ptsim::tools {

// Returns an exit code to return immediately (0 for --help), or nullopt to continue.
inline std::optional<int> parse_or_exit(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    std::fputs(app.help().c_str(), stdout);
    return 0;
  } catch (const CLI::CallForAllHelp&) {
    std::fputs(app.help("", CLI::AppFormatMode::All).c_str(), stdout);
    return 0;
  } catch (const CLI::ParseError& e) {
    throw core::InputError(std::string("ptsim ") + app.get_name() + ": " + e.what() +
                           " (run 'ptsim " + app.get_name() + " --help' for the flags)");
  }
  return std::nullopt;
}

}  // namespace ptsim::tools
