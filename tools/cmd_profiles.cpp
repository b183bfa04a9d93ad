// tools/cmd_profiles.cpp — `ptsim profiles list|show`: the hardware, network and price profiles as loaded
// and validated by hwprofiles/ (so a profile that prints here is one the simulator accepts).
//   ptsim profiles list [--format table|json] [--dir DIR]       one line per profile, key figures
//   ptsim profiles show NAME [--format table|json] [--dir DIR]  every field with its unit and source
// JSON output uses SI units with the unit in the key (memory_bytes, latency_seconds); format in
// docs/hwprofiles.md. Not here: loading rules and validation (hwprofiles/profiles.cpp).
#include <fmt/format.h>

#include <cstdio>
#include <string>
#include <vector>

#include "core/json_reader.hpp"       // defines: Json, InputError
#include "hwprofiles/profile_json.hpp"  // defines: gpu_json, node_json, …, profiles_json
#include "hwprofiles/profiles.hpp"    // defines: ProfileSet, load_profiles, find_*
#include "tools/cli_support.hpp"      // defines: parse_or_exit
#include "tools/commands.hpp"

namespace ptsim::tools {

namespace {

using core::Json;
using namespace ptsim::hwprofiles;

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// ---------------------------------------------------------------- table helpers

std::string fmt_num(double x) { return fmt::format("{:.4g}", x); }
std::string fmt_usd(double x) { return x > 0 ? fmt::format("${:.0f}", x) : std::string("-"); }
std::string fmt_usd_exact(double x) { return fmt::format("${}", x); }  // shortest exact form: $31.212

struct Row {
  std::string field;
  std::string value;
  std::string source_key;  // key into the profile's sources ("" = none)
};

void print_rows(const std::vector<Row>& rows, const std::map<std::string, std::string>& sources) {
  size_t field_w = 5, value_w = 5;
  for (const auto& r : rows) {
    field_w = std::max(field_w, r.field.size());
    value_w = std::max(value_w, r.value.size());
  }
  fmt::print("  {:<{}}  {:<{}}  {}\n", "field", field_w, "value", value_w, "source");
  for (const auto& r : rows) {
    auto it = sources.find(r.source_key);
    fmt::print("  {:<{}}  {:<{}}  {}\n", r.field, field_w, r.value, value_w,
               it == sources.end() ? std::string("-") : it->second);
  }
}

void show_gpu(const GpuProfile& g, const std::string& dir) {
  fmt::print("gpu {} — {}\nfile: {}/gpus/{}.json\n\n", g.name, g.description, dir, g.name);
  auto tf = [](double flops) { return flops > 0 ? fmt_num(flops / 1e12) + " TFLOP/s" : std::string("none"); };
  std::vector<Row> rows = {
      {"memory", fmt_num(g.memory_bytes / kGiB) + " GiB", "memory"},
      {"memory_bandwidth", fmt_num(g.memory_bandwidth_bytes_per_second / 1e9) + " GB/s", "memory_bandwidth"},
      {"peak_fp32", tf(g.peak_fp32_flops_per_second), "peak_fp32"},
      {"peak_tf32", tf(g.peak_tf32_flops_per_second), "peak_tf32"},
      {"peak_fp16_tensor", tf(g.peak_fp16_tensor_flops_per_second), "peak_fp16_tensor"},
      {"peak_bf16_tensor", tf(g.peak_bf16_tensor_flops_per_second), "peak_bf16_tensor"},
      {"peak_fp8_tensor", tf(g.peak_fp8_tensor_flops_per_second), "peak_fp8_tensor"},
      {"sustained_clock_fraction", fmt_num(g.sustained_clock_fraction), "sustained_clock_fraction"},
      {"gemm.half_size", fmt_num(g.gemm.half_size / 1e9) + " GFLOP", "gemm.half_size"},
      {"batched_gemm.half_size", fmt_num(g.batched_gemm.half_size / 1e9) + " GFLOP", "batched_gemm.half_size"},
      {"memory_bound.half_size", fmt_num(g.memory_bound.half_size / 1e6) + " MB", "memory_bound.half_size"},
      {"reserved_memory", fmt_num(g.reserved_memory_bytes / kGiB) + " GiB", "reserved_memory"},
      {"power", fmt_num(g.power_watts) + " W", "power"},
      {"pcie_generation", g.pcie_generation, ""},
  };
  print_rows(rows, g.sources);
}

void show_stack(const StackProfile& s, const std::string& dir) {
  fmt::print("stack {} — {}\nfile: {}/stacks/{}.json\nsource: {}\nfuses: {}\n", s.name, s.description, dir, s.name,
             s.source, s.fuses.empty() ? std::string("nothing") : fmt::format("{}", fmt::join(s.fuses, ", ")));
  for (const auto& [family, f] : s.fits) {
    fmt::print("\nfamily {} (GPUs: {}); fitted on: {}; held out: {}\n", family, fmt::join(f.gpus, ", "),
               f.fitted_on.empty() ? std::string("nothing (estimates)") : fmt::format("{}", fmt::join(f.fitted_on, ", ")),
               f.held_out.empty() ? std::string("none") : fmt::format("{}", fmt::join(f.held_out, ", ")));
    std::vector<Row> rows = {
        {"kernel_launch_overhead", fmt_num(f.kernel_launch_seconds * 1e6) + " us", "kernel_launch_overhead"},
        {"memory_efficiency", fmt_num(f.memory_efficiency), "memory_efficiency"},
        {"gemm_max_efficiency", fmt_num(f.gemm_max_efficiency), "gemm_max_efficiency"},
        {"batched_gemm_max_efficiency", fmt_num(f.batched_gemm_max_efficiency), "batched_gemm_max_efficiency"},
    };
    print_rows(rows, f.sources);
  }
}

void show_node(const NodeProfile& n, const std::string& dir) {
  fmt::print("node {} — {}\nfile: {}/nodes/{}.json\n\n", n.name, n.description, dir, n.name);
  auto gbs = [](double b) { return b > 0 ? fmt_num(b / 1e9) + " GB/s" : std::string("-"); };
  std::vector<Row> rows = {
      {"gpu", n.gpu, ""},
      {"gpus_per_node", std::to_string(n.gpus_per_node), "gpus_per_node"},
      {"topology", to_string(n.topology), ""},
      {"nvlink_bandwidth", gbs(n.nvlink_bytes_per_second), "nvlink_bandwidth"},
      {"nvlink_links_per_gpu", n.nvlink_links_per_gpu > 0 ? std::to_string(n.nvlink_links_per_gpu) : "-",
       "nvlink_links_per_gpu"},
      {"gpus_per_pcie_switch", n.gpus_per_pcie_switch > 0 ? std::to_string(n.gpus_per_pcie_switch) : "-",
       "gpus_per_pcie_switch"},
      {"pcie_link_bandwidth", gbs(n.pcie_link_bytes_per_second), "pcie_link_bandwidth"},
      {"pcie_host_bridge_bandwidth", gbs(n.pcie_host_bridge_bytes_per_second), "pcie_host_bridge_bandwidth"},
      {"intra_node_latency", fmt_num(n.intra_node_latency_seconds * 1e6) + " us", "intra_node_latency"},
      {"nics_per_node", std::to_string(n.nics_per_node), "nics_per_node"},
      {"default_network", n.default_network, ""},
      {"power", fmt_num(n.power_watts / 1e3) + " kW", "power"},
      {"purchase", n.purchase_usd > 0 ? fmt_usd(n.purchase_usd) : std::string("unknown"), "purchase"},
  };
  print_rows(rows, n.sources);
}

void show_network(const NetworkProfile& n, const std::string& dir) {
  fmt::print("network {} — {}\nfile: {}/networks/{}.json\n\n", n.name, n.description, dir, n.name);
  std::vector<Row> rows = {
      {"link_bandwidth", fmt::format("{} Gb/s ({} GB/s)", fmt_num(n.link_bytes_per_second * 8 / 1e9),
                                     fmt_num(n.link_bytes_per_second / 1e9)),
       "link_bandwidth"},
      {"transport", to_string(n.transport), ""},
      {"achieved_fraction", fmt_num(n.achieved_fraction), "achieved_fraction"},
      {"latency", fmt_num(n.latency_seconds * 1e6) + " us", "latency"},
      {"per_flow_bandwidth",
       n.per_flow_bytes_per_second > 0 ? fmt_num(n.per_flow_bytes_per_second * 8 / 1e9) + " Gb/s" : "no cap",
       "per_flow_bandwidth"},
      {"sockets_per_connection", std::to_string(n.sockets_per_connection), "sockets_per_connection"},
      {"host_staging", n.host_staging ? "true" : "false", ""},
      {"switch_port_cost", n.switch_port_usd > 0 ? fmt_usd(n.switch_port_usd) : "unknown", "switch_port_cost"},
  };
  print_rows(rows, n.sources);
}

void show_price(const PriceItem& p, const std::string& dir) {
  fmt::print("price {} (from a file in {}/prices/)\n\n", p.name, dir);
  std::map<std::string, std::string> sources = {{"price", p.source}};
  std::vector<Row> rows = {
      {"unit", p.unit, ""},
      {p.unit == "pue" ? "ratio" : "usd", p.unit == "pue" ? fmt_num(p.ratio) : fmt_usd_exact(p.usd), "price"},
      {"applies_to", p.applies_to.empty() ? std::string("(site)") : p.applies_to, ""},
      {"kind", p.kind, ""},
      {"date", p.date, ""},
      {"price_set", p.price_set, ""},
  };
  print_rows(rows, sources);
}

// ---------------------------------------------------------------- list

void list_table(const ProfileSet& set, const std::string& dir) {
  fmt::print("hardware profiles in {}\n\n", dir);
  fmt::print("GPUs ({}/gpus)\n", dir);
  fmt::print("  {:<20} {:>9} {:>9} {:>8} {:>9} {:>6}  {}\n", "name", "fp16 TF", "fp32 TF", "mem GiB", "mem GB/s",
             "W", "description");
  for (const auto& [name, g] : set.gpus)
    fmt::print("  {:<20} {:>9} {:>9} {:>8} {:>9} {:>6}  {}\n", name, fmt_num(g.peak_fp16_tensor_flops_per_second / 1e12),
               fmt_num(g.peak_fp32_flops_per_second / 1e12), fmt_num(g.memory_bytes / kGiB),
               fmt_num(g.memory_bandwidth_bytes_per_second / 1e9), fmt_num(g.power_watts), g.description);
  fmt::print("\nSoftware stacks ({}/stacks)\n", dir);
  fmt::print("  {:<24} {:<36} {:<40}  {}\n", "name", "fuses", "fitted on GPUs (family: runs)", "description");
  for (const auto& [name, s] : set.stacks) {
    std::vector<std::string> fitted;
    for (const auto& [family, f] : s.fits)
      fitted.push_back(fmt::format("{}: {}", fmt::format("{}", fmt::join(f.gpus, "/")), f.fitted_on.size()));
    fmt::print("  {:<24} {:<36} {:<40}  {}\n", name, s.fuses.empty() ? std::string("-") : fmt::format("{}", fmt::join(s.fuses, ",")),
               fmt::format("{}", fmt::join(fitted, "; ")), s.description);
  }
  fmt::print("\nNodes ({}/nodes)\n", dir);
  fmt::print("  {:<15} {:<25} {:<17} {:>11} {:<16} {:>6} {:>9}\n", "name", "gpus", "topology", "nvlink GB/s",
             "nics x network", "kW", "purchase");
  for (const auto& [name, n] : set.nodes)
    fmt::print("  {:<15} {:<25} {:<17} {:>11} {:<16} {:>6} {:>9}\n", name, fmt::format("{} x {}", n.gpus_per_node, n.gpu),
               to_string(n.topology), n.nvlink_bytes_per_second > 0 ? fmt_num(n.nvlink_bytes_per_second / 1e9) : "-",
               fmt::format("{} x {}", n.nics_per_node, n.default_network), fmt_num(n.power_watts / 1e3),
               fmt_usd(n.purchase_usd));
  fmt::print("\nNetworks ({}/networks)\n", dir);
  fmt::print("  {:<14} {:>7} {:<11} {:>9} {:>11}  {}\n", "name", "Gb/s", "transport", "achieved", "latency us",
             "description");
  for (const auto& [name, n] : set.networks)
    fmt::print("  {:<14} {:>7} {:<11} {:>9} {:>11}  {}\n", name, fmt_num(n.link_bytes_per_second * 8 / 1e9),
               to_string(n.transport), fmt_num(n.achieved_fraction), fmt_num(n.latency_seconds * 1e6),
               n.description);
  fmt::print("\nPrices ({}/prices)\n", dir);
  fmt::print("  {:<40} {:>10} {:<14} {:<15} {:<10} {:<8} {}\n", "name", "price", "unit", "applies to", "kind",
             "date", "price set");
  for (const auto& [name, p] : set.prices)
    fmt::print("  {:<40} {:>10} {:<14} {:<15} {:<10} {:<8} {}\n", name,
               p.unit == "pue" ? fmt_num(p.ratio) : fmt_usd_exact(p.usd), p.unit,
               p.applies_to.empty() ? std::string("(site)") : p.applies_to, p.kind, p.date, p.price_set);
}

std::string all_names(const ProfileSet& set) {
  std::vector<std::string> names;
  for (const auto& [n, _] : set.gpus) names.push_back(n);
  for (const auto& [n, _] : set.stacks) names.push_back(n);
  for (const auto& [n, _] : set.nodes) names.push_back(n);
  for (const auto& [n, _] : set.networks) names.push_back(n);
  for (const auto& [n, _] : set.prices) names.push_back(n);
  return fmt::format("{}", fmt::join(names, ", "));
}

}  // namespace

int run_profiles_command(int argc, char** argv) {
  CLI::App app{"List or show the hardware, network and price profiles (hwprofiles/, docs/hwprofiles.md).",
               "profiles"};
  std::string dir;
  std::string format = "table";
  std::string name;
  app.add_option("--dir", dir,
                 "profile directory with gpus/ nodes/ networks/ prices/ (default: $PTSIM_ROOT/hwprofiles, else the "
                 "source tree's hwprofiles/)");
  app.add_option("--format", format, "output format")->check(CLI::IsMember({"table", "json"}))->capture_default_str();
  app.require_subcommand(1);
  CLI::App* list = app.add_subcommand("list", "one line per profile with its key figures");
  CLI::App* show = app.add_subcommand("show", "every field of one profile, with its unit and source");
  show->add_option("name", name, "profile name (gpu, node, network or price; see 'ptsim profiles list')")->required();
  for (CLI::App* sub : {list, show}) {
    sub->fallthrough();  // --dir and --format may follow the subcommand
    sub->footer("Also: --format table|json, --dir DIR (see 'ptsim profiles --help').");
  }
  if (auto code = parse_or_exit(app, argc, argv)) return *code;

  if (dir.empty()) dir = hwprofiles_directory();
  const ProfileSet set = load_profiles(dir);

  if (list->parsed()) {
    if (format == "json")
      fmt::print("{}\n", hwprofiles::profiles_json(set, dir).dump(2));
    else
      list_table(set, dir);
    return 0;
  }

  const bool json = format == "json";
  if (auto it = set.gpus.find(name); it != set.gpus.end()) {
    json ? fmt::print("{}\n", gpu_json(it->second).dump(2)) : show_gpu(it->second, dir);
  } else if (auto it = set.stacks.find(name); it != set.stacks.end()) {
    json ? fmt::print("{}\n", stack_json(it->second).dump(2)) : show_stack(it->second, dir);
  } else if (auto it = set.nodes.find(name); it != set.nodes.end()) {
    json ? fmt::print("{}\n", node_json(it->second).dump(2)) : show_node(it->second, dir);
  } else if (auto it = set.networks.find(name); it != set.networks.end()) {
    json ? fmt::print("{}\n", network_json(it->second).dump(2)) : show_network(it->second, dir);
  } else if (auto it = set.prices.find(name); it != set.prices.end()) {
    json ? fmt::print("{}\n", price_json(it->second).dump(2)) : show_price(it->second, dir);
  } else {
    throw core::InputError(fmt::format("ptsim profiles show: unknown profile '{}' in {} (known: {})", name, dir,
                                       all_names(set)));
  }
  return 0;
}

}  // namespace ptsim::tools
