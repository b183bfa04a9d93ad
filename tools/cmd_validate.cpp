// tools/cmd_validate.cpp — `ptsim validate` (placeholder until its issue lands: exits 1, says so).
#include <cstdio>

#include "tools/commands.hpp"

namespace ptsim::tools {

int run_validate_command(int, char**) {
  std::fputs("ptsim validate: not built yet\n", stderr);
  return 1;
}

}  // namespace ptsim::tools
