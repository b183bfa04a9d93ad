// sim/cost_model.hpp — dollars for a run: rental (on-demand and spot, per GPU-hour or instance-hour)
// and ownership (purchase amortised over a lifetime + energy × PUE), side by side, with break-even.
#pragma once
#include <optional>
#include <string>

#include "hwprofiles/profiles.hpp"

namespace ptsim::sim {

struct CostInputs {
  int nodes = 1;
  int gpus_per_node = 1;
  double hours = 0;                         // wall-clock hours of the run
  std::optional<hwprofiles::PriceItem> rental;  // gpu_hour or instance_hour
  std::optional<hwprofiles::PriceItem> spot;    // same units; preemption adds time
  double spot_preemption_overhead = 0.1;    // extra fraction of time lost to preemptions and restarts on spot
  double node_purchase_usd = 0;             // per node (0 = unknown: no ownership figures)
  double network_purchase_usd_per_node = 0; // NICs, switch ports, cables (0 when included in the node price)
  double amortisation_years = 3;
  double node_power_watts = 0;
  double usd_per_kwh = 0;
  double pue = 1;
};

struct CostEstimate {
  std::optional<double> rental_usd;
  std::optional<double> rental_usd_per_hour;  // the whole cluster
  std::optional<double> spot_usd;
  std::optional<double> purchase_usd;       // capital cost of the cluster
  std::optional<double> ownership_usd;      // amortised share of the purchase for this run + energy
  std::optional<double> energy_usd;
  std::optional<double> break_even_days;    // days of use after which owning beats renting on demand
  std::string rental_basis;                 // e.g. "256 GPUs × 288.0 h × $0.349/GPU-hour"
};

// Throws core::InputError for a price in a unit that cannot pay for GPU time (e.g. "kwh" as rental).
CostEstimate estimate_cost(const CostInputs& in);

}  // namespace ptsim::sim
