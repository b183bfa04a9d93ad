// tools/cmd_profiles.cpp — `ptsim profiles` (placeholder until its issue lands: exits 1, says so).
#include <cstdio>

#include "tools/commands.hpp"

namespace ptsim::tools {

int run_profiles_command(int, char**) {
  std::fputs("ptsim profiles: not built yet\n", stderr);
  return 1;
}

}  // namespace ptsim::tools
