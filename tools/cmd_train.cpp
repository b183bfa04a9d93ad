// tools/cmd_train.cpp — `ptsim train` (placeholder until its issue lands: exits 1, says so).
#include <cstdio>

#include "tools/commands.hpp"

namespace ptsim::tools {

int run_train_command(int, char**) {
  std::fputs("ptsim train: not built yet\n", stderr);
  return 1;
}

}  // namespace ptsim::tools
