// reports/node_retarget.cpp — the stack and prices of a swapped-in node type (see the header).
#include "reports/node_retarget.hpp"

#include <fmt/format.h>

#include "reports/price_resolution.hpp"

namespace ptsim::reports {
namespace {

using hwprofiles::NodeProfile;
using hwprofiles::ProfileSet;

void retarget_stack(Scenario& s, const NodeProfile& node, const ProfileSet& profiles, std::vector<std::string>& notes) {
  if (s.stack.empty() || s.edits.names("recipe.stack")) return;
  if (hwprofiles::stack_fit_for(hwprofiles::find_stack(profiles, s.stack), node.gpu)) return;
  const std::string from = s.stack;
  s.stack = hwprofiles::default_stack_for(profiles, node.gpu);
  notes.push_back(fmt::format("stack {}: the scenario's {} has no values for GPU '{}' (node '{}'); its default stack "
                              "is used (pin one with --set recipe.stack=NAME)",
                              s.stack, from, node.gpu, node.name));
}

void retarget_price(const char* figure, std::string& named, Scenario& s, const NodeProfile& node,
                    const ProfileSet& profiles, std::vector<std::string>& notes) {
  if (named.empty() || s.edits.names(std::string("prices.") + figure)) return;
  const auto it = profiles.prices.find(named);
  if (it == profiles.prices.end() || price_applies_to(it->second, node)) return;  // unknown: resolve_prices names it
  const std::string set = s.prices.set.empty() ? kCurrentPriceSet : s.prices.set;
  std::string why;
  const auto chosen = swapped_in_price(figure, set, node, profiles, why);
  const std::string was = fmt::format("the scenario's {} price {} is for {} '{}'", figure, named,
                                      it->second.unit == "gpu_hour" ? "GPU" : "node", it->second.applies_to);
  named = chosen ? chosen->item.name : "";
  notes.push_back(chosen ? fmt::format("{} price {} ({}, {}): {}; node '{}' takes {} from {}", figure, named,
                                       chosen->item.price_set, chosen->item.date, was, node.name,
                                       chosen->how == "set" ? "its item" : "the newest item",
                                       chosen->how == "set" ? "price set " + set : "any price set")
                         : fmt::format("no {} price: {}; {}", figure, was, why));
}

}  // namespace

std::vector<std::string> retarget_to_node(Scenario& s, const ProfileSet& profiles) {
  std::vector<std::string> notes;
  if (!s.node_edited()) return notes;
  const NodeProfile& node = hwprofiles::find_node(profiles, s.node);
  retarget_stack(s, node, profiles, notes);
  retarget_price("rental", s.prices.rental, s, node, profiles, notes);
  retarget_price("spot", s.prices.spot, s, node, profiles, notes);
  retarget_price("purchase", s.prices.purchase, s, node, profiles, notes);
  return notes;
}

}  // namespace ptsim::reports
