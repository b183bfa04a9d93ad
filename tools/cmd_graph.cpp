// tools/cmd_graph.cpp — `ptsim graph` (placeholder until its issue lands: exits 1, says so).
#include <cstdio>

#include "tools/commands.hpp"

namespace ptsim::tools {

int run_graph_command(int, char**) {
  std::fputs("ptsim graph: not built yet\n", stderr);
  return 1;
}

}  // namespace ptsim::tools
