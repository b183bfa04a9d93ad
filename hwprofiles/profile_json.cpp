// hwprofiles/profile_json.cpp — profiles as JSON (SI units, the unit in the key); see the header.
#include "hwprofiles/profile_json.hpp"

namespace ptsim::hwprofiles {

using core::Json;

Json stack_json(const StackProfile& s) {
  Json fits = Json::object();
  for (const auto& [family, f] : s.fits)
    fits[family] = Json{{"gpus", f.gpus},
                        {"fitted_on", f.fitted_on},
                        {"held_out", f.held_out},
                        {"kernel_launch_seconds", f.kernel_launch_seconds},
                        {"memory_efficiency", f.memory_efficiency},
                        {"gemm_max_efficiency", f.gemm_max_efficiency},
                        {"batched_gemm_max_efficiency", f.batched_gemm_max_efficiency},
                        {"sources", f.sources}};
  return Json{{"kind", "stack"}, {"name", s.name}, {"description", s.description}, {"source", s.source},
              {"fuses", s.fuses}, {"fits", fits}};
}

Json gpu_json(const GpuProfile& g) {
  return Json{{"kind", "gpu"},
              {"name", g.name},
              {"description", g.description},
              {"memory_bytes", g.memory_bytes},
              {"memory_bandwidth_bytes_per_second", g.memory_bandwidth_bytes_per_second},
              {"peak_fp32_flops_per_second", g.peak_fp32_flops_per_second},
              {"peak_tf32_flops_per_second", g.peak_tf32_flops_per_second},
              {"peak_fp16_tensor_flops_per_second", g.peak_fp16_tensor_flops_per_second},
              {"peak_bf16_tensor_flops_per_second", g.peak_bf16_tensor_flops_per_second},
              {"peak_fp8_tensor_flops_per_second", g.peak_fp8_tensor_flops_per_second},
              {"sustained_clock_fraction", g.sustained_clock_fraction},
              {"gemm_half_size_flops", g.gemm.half_size},
              {"batched_gemm_half_size_flops", g.batched_gemm.half_size},
              {"memory_bound_half_size_bytes", g.memory_bound.half_size},
              {"reserved_memory_bytes", g.reserved_memory_bytes},
              {"power_watts", g.power_watts},
              {"pcie_generation", g.pcie_generation},
              {"sources", g.sources}};
}

Json node_json(const NodeProfile& n) {
  return Json{{"kind", "node"},
              {"name", n.name},
              {"description", n.description},
              {"gpu", n.gpu},
              {"gpus_per_node", n.gpus_per_node},
              {"topology", to_string(n.topology)},
              {"nvlink_bytes_per_second", n.nvlink_bytes_per_second},
              {"nvlink_links_per_gpu", n.nvlink_links_per_gpu},
              {"gpus_per_pcie_switch", n.gpus_per_pcie_switch},
              {"pcie_link_bytes_per_second", n.pcie_link_bytes_per_second},
              {"pcie_host_bridge_bytes_per_second", n.pcie_host_bridge_bytes_per_second},
              {"intra_node_latency_seconds", n.intra_node_latency_seconds},
              {"nics_per_node", n.nics_per_node},
              {"default_network", n.default_network},
              {"power_watts", n.power_watts},
              {"purchase_usd", n.purchase_usd},
              {"sources", n.sources}};
}

Json network_json(const NetworkProfile& n) {
  return Json{{"kind", "network"},
              {"name", n.name},
              {"description", n.description},
              {"link_bytes_per_second", n.link_bytes_per_second},
              {"transport", to_string(n.transport)},
              {"achieved_fraction", n.achieved_fraction},
              {"latency_seconds", n.latency_seconds},
              {"per_flow_bytes_per_second", n.per_flow_bytes_per_second},
              {"sockets_per_connection", n.sockets_per_connection},
              {"host_staging", n.host_staging},
              {"switch_port_usd", n.switch_port_usd},
              {"sources", n.sources}};
}

Json price_json(const PriceItem& p) {
  Json j{{"kind", "price"}, {"name", p.name}, {"unit", p.unit}, {"usd", p.usd}};
  if (p.unit == "pue") j["ratio"] = p.ratio;
  j["applies_to"] = p.applies_to;
  j["price_kind"] = p.kind;  // "kind" already says what sort of profile this is
  j["date"] = p.date;
  j["price_set"] = p.price_set;
  j["source"] = p.source;
  return j;
}

Json profiles_json(const ProfileSet& set, const std::string& dir) {
  Json out{{"directory", dir}, {"gpus", Json::array()}, {"stacks", Json::array()}, {"nodes", Json::array()},
           {"networks", Json::array()}, {"prices", Json::array()}};
  for (const auto& [_, g] : set.gpus) out["gpus"].push_back(gpu_json(g));
  for (const auto& [_, s] : set.stacks) out["stacks"].push_back(stack_json(s));
  for (const auto& [_, n] : set.nodes) out["nodes"].push_back(node_json(n));
  for (const auto& [_, n] : set.networks) out["networks"].push_back(network_json(n));
  for (const auto& [_, p] : set.prices) out["prices"].push_back(price_json(p));
  return out;
}

}  // namespace ptsim::hwprofiles
