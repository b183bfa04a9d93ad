// core/data_path.hpp — where ptsim's shipped data lives (models/, hwprofiles/, reports/scenarios,
// calibration/data): $PTSIM_ROOT if set; else, for the binary `meson install` put in <prefix>/bin, the
// data it installed beside it (<prefix>/share/ptsim); else the source tree the binary was built from
// (PTSIM_SOURCE_DIR). core/data_path.cpp; the install rules are in the top-level meson.build.
#pragma once
#include <string>

namespace ptsim::core {

// The data root chosen as above, e.g. "/src/ptsim" or "/usr/local/share/ptsim".
std::string data_root();

// `relative` joined to the data root, e.g. data_path("models/specs") → "/src/ptsim/models/specs".
inline std::string data_path(const std::string& relative) { return data_root() + "/" + relative; }

}  // namespace ptsim::core
