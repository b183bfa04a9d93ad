// core/data_path.hpp — where ptsim's shipped data lives (models/, hwprofiles/, reports/…): $PTSIM_ROOT if
// set, else the source tree the binary was built from (PTSIM_SOURCE_DIR, set by meson.build).
#pragma once
#include <cstdlib>
#include <string>

namespace ptsim::core {

// `relative` joined to the data root, e.g. data_path("models") → "/src/ptsim/models".
inline std::string data_path(const std::string& relative) {
  const char* root = std::getenv("PTSIM_ROOT");
  return std::string(root && *root ? root : PTSIM_SOURCE_DIR) + "/" + relative;
}

}  // namespace ptsim::core
