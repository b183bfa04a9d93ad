// reports/node_retarget.hpp — a what-if that swaps a scenario's node type keeps working: the stack and the
// prices the scenario file named for its own node give way to the new node's, and each substitution is said
// in one line (docs/sweep.md "Node-type what-ifs"). What an edit named (--set, --vary, a request's "set") is
// the user's own choice and is left as it is, to apply or fail.
#pragma once
#include <string>
#include <vector>

#include "hwprofiles/profiles.hpp"
#include "reports/scenario.hpp"

namespace ptsim::reports {

// When s.node_edited(): a stack from the file with no values for the new GPU becomes that GPU's default
// stack; a rental, spot or purchase price from the file for another node or GPU becomes the new node's
// (reports/price_resolution.hpp, swapped_in_price), or none. Returns one note per substitution; does nothing
// (and returns none) otherwise, so calling it twice changes nothing the second time.
std::vector<std::string> retarget_to_node(Scenario& s, const hwprofiles::ProfileSet& profiles);

}  // namespace ptsim::reports
