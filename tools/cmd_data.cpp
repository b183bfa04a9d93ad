// tools/cmd_data.cpp — `ptsim data` (placeholder until its issue lands: exits 1, says so).
#include <cstdio>

#include "tools/commands.hpp"

namespace ptsim::tools {

int run_data_command(int, char**) {
  std::fputs("ptsim data: not built yet\n", stderr);
  return 1;
}

}  // namespace ptsim::tools
