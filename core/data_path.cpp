// core/data_path.cpp — the data root: $PTSIM_ROOT, the installed data of an installed binary (or of a
// process whose source tree is gone), or the source tree. PTSIM_INSTALL_BIN_DIR / PTSIM_INSTALL_DATA_DIR come from core/meson.build (prefix, bindir,
// datadir); PTSIM_SOURCE_DIR from the top-level meson.build.
#include "core/data_path.hpp"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <system_error>

namespace ptsim::core {

namespace {

// Whether this process runs the installed copy: /proc/self/exe is <prefix>/<bindir>/ptsim.
bool running_installed_binary() {
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return false;
  const std::filesystem::path installed_bin = std::filesystem::weakly_canonical(PTSIM_INSTALL_BIN_DIR, ec);
  return !ec && exe.parent_path() == installed_bin;
}

}  // namespace

std::string data_root() {
  const char* root = std::getenv("PTSIM_ROOT");
  if (root && *root) return root;
  // The Python module is loaded by python3, not by the installed binary: an installed module whose source
  // tree is gone reads the installed data too.
  static const std::string chosen =
      running_installed_binary() || !std::filesystem::is_directory(PTSIM_SOURCE_DIR "/reports/scenarios")
          ? PTSIM_INSTALL_DATA_DIR
          : PTSIM_SOURCE_DIR;
  return chosen;
}

}  // namespace ptsim::core
