// hwprofiles/profile_writer.cpp — see profile_writer.hpp.
#include "hwprofiles/profile_writer.hpp"

#include <fstream>
#include <nlohmann/json.hpp>

#include "core/atomic_file.hpp"
#include "core/error.hpp"

namespace ptsim::hwprofiles {

void write_quantities(const std::string& path, const std::vector<QuantityUpdate>& updates) {
  write_quantities(path, path, updates);
}

void write_quantities(const std::string& from_path, const std::string& to_path, const std::vector<QuantityUpdate>& updates) {
  std::ifstream in(from_path);
  if (!in) throw core::InputError(from_path + ": cannot read the profile to update");
  nlohmann::ordered_json j = nlohmann::ordered_json::parse(in, nullptr, false);
  if (!j.is_object()) throw core::InputError(from_path + ": not a JSON object; cannot store fitted values in it");
  for (const auto& u : updates) {
    nlohmann::ordered_json* at = &j;
    for (const auto& key : u.field) at = &(*at)[key];
    *at = {{"value", u.value}, {"unit", u.unit}, {"source", u.source}};
  }
  core::write_file_atomic(to_path, j.dump(2) + "\n", "profile");
}

}  // namespace ptsim::hwprofiles
