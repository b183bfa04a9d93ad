// sim/cost_model.cpp — rental vs ownership arithmetic (docs/cost-model.md).
#include "sim/cost_model.hpp"

#include <fmt/format.h>

#include "core/error.hpp"

namespace ptsim::sim {
namespace {

// USD per wall-clock hour for the whole cluster under a rental price.
double cluster_usd_per_hour(const hwprofiles::PriceItem& price, int nodes, int gpus_per_node) {
  if (price.unit == "gpu_hour") return price.usd * nodes * gpus_per_node;
  if (price.unit == "instance_hour") return price.usd * nodes;
  throw core::InputError(fmt::format("price '{}' is per '{}': a rental price must be per gpu_hour or instance_hour",
                                     price.name, price.unit));
}

}  // namespace

CostEstimate estimate_cost(const CostInputs& in) {
  CostEstimate out;
  const double gpus = static_cast<double>(in.nodes) * in.gpus_per_node;
  if (in.rental) {
    double per_hour = cluster_usd_per_hour(*in.rental, in.nodes, in.gpus_per_node);
    out.rental_usd = per_hour * in.hours;
    out.rental_usd_per_hour = per_hour;
    out.rental_basis = in.rental->unit == "gpu_hour"
                           ? fmt::format("{:.0f} GPUs × {:.1f} h × ${}/GPU-hour", gpus, in.hours, in.rental->usd)
                           : fmt::format("{} instances × {:.1f} h × ${}/instance-hour", in.nodes, in.hours, in.rental->usd);
  }
  if (in.spot) {
    out.spot_usd = cluster_usd_per_hour(*in.spot, in.nodes, in.gpus_per_node) * in.hours * (1 + in.spot_preemption_overhead);
  }
  const double energy_per_hour = in.node_power_watts * in.nodes / 1000.0 * in.pue * in.usd_per_kwh;
  if (in.node_power_watts > 0 && in.usd_per_kwh > 0) out.energy_usd = energy_per_hour * in.hours;
  if (in.node_purchase_usd > 0) {
    const double capital = (in.node_purchase_usd + in.network_purchase_usd_per_node) * in.nodes;
    out.purchase_usd = capital;
    const double lifetime_hours = in.amortisation_years * 365.0 * 24.0;
    out.ownership_usd = capital * in.hours / lifetime_hours + out.energy_usd.value_or(0);
    if (in.rental) {
      const double rental_per_hour = cluster_usd_per_hour(*in.rental, in.nodes, in.gpus_per_node);
      if (rental_per_hour > energy_per_hour) out.break_even_days = capital / (rental_per_hour - energy_per_hour) / 24.0;
    }
  }
  return out;
}

}  // namespace ptsim::sim
