// hwprofiles/profile_writer.hpp — writes quantities ({"value", "unit", "source"}) into a profile file
// (gpus/*.json, stacks/*.json), beside the loader that reads them (profiles.hpp). Used by calibration to
// store fitted values with their provenance; the rest of the file is kept as it was, key order included.
// Not here: what to fit or why (calibration/).
#pragma once
#include <string>
#include <vector>

namespace ptsim::hwprofiles {

// One quantity to store: `field` is its path in the file, e.g. {"gemm", "max_efficiency"}.
struct QuantityUpdate {
  std::vector<std::string> field;
  double value = 0;
  std::string unit;
  std::string source;
};

// Replaces (or adds) each quantity in the JSON file at `path`, written atomically; throws
// core::InputError when the file cannot be read or is not a JSON object.
void write_quantities(const std::string& path, const std::vector<QuantityUpdate>& updates);
// The same, reading the profile at `from_path` and writing the updated copy to `to_path` (a new profile
// derived from a shipped one, e.g. a network fitted to a user's benchmark); `from_path` is not changed.
void write_quantities(const std::string& from_path, const std::string& to_path, const std::vector<QuantityUpdate>& updates);

}  // namespace ptsim::hwprofiles
