// reports/price_resolution.hpp — which price items pay for a scenario's run: the ones it names under
// `prices`, else (with `prices.set`) the set's items for its node or GPU (docs/cost-model.md "Price sets").
// One function, used by predict and by sweeps; missing or ambiguous figures are reported, not thrown,
// so a sweep can list "no price known" as a reason instead of stopping.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "hwprofiles/profiles.hpp"
#include "reports/scenario.hpp"

namespace ptsim::reports {

// One figure's price and how it was chosen.
struct ChosenPrice {
  hwprofiles::PriceItem item;
  std::string how;  // "named" (prices.<figure>), "set" (prices.set), "node" (the node's listed purchase price)
};

struct PriceResolution {
  std::optional<ChosenPrice> rental;    // on-demand rental
  std::optional<ChosenPrice> spot;
  std::optional<ChosenPrice> purchase;  // the node's purchase price
  std::optional<ChosenPrice> electricity;
  std::optional<ChosenPrice> pue;
  // Figures ("rental", "spot", "purchase") that prices.set has no item for: no figure, not an error.
  std::vector<std::string> missing;
  // Figures for which prices.set has two or more items at the same level: figure -> the candidates.
  std::map<std::string, std::vector<std::string>> ambiguous;
  std::vector<std::string> notes;       // one line per missing or ambiguous figure, for people
};

// Resolves the scenario's prices for `node` (the node profile as listed, before any gpus_per_node cut).
// With prices.set = S, each of rental / spot / purchase that is not named explicitly is looked up in S:
// the S item of kind on_demand / spot / purchase whose applies_to is the node (instance_hour, purchase),
// else — for rental and spot — the one whose applies_to is the node's GPU (gpu_hour). A purchase S lacks
// falls back to the node's listed purchase price, as without a set.
// Throws core::InputError (exit 2) for: a named item that does not exist, has the wrong unit for its
// figure, or applies to another node or GPU than the scenario's (the message names both); an unknown set.
PriceResolution resolve_prices(const Scenario& scenario, const hwprofiles::NodeProfile& node,
                               const hwprofiles::ProfileSet& profiles);

// Whether `item` pays for `node`: a GPU-hour price of the node's GPU, an instance-hour or purchase price of the
// node itself (electricity and PUE apply to every node).
bool price_applies_to(const hwprofiles::PriceItem& item, const hwprofiles::NodeProfile& node);

// The price set a node type swapped in by a what-if takes its prices from when the scenario names none: the
// one set that prices every current GPU node type (A100 40/80 GB, H100, H200) from one provider
// (docs/cost-model.md "Prices of a swapped-in node type").
inline constexpr const char* kCurrentPriceSet = "aws-current";

// The price of `figure` (rental | spot | purchase) for `node` swapped in by a what-if: `set`'s item for the
// node (instance_hour, purchase) or its GPU (gpu_hour); else the newest-dated such item of any set. nullopt,
// with the reason in `why`, when there is none or several equally new ones.
std::optional<ChosenPrice> swapped_in_price(const std::string& figure, const std::string& set,
                                            const hwprofiles::NodeProfile& node, const hwprofiles::ProfileSet& profiles,
                                            std::string& why);

// Throws core::InputError naming the candidates when `r` has an ambiguous figure (predict's policy:
// the user must pick one with --set prices.<figure>=ITEM).
void require_unambiguous(const PriceResolution& r, const Scenario& scenario);

}  // namespace ptsim::reports
