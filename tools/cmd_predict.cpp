// tools/cmd_predict.cpp — `ptsim predict` (placeholder until its issue lands: exits 1, says so).
#include <cstdio>

#include "tools/commands.hpp"

namespace ptsim::tools {

int run_predict_command(int, char**) {
  std::fputs("ptsim predict: not built yet\n", stderr);
  return 1;
}

}  // namespace ptsim::tools
