// reports/price_resolution.cpp — named prices are checked against the scenario's node; the others come
// from the scenario's price set (docs/cost-model.md "Price sets").
#include "reports/price_resolution.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.hpp"

namespace ptsim::reports {
namespace {

using hwprofiles::NodeProfile;
using hwprofiles::PriceItem;
using hwprofiles::ProfileSet;

std::vector<std::string> names_of(const std::map<std::string, PriceItem>& prices) {
  std::vector<std::string> names;
  for (const auto& [name, _] : prices) names.push_back(name);
  return names;
}

// The units a figure can be paid in.
std::vector<std::string> units_for(const std::string& figure) {
  if (figure == "rental" || figure == "spot") return {"gpu_hour", "instance_hour"};
  if (figure == "purchase") return {"purchase"};
  if (figure == "electricity") return {"kwh"};
  return {"pue"};
}

// A price named under prices.<figure>: it must exist, be in a unit that pays for that figure and —
// for hardware prices — apply to the scenario's node (instance_hour, purchase) or its GPU (gpu_hour).
ChosenPrice named_price(const std::string& file, const std::string& figure, const std::string& name,
                        const NodeProfile& node, const ProfileSet& profiles) {
  auto it = profiles.prices.find(name);
  if (it == profiles.prices.end())
    throw core::InputError(fmt::format("{}: field 'prices.{}': unknown price '{}' (expected one of: {})", file, figure,
                                       name, fmt::join(names_of(profiles.prices), ", ")));
  const PriceItem& item = it->second;
  const std::vector<std::string> units = units_for(figure);
  if (std::find(units.begin(), units.end(), item.unit) == units.end())
    throw core::InputError(fmt::format("{}: field 'prices.{}': price '{}' is per '{}', expected a price per {}",
                                       file, figure, name, item.unit, fmt::join(units, " or ")));
  if (price_applies_to(item, node)) return {item, "named"};
  if (item.unit == "gpu_hour")
    throw core::InputError(fmt::format("{}: field 'prices.{}': price '{}' applies to GPU '{}', but the "
                                       "scenario's node '{}' has GPU '{}'",
                                       file, figure, name, item.applies_to, node.name, node.gpu));
  throw core::InputError(fmt::format("{}: field 'prices.{}': price '{}' applies to node '{}', but the "
                                     "scenario's node is '{}'",
                                     file, figure, name, item.applies_to, node.name));
}

// The set's items of `kind` in `unit` that apply to `target` (any set's when `set` is empty).
std::vector<const PriceItem*> set_items(const ProfileSet& profiles, const std::string& set, const std::string& kind,
                                        const std::string& unit, const std::string& target) {
  std::vector<const PriceItem*> found;
  for (const auto& [_, item] : profiles.prices)
    if ((set.empty() || item.price_set == set) && item.kind == kind && item.unit == unit && item.applies_to == target)
      found.push_back(&item);
  return found;
}

// The items of `set` (any set's when empty) that price `figure` for `node`: the node's own (an instance, the
// server) first, then for hourly figures its GPU's.
std::vector<const PriceItem*> figure_items(const std::string& figure, const std::string& set, const NodeProfile& node,
                                           const ProfileSet& profiles) {
  const bool hourly = figure != "purchase";
  const std::string kind = figure == "rental" ? "on_demand" : figure;
  std::vector<const PriceItem*> found = set_items(profiles, set, kind, hourly ? "instance_hour" : "purchase", node.name);
  if (found.empty() && hourly) found = set_items(profiles, set, kind, "gpu_hour", node.gpu);
  return found;
}

std::vector<std::string> item_names(const std::vector<const PriceItem*>& items) {
  std::vector<std::string> names;
  for (const PriceItem* p : items) names.push_back(p->name);
  return names;
}

// The node's listed purchase price (load_profiles allows at most one), as every scenario had before sets.
std::optional<ChosenPrice> listed_purchase(const NodeProfile& node, const ProfileSet& profiles) {
  for (const auto& [_, item] : profiles.prices)
    if (item.unit == "purchase" && item.applies_to == node.name) return ChosenPrice{item, "node"};
  return std::nullopt;
}

// Looks `figure` up in the scenario's set: the node's own price first (an instance or the server), then,
// for hourly figures, the GPU's. Records an ambiguous figure — and a missing one unless `fallback` stands
// in for it — in `out`; returns the set's item, else `fallback`.
std::optional<ChosenPrice> set_price(const std::string& figure, const std::string& set, const NodeProfile& node,
                                     const ProfileSet& profiles, const std::optional<ChosenPrice>& fallback,
                                     PriceResolution& out) {
  const bool hourly = figure != "purchase";
  const std::string kind = figure == "rental" ? "on_demand" : figure;
  const std::vector<const PriceItem*> found = figure_items(figure, set, node, profiles);
  if (found.size() == 1) return ChosenPrice{*found.front(), "set"};
  if (found.empty()) {
    if (fallback) return fallback;
    out.missing.push_back(figure);
    out.notes.push_back(hourly ? fmt::format("price set '{}' has no {} price for node '{}' or its GPU '{}': no {} figure",
                                             set, kind, node.name, node.gpu, figure)
                               : fmt::format("price set '{}' has no purchase price for node '{}'", set, node.name));
    return std::nullopt;
  }
  const std::vector<std::string> names = item_names(found);
  out.ambiguous[figure] = names;
  out.notes.push_back(fmt::format("price set '{}' has {} {} prices for {} '{}' ({}): name one with prices.{}=ITEM", set,
                                  names.size(), kind, found.front()->unit == "gpu_hour" ? "GPU" : "node",
                                  found.front()->applies_to, fmt::join(names, ", "), figure));
  return std::nullopt;
}

}  // namespace

PriceResolution resolve_prices(const Scenario& s, const NodeProfile& node, const ProfileSet& profiles) {
  const PriceChoice& p = s.prices;
  if (!p.set.empty() && !profiles.price_sets.count(p.set)) {
    std::vector<std::string> sets;
    for (const auto& [name, _] : profiles.price_sets) sets.push_back(name);
    throw core::InputError(fmt::format("{}: field 'prices.set': unknown price set '{}' (expected one of: {})",
                                       s.file, p.set, fmt::join(sets, ", ")));
  }
  PriceResolution out;
  // Without a purchase price of its own choosing, a scenario uses the node's listed one.
  auto resolve = [&](const std::string& figure, const std::string& named,
                     const std::optional<ChosenPrice>& fallback) -> std::optional<ChosenPrice> {
    if (!named.empty()) return named_price(s.file, figure, named, node, profiles);
    if (!p.set.empty()) return set_price(figure, p.set, node, profiles, fallback, out);
    return fallback;
  };
  out.rental = resolve("rental", p.rental, std::nullopt);
  out.spot = resolve("spot", p.spot, std::nullopt);
  out.purchase = resolve("purchase", p.purchase, listed_purchase(node, profiles));
  if (!p.electricity.empty()) out.electricity = named_price(s.file, "electricity", p.electricity, node, profiles);
  if (!p.pue.empty()) out.pue = named_price(s.file, "pue", p.pue, node, profiles);
  return out;
}

bool price_applies_to(const PriceItem& item, const NodeProfile& node) {
  if (item.unit == "gpu_hour") return item.applies_to == node.gpu;
  if (item.unit == "instance_hour" || item.unit == "purchase") return item.applies_to == node.name;
  return true;
}

std::optional<ChosenPrice> swapped_in_price(const std::string& figure, const std::string& set, const NodeProfile& node,
                                            const ProfileSet& profiles, std::string& why) {
  std::vector<const PriceItem*> found = figure_items(figure, set, node, profiles);
  if (found.size() == 1) return ChosenPrice{*found.front(), "set"};
  const bool in_set = !found.empty();
  if (!in_set) found = figure_items(figure, "", node, profiles);
  std::string newest_date;
  for (const PriceItem* p : found) newest_date = std::max(newest_date, p->date);
  std::vector<const PriceItem*> tied;
  for (const PriceItem* p : found)
    if (p->date == newest_date) tied.push_back(p);
  if (tied.size() == 1) return ChosenPrice{*tied.front(), in_set ? "set" : "newest"};
  const std::string target = figure == "purchase" ? fmt::format("node '{}'", node.name)
                                                  : fmt::format("node '{}' or its GPU '{}'", node.name, node.gpu);
  const std::string where = in_set ? "price set '" + set + "'" : "the price sets";
  why = found.empty() ? fmt::format("no price set has a {} price for {}", figure, target)
                      : fmt::format("{} has {} equally new {} prices for {} ({}): none chosen", where, tied.size(),
                                    figure, target, fmt::join(item_names(tied), ", "));
  return std::nullopt;
}

void require_unambiguous(const PriceResolution& r, const Scenario& s) {
  if (r.ambiguous.empty()) return;
  std::vector<std::string> lines;
  for (const auto& note : r.notes)
    if (note.find("name one with") != std::string::npos) lines.push_back(note);
  throw core::InputError(fmt::format("{}: field 'prices.set': {}", s.file, fmt::join(lines, "; ")));
}

}  // namespace ptsim::reports
