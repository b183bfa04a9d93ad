// hwprofiles/profile_json.hpp — every profile as JSON in SI units with the unit in the key (memory_bytes,
// latency_seconds): what `ptsim profiles list|show --format json` prints and `ptsim.profiles()` returns
// (docs/hwprofiles.md). Not here: the table layout (tools/cmd_profiles.cpp).
#pragma once
#include <string>

#include "core/json_reader.hpp"
#include "hwprofiles/profiles.hpp"

namespace ptsim::hwprofiles {

core::Json stack_json(const StackProfile& stack);
core::Json gpu_json(const GpuProfile& gpu);
core::Json node_json(const NodeProfile& node);
core::Json network_json(const NetworkProfile& network);
core::Json price_json(const PriceItem& price);
// {directory, gpus, stacks, nodes, networks, prices}: every profile of `set`, read from `dir`.
core::Json profiles_json(const ProfileSet& set, const std::string& dir);

}  // namespace ptsim::hwprofiles
