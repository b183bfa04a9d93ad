// hwprofiles/profiles.cpp — reads and validates hwprofiles/{gpus,nodes,networks,prices}/*.json.
// Every number in a profile is a quantity {"value", "unit", "source"}; the unit is checked against the
// units allowed for that field and converted to SI here (bytes, bytes/s, FLOP/s, FLOP, seconds, watts),
// so nothing downstream sees "GB/s" or "us". Format: docs/hwprofiles.md.
// Not here: what the numbers mean for a prediction (sim/), clusters/ (read by whoever builds clusters).
#include "hwprofiles/profiles.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <utility>

#include "core/data_path.hpp"    // defines: data_path
#include "core/json_reader.hpp"  // defines: load_json_file, JsonReader, InputError

namespace ptsim::hwprofiles {

namespace {

namespace fs = std::filesystem;
using core::InputError;
using core::Json;
using core::JsonReader;
using Sources = std::map<std::string, std::string>;

// ---------------------------------------------------------------- quantities and units

enum class Dimension { bytes, bytes_per_second, flops_per_second, flops, seconds, watts, fraction, count, usd };

struct UnitScale {
  const char* unit;
  double to_si;  // multiply the JSON value by this to get bytes, bytes/s, FLOP/s, FLOP, s, W, USD
};

const std::vector<UnitScale>& units_of(Dimension d) {
  static const std::vector<UnitScale> bytes = {{"bytes", 1.0}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9},
                                               {"KiB", 1024.0}, {"MiB", 1024.0 * 1024}, {"GiB", 1024.0 * 1024 * 1024}};
  static const std::vector<UnitScale> bytes_per_second = {{"bytes/s", 1.0}, {"MB/s", 1e6}, {"GB/s", 1e9},
                                                          {"TB/s", 1e12}, {"Mb/s", 1e6 / 8}, {"Gb/s", 1e9 / 8}};
  static const std::vector<UnitScale> flops_per_second = {{"FLOP/s", 1.0}, {"GFLOP/s", 1e9}, {"TFLOP/s", 1e12}};
  static const std::vector<UnitScale> flops = {{"FLOP", 1.0}, {"MFLOP", 1e6}, {"GFLOP", 1e9}, {"TFLOP", 1e12}};
  static const std::vector<UnitScale> seconds = {{"s", 1.0}, {"ms", 1e-3}, {"us", 1e-6}, {"ns", 1e-9}};
  static const std::vector<UnitScale> watts = {{"W", 1.0}, {"kW", 1e3}};
  static const std::vector<UnitScale> fraction = {{"fraction", 1.0}};
  static const std::vector<UnitScale> count = {{"count", 1.0}};
  static const std::vector<UnitScale> usd = {{"USD", 1.0}};
  switch (d) {
    case Dimension::bytes: return bytes;
    case Dimension::bytes_per_second: return bytes_per_second;
    case Dimension::flops_per_second: return flops_per_second;
    case Dimension::flops: return flops;
    case Dimension::seconds: return seconds;
    case Dimension::watts: return watts;
    case Dimension::fraction: return fraction;
    case Dimension::count: return count;
    case Dimension::usd: return usd;
  }
  return count;
}

enum class Range { positive, non_negative, fraction };  // fraction: (0, 1]

// Reads {"value": x, "unit": u, "source": s} at `key`, records the source under `source_key`
// (the dotted JSON path, e.g. "gemm.max_efficiency"), returns x converted to SI.
double read_quantity(JsonReader& r, const std::string& key, Dimension dim, Range range, Sources& sources,
                     const std::string& source_key) {
  JsonReader q = r.child(key);
  double value = 0;
  if (dim == Dimension::count) {
    value = static_cast<double>(q.require_int("value", core::ranges::per_node_count));
  } else if (range == Range::positive) {
    value = q.require_positive("value");
  } else if (range == Range::non_negative) {
    value = q.require_non_negative("value");
  } else {
    value = q.require_positive("value");
    if (value > 1.0) q.fail("value", fmt::format("a fraction in (0, 1], got {}", value));
  }
  std::vector<std::string> names;
  for (const auto& u : units_of(dim)) names.emplace_back(u.unit);
  const std::string unit = q.require_enum("unit", names);
  const std::string source = q.require_string("source");
  if (source.empty())
    q.fail("source", "a non-empty source (datasheet, paper, 'initial estimate: …' or 'assumption: …')");
  q.finish();
  double scale = 1.0;
  for (const auto& u : units_of(dim))
    if (unit == u.unit) scale = u.to_si;
  sources[source_key] = source;
  return value * scale;
}

double read_quantity(JsonReader& r, const std::string& key, Dimension dim, Range range, Sources& sources) {
  return read_quantity(r, key, dim, range, sources, key);
}

int read_count(JsonReader& r, const std::string& key, Sources& sources) {
  return static_cast<int>(read_quantity(r, key, Dimension::count, Range::positive, sources));
}

// A curve's ramp on this chip: {"half_size": quantity}; its ceiling comes from the stack.
double read_half_size(JsonReader& r, const std::string& key, Dimension size_dim, Sources& sources) {
  JsonReader c = r.child(key);
  const double half = read_quantity(c, "half_size", size_dim, Range::non_negative, sources, key + ".half_size");
  c.finish();
  return half;
}

std::vector<std::string> read_names(JsonReader& r, const std::string& key, bool may_be_empty) {
  const Json& list = r.raw(key);
  if (!list.is_array() || (!may_be_empty && list.empty()))
    r.fail(key, may_be_empty ? "a list of names" : "a non-empty list of names");
  std::vector<std::string> names;
  for (const auto& v : list) {
    if (!v.is_string() || v.get<std::string>().empty()) r.fail(key, "a list of non-empty strings");
    names.push_back(v.get<std::string>());
  }
  return names;
}

std::string file_stem(const std::string& path) { return fs::path(path).stem().string(); }

// Profile names are file stems and CLI arguments: keep them simple to type and to grep.
void check_profile_name(const std::string& path, const std::string& name) {
  bool ok = !name.empty() && std::all_of(name.begin(), name.end(), [](char ch) {
    return (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '-' || ch == '.' || ch == '_';
  });
  if (!ok)
    throw InputError(fmt::format("{}: profile name '{}' (the file name) must use only a-z, 0-9, '-', '.', '_'",
                                 path, name));
}

std::string description_and_comment(JsonReader& r) {
  r.get_string("comment", "");  // free text for editors, not shown
  return r.require_string("description");
}

std::string join_names(const std::vector<std::string>& names) {
  return names.empty() ? std::string("none") : fmt::format("{}", fmt::join(names, ", "));
}

template <typename Map>
std::vector<std::string> names_of(const Map& m) {
  std::vector<std::string> names;
  for (const auto& [name, _] : m) names.push_back(name);
  return names;
}

// *.json files directly in `folder`, sorted; a missing folder has none.
std::vector<std::string> json_files_in(const fs::path& folder) {
  std::vector<std::string> files;
  std::error_code ec;
  if (!fs::is_directory(folder, ec)) return files;
  for (const auto& entry : fs::directory_iterator(folder)) {
    if (entry.is_regular_file() && entry.path().extension() == ".json") files.push_back(entry.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace

// ---------------------------------------------------------------- single files

GpuProfile load_gpu_profile(const std::string& path) {
  const Json json = core::load_json_file(path);
  JsonReader r(json, path);
  GpuProfile g;
  g.name = file_stem(path);
  check_profile_name(path, g.name);
  g.description = description_and_comment(r);
  Sources& s = g.sources;
  g.memory_bytes = read_quantity(r, "memory", Dimension::bytes, Range::positive, s);
  g.memory_bandwidth_bytes_per_second =
      read_quantity(r, "memory_bandwidth", Dimension::bytes_per_second, Range::positive, s);
  g.peak_fp32_flops_per_second = read_quantity(r, "peak_fp32", Dimension::flops_per_second, Range::positive, s);
  // 0 = the part has no such math mode (tf32 before Ampere, bf16 before Ampere).
  g.peak_tf32_flops_per_second = read_quantity(r, "peak_tf32", Dimension::flops_per_second, Range::non_negative, s);
  g.peak_fp16_tensor_flops_per_second =
      read_quantity(r, "peak_fp16_tensor", Dimension::flops_per_second, Range::non_negative, s);
  g.peak_bf16_tensor_flops_per_second =
      read_quantity(r, "peak_bf16_tensor", Dimension::flops_per_second, Range::non_negative, s);
  g.peak_fp8_tensor_flops_per_second =
      read_quantity(r, "peak_fp8_tensor", Dimension::flops_per_second, Range::non_negative, s);
  g.sustained_clock_fraction =
      read_quantity(r, "sustained_clock_fraction", Dimension::fraction, Range::fraction, s);
  // The stack's part (launch overhead, efficiency ceilings) is in stacks/*.json; the chip keeps the ramps.
  g.gemm.half_size = read_half_size(r, "gemm", Dimension::flops, s);
  g.batched_gemm.half_size = read_half_size(r, "batched_gemm", Dimension::flops, s);
  g.memory_bound.half_size = read_half_size(r, "memory_bound", Dimension::bytes, s);
  g.reserved_memory_bytes = read_quantity(r, "reserved_memory", Dimension::bytes, Range::non_negative, s);
  g.power_watts = read_quantity(r, "power", Dimension::watts, Range::positive, s);
  g.pcie_generation = r.get_enum("pcie_generation", {"3.0", "4.0", "5.0"}, "");  // absent for CPU profiles
  r.finish();
  if (g.reserved_memory_bytes >= g.memory_bytes)
    r.fail("reserved_memory", fmt::format("less than 'memory' ({} bytes), got {} bytes", g.memory_bytes,
                                          g.reserved_memory_bytes));
  return g;
}

const std::vector<std::string>& known_fusions() {
  static const std::vector<std::string> fusions = {"multi_tensor_optimizer", "fused_attention", "fused_softmax_dropout",
                                                   "fused_bias_dropout_residual"};
  return fusions;
}

bool StackProfile::fuses_op(const std::string& fusion) const {
  return std::find(fuses.begin(), fuses.end(), fusion) != fuses.end();
}

StackProfile load_stack_profile(const std::string& path) {
  const Json json = core::load_json_file(path);
  JsonReader r(json, path);
  StackProfile st;
  st.name = file_stem(path);
  check_profile_name(path, st.name);
  st.description = description_and_comment(r);
  st.source = r.require_string("source");
  if (st.source.empty()) r.fail("source", "where the stack is described (a README, a container's release notes)");
  st.fuses = read_names(r, "fuses", true);
  for (const auto& f : st.fuses)
    if (std::find(known_fusions().begin(), known_fusions().end(), f) == known_fusions().end())
      r.fail("fuses", fmt::format("fusions among [{}], got \"{}\"", fmt::join(known_fusions(), ", "), f));
  JsonReader fits = r.child("fits");
  if (fits.object().empty()) r.fail("fits", "one entry per GPU family the stack was fitted on");
  for (auto it = fits.object().begin(); it != fits.object().end(); ++it) {
    JsonReader e = fits.child(it.key());
    StackFit fit;
    fit.family = it.key();
    fit.gpus = read_names(e, "gpus", false);
    fit.fitted_on = read_names(e, "fitted_on", true);
    fit.held_out = read_names(e, "held_out", true);
    e.get_string("comment", "");
    Sources& s = fit.sources;
    fit.kernel_launch_seconds = read_quantity(e, "kernel_launch_overhead", Dimension::seconds, Range::non_negative, s);
    fit.memory_efficiency = read_quantity(e, "memory_efficiency", Dimension::fraction, Range::fraction, s);
    fit.gemm_max_efficiency = read_quantity(e, "gemm_max_efficiency", Dimension::fraction, Range::fraction, s);
    fit.batched_gemm_max_efficiency =
        read_quantity(e, "batched_gemm_max_efficiency", Dimension::fraction, Range::fraction, s);
    e.finish();
    st.fits.emplace(fit.family, std::move(fit));
  }
  r.finish();
  return st;
}

NodeProfile load_node_profile(const std::string& path) {
  const Json json = core::load_json_file(path);
  JsonReader r(json, path);
  NodeProfile n;
  n.name = file_stem(path);
  check_profile_name(path, n.name);
  n.description = description_and_comment(r);
  Sources& s = n.sources;
  n.gpu = r.require_string("gpu");
  if (n.gpu.empty()) r.fail("gpu", "the name of a GPU profile (a file stem in gpus/)");
  n.gpus_per_node = read_count(r, "gpus_per_node", s);
  const std::string topology = r.require_enum("topology", {"pcie_tree", "nvlink_cube_mesh", "nvswitch"});
  n.topology = topology == "pcie_tree"          ? IntraNodeTopology::pcie_tree
               : topology == "nvlink_cube_mesh" ? IntraNodeTopology::nvlink_cube_mesh
                                                : IntraNodeTopology::nvswitch;
  const bool nvlink = n.topology != IntraNodeTopology::pcie_tree;
  // NVLink fields: required for NVLink topologies, meaningless (so rejected) on a PCIe tree.
  if (nvlink || r.has("nvlink_bandwidth")) {
    if (!nvlink) r.fail("nvlink_bandwidth", "no NVLink fields with topology 'pcie_tree' (remove it)");
    n.nvlink_bytes_per_second = read_quantity(r, "nvlink_bandwidth", Dimension::bytes_per_second, Range::positive, s);
  }
  if (n.topology == IntraNodeTopology::nvlink_cube_mesh || r.has("nvlink_links_per_gpu")) {
    if (!nvlink) r.fail("nvlink_links_per_gpu", "no NVLink fields with topology 'pcie_tree' (remove it)");
    n.nvlink_links_per_gpu = read_count(r, "nvlink_links_per_gpu", s);
  }
  // PCIe fields: required on a PCIe tree (all traffic); optional otherwise (GPU <-> NIC path).
  if (!nvlink || r.has("gpus_per_pcie_switch")) n.gpus_per_pcie_switch = read_count(r, "gpus_per_pcie_switch", s);
  if (!nvlink || r.has("pcie_link_bandwidth"))
    n.pcie_link_bytes_per_second =
        read_quantity(r, "pcie_link_bandwidth", Dimension::bytes_per_second, Range::positive, s);
  if (!nvlink || r.has("pcie_host_bridge_bandwidth"))
    n.pcie_host_bridge_bytes_per_second =
        read_quantity(r, "pcie_host_bridge_bandwidth", Dimension::bytes_per_second, Range::positive, s);
  n.intra_node_latency_seconds = read_quantity(r, "intra_node_latency", Dimension::seconds, Range::non_negative, s);
  n.nics_per_node = read_count(r, "nics_per_node", s);
  n.default_network = r.require_string("default_network");
  if (n.default_network.empty()) r.fail("default_network", "the name of a network profile (a file stem in networks/)");
  n.power_watts = read_quantity(r, "power", Dimension::watts, Range::positive, s);
  r.finish();
  if (n.gpus_per_pcie_switch > 0 && n.gpus_per_node % n.gpus_per_pcie_switch != 0)
    r.fail("gpus_per_pcie_switch",
           fmt::format("a divisor of gpus_per_node ({}), got {}", n.gpus_per_node, n.gpus_per_pcie_switch));
  return n;
}

namespace {

// NCCL's socket transport stripes each connection over NCCL_SOCKET_NTHREADS × NCCL_NSOCKS_PERTHREAD sockets,
// at most 64 (NCCL environment-variable documentation); each socket is capped by per_flow_bandwidth.
void read_sockets_per_connection(JsonReader& r, NetworkProfile& n) {
  const double sockets = read_quantity(r, "sockets_per_connection", Dimension::count, Range::positive, n.sources);
  if (sockets > 64)  // a count: already a whole number >= 1
    r.fail("sockets_per_connection",
           fmt::format("at most 64 (NCCL allows NCCL_SOCKET_NTHREADS × NCCL_NSOCKS_PERTHREAD up to 64), got {}", sockets));
  if (n.transport != Transport::tcp_socket)
    r.fail("sockets_per_connection", "only with transport 'tcp_socket' (RDMA connections are not socket streams)");
  if (n.per_flow_bytes_per_second <= 0)
    r.fail("sockets_per_connection", "'per_flow_bandwidth' too (the per-socket cap it multiplies)");
  n.sockets_per_connection = static_cast<int>(sockets);
}

}  // namespace

NetworkProfile load_network_profile(const std::string& path) {
  const Json json = core::load_json_file(path);
  JsonReader r(json, path);
  NetworkProfile n;
  n.name = file_stem(path);
  check_profile_name(path, n.name);
  n.description = description_and_comment(r);
  Sources& s = n.sources;
  n.link_bytes_per_second = read_quantity(r, "link_bandwidth", Dimension::bytes_per_second, Range::positive, s);
  n.transport = r.require_enum("transport", {"tcp_socket", "rdma"}) == "tcp_socket" ? Transport::tcp_socket
                                                                                    : Transport::rdma;
  n.achieved_fraction = read_quantity(r, "achieved_fraction", Dimension::fraction, Range::fraction, s);
  n.latency_seconds = read_quantity(r, "latency", Dimension::seconds, Range::non_negative, s);
  if (r.has("per_flow_bandwidth"))
    n.per_flow_bytes_per_second =
        read_quantity(r, "per_flow_bandwidth", Dimension::bytes_per_second, Range::positive, s);
  if (r.has("sockets_per_connection")) read_sockets_per_connection(r, n);
  n.host_staging = r.require_bool("host_staging");
  if (r.has("switch_port_cost"))
    n.switch_port_usd = read_quantity(r, "switch_port_cost", Dimension::usd, Range::non_negative, s);
  r.finish();
  if (n.transport == Transport::tcp_socket && !n.host_staging)
    r.fail("host_staging", "true for transport 'tcp_socket' (socket transports copy through host memory)");
  return n;
}

namespace {

// The kinds an item in `unit` may have: hourly prices are paid on demand, on spot or reserved; a purchase
// is a purchase; electricity and PUE are the energy side of ownership.
std::vector<std::string> kinds_for_unit(const std::string& unit) {
  if (unit == "gpu_hour" || unit == "instance_hour") return {"on_demand", "spot", "reserved"};
  if (unit == "purchase") return {"purchase"};
  return {"energy"};
}

// "YYYY-MM" or "YYYY": when the price was observed (a month is required where the source gives one).
void check_price_date(JsonReader& p, const std::string& date) {
  auto digits = [&](size_t from, size_t count) {
    for (size_t i = from; i < from + count; ++i)
      if (i >= date.size() || date[i] < '0' || date[i] > '9') return false;
    return true;
  };
  bool ok = (date.size() == 4 || (date.size() == 7 && date[4] == '-' && digits(5, 2))) && digits(0, 4);
  if (ok) {
    const int year = std::stoi(date.substr(0, 4));
    const int month = date.size() == 7 ? std::stoi(date.substr(5, 2)) : 1;
    ok = year >= 1990 && year <= 2100 && month >= 1 && month <= 12;
  }
  if (!ok) p.fail("date", fmt::format("\"YYYY-MM\" (or \"YYYY\" when the source gives no month), got \"{}\"", date));
}

}  // namespace

const std::vector<std::string>& price_kinds() {
  static const std::vector<std::string> kinds = {"on_demand", "spot", "reserved", "purchase", "energy"};
  return kinds;
}

int price_age_months(const std::string& date, int now_year, int now_month) {
  const int year = std::stoi(date.substr(0, 4));
  const int month = date.size() >= 7 ? std::stoi(date.substr(5, 2)) : 1;
  return (now_year - year) * 12 + (now_month - month);
}

PriceFile read_price_file(const std::string& path) {
  const Json json = core::load_json_file(path);
  JsonReader r(json, path);
  r.get_string("comment", "");
  PriceFile file;
  if (r.has("price_sets")) {
    const Json& sets = r.raw("price_sets");
    if (!sets.is_object() || sets.empty())
      r.fail("price_sets", "an object mapping each price set's name to a description");
    for (auto it = sets.begin(); it != sets.end(); ++it) {
      check_profile_name(path + " price_sets." + it.key(), it.key());
      if (!it.value().is_string() || it.value().get<std::string>().empty())
        r.fail("price_sets." + it.key(), "a non-empty description of the price set");
      file.price_sets[it.key()] = it.value().get<std::string>();
    }
  }
  const Json& items = r.raw("items");
  if (!items.is_array() || items.empty()) r.fail("items", "a non-empty array of price items");
  r.finish();
  for (size_t i = 0; i < items.size(); ++i) {
    JsonReader p(items[i], path, fmt::format("items[{}]", i));
    PriceItem item;
    item.name = p.require_string("name");
    check_profile_name(path + fmt::format(" items[{}].name", i), item.name);
    item.unit = p.require_enum("unit", {"gpu_hour", "instance_hour", "purchase", "kwh", "pue"});
    if (item.unit == "pue") {
      item.ratio = p.require_positive("ratio");
      if (item.ratio < 1.0) p.fail("ratio", fmt::format("a power usage effectiveness >= 1, got {}", item.ratio));
    } else {
      item.usd = p.require_positive("usd");
    }
    const bool needs_target = item.unit != "kwh" && item.unit != "pue";
    if (needs_target) {
      item.applies_to = p.require_string("applies_to");
      if (item.applies_to.empty())
        p.fail("applies_to", item.unit == "gpu_hour" ? "a GPU profile name" : "a node profile name");
    } else if (p.has("applies_to")) {
      p.fail("applies_to", fmt::format("no 'applies_to' for unit '{}' (it applies to the whole site)", item.unit));
    }
    item.kind = p.require_enum("kind", price_kinds());
    const std::vector<std::string> allowed = kinds_for_unit(item.unit);
    if (std::find(allowed.begin(), allowed.end(), item.kind) == allowed.end())
      p.fail("kind", fmt::format("one of [{}] for unit '{}', got \"{}\"", fmt::join(allowed, ", "), item.unit,
                                 item.kind));
    item.date = p.require_string("date");
    check_price_date(p, item.date);
    // Whether the set is declared is checked by load_profiles: declarations may sit in another file.
    item.price_set = p.require_string("price_set");
    if (item.price_set.empty()) p.fail("price_set", "the name of a price set declared under 'price_sets'");
    item.source = p.require_string("source");
    if (item.source.empty()) p.fail("source", "a non-empty source (price list, paper, or 'assumption: …')");
    p.get_string("comment", "");
    p.finish();
    file.items.push_back(std::move(item));
  }
  return file;
}

std::vector<PriceItem> load_price_file(const std::string& path) { return read_price_file(path).items; }

// ---------------------------------------------------------------- the whole directory

std::string hwprofiles_directory() {
  return core::data_path("hwprofiles");
}

ProfileSet load_profiles() { return load_profiles(hwprofiles_directory()); }

ProfileSet load_profiles(const std::string& directory) {
  const fs::path root(directory);
  std::error_code ec;
  const char* kinds[] = {"gpus", "nodes", "networks", "prices"};
  bool any_kind = false;
  for (const char* kind : kinds) any_kind = any_kind || fs::is_directory(root / kind, ec);
  if (!any_kind)
    throw InputError(fmt::format(
        "{}: not a hardware profile directory (expected sub-folders gpus/, stacks/, nodes/, networks/, prices/; "
        "set PTSIM_ROOT to the ptsim source tree or pass --dir)",
        directory));

  ProfileSet set;
  std::map<std::string, std::string> file_of;  // profile or price name -> file that defines it
  auto claim = [&](const std::string& name, const std::string& path) {
    auto [it, inserted] = file_of.emplace(name, path);
    if (!inserted)
      throw InputError(fmt::format("{}: name '{}' is already used by {} (profile and price names must be unique "
                                   "across gpus/, stacks/, nodes/, networks/ and prices/)",
                                   path, name, it->second));
  };

  for (const auto& path : json_files_in(root / "gpus")) {
    GpuProfile g = load_gpu_profile(path);
    claim(g.name, path);
    set.gpus.emplace(g.name, std::move(g));
  }
  for (const auto& path : json_files_in(root / "stacks")) {
    StackProfile st = load_stack_profile(path);
    claim(st.name, path);
    std::map<std::string, std::string> family_of;
    for (const auto& [family, fit] : st.fits)
      for (const auto& gpu : fit.gpus) {
        if (!set.gpus.count(gpu))
          throw InputError(fmt::format("{}: field 'fits.{}.gpus': unknown GPU profile '{}' (known: {})", path, family,
                                       gpu, join_names(names_of(set.gpus))));
        auto [at, inserted] = family_of.emplace(gpu, family);
        if (!inserted)
          throw InputError(fmt::format("{}: field 'fits.{}.gpus': GPU '{}' is already in family '{}' (one fit per GPU)",
                                       path, family, gpu, at->second));
      }
    set.stacks.emplace(st.name, std::move(st));
  }
  for (const auto& path : json_files_in(root / "networks")) {
    NetworkProfile n = load_network_profile(path);
    claim(n.name, path);
    set.networks.emplace(n.name, std::move(n));
  }
  for (const auto& path : json_files_in(root / "nodes")) {
    NodeProfile n = load_node_profile(path);
    claim(n.name, path);
    if (!set.gpus.count(n.gpu))
      throw InputError(fmt::format("{}: field 'gpu': unknown GPU profile '{}' (known GPU profiles in {}: {})", path,
                                   n.gpu, (root / "gpus").string(), join_names(names_of(set.gpus))));
    if (!set.networks.count(n.default_network))
      throw InputError(fmt::format(
          "{}: field 'default_network': unknown network profile '{}' (known network profiles in {}: {})", path,
          n.default_network, (root / "networks").string(), join_names(names_of(set.networks))));
    set.nodes.emplace(n.name, std::move(n));
  }
  // Sets first, from every file, so that an item may use a set another file declares.
  std::map<std::string, PriceFile> price_files;
  std::map<std::string, std::string> set_file;  // price set -> file that declares it
  for (const auto& path : json_files_in(root / "prices")) {
    PriceFile file = read_price_file(path);
    for (const auto& [name, description] : file.price_sets) {
      auto [it, inserted] = set_file.emplace(name, path);
      if (!inserted)
        throw InputError(fmt::format("{}: field 'price_sets.{}': price set '{}' is already declared by {} "
                                     "(declare each set once)",
                                     path, name, name, it->second));
      set.price_sets[name] = description;
    }
    price_files.emplace(path, std::move(file));
  }
  for (auto& [path, file] : price_files) {
    std::vector<PriceItem>& items = file.items;
    for (size_t i = 0; i < items.size(); ++i) {
      PriceItem& item = items[i];
      claim(item.name, path);
      if (!set.price_sets.count(item.price_set))
        throw InputError(fmt::format("{}: field 'items[{}].price_set': unknown price set '{}' (declared in {}: {})",
                                     path, i, item.price_set, (root / "prices").string(),
                                     join_names(names_of(set.price_sets))));
      const std::string field = fmt::format("items[{}].applies_to", i);
      if (item.unit == "gpu_hour" && !set.gpus.count(item.applies_to))
        throw InputError(fmt::format("{}: field '{}': unknown GPU profile '{}' (a gpu_hour price applies to a GPU; "
                                     "known: {})",
                                     path, field, item.applies_to, join_names(names_of(set.gpus))));
      if ((item.unit == "instance_hour" || item.unit == "purchase") && !set.nodes.count(item.applies_to))
        throw InputError(fmt::format("{}: field '{}': unknown node profile '{}' (an {} price applies to a node; "
                                     "known: {})",
                                     path, field, item.applies_to, item.unit, join_names(names_of(set.nodes))));
      if (item.unit == "purchase") {
        NodeProfile& node = set.nodes.at(item.applies_to);
        if (node.purchase_usd > 0)
          throw InputError(fmt::format("{}: field '{}': node '{}' already has a purchase price ({}); keep one",
                                       path, field, node.name, node.sources.at("purchase")));
        node.purchase_usd = item.usd;
        node.sources["purchase"] = item.name + ": " + item.source;
      }
      set.prices.emplace(item.name, std::move(item));
    }
  }
  return set;
}

// ---------------------------------------------------------------- lookup

namespace {
template <typename Map>
const typename Map::mapped_type& find_in(const Map& m, const std::string& name, const char* kind) {
  auto it = m.find(name);
  if (it == m.end())
    throw InputError(fmt::format("unknown {} profile '{}' (known: {}; see 'ptsim profiles list')", kind, name,
                                 join_names(names_of(m))));
  return it->second;
}
}  // namespace

const GpuProfile& find_gpu(const ProfileSet& set, const std::string& name) { return find_in(set.gpus, name, "GPU"); }
const StackProfile& find_stack(const ProfileSet& set, const std::string& name) {
  return find_in(set.stacks, name, "stack");
}

const StackFit* stack_fit_for(const StackProfile& stack, const std::string& gpu) {
  for (const auto& [family, fit] : stack.fits)
    if (std::find(fit.gpus.begin(), fit.gpus.end(), gpu) != fit.gpus.end()) return &fit;
  return nullptr;
}

GpuProfile device_profile(const ProfileSet& set, const std::string& gpu_name, const std::string& stack_name) {
  GpuProfile g = find_gpu(set, gpu_name);
  const StackProfile& stack = find_stack(set, stack_name);
  const StackFit* fit = stack_fit_for(stack, gpu_name);
  if (!fit) {
    std::vector<std::string> fitted;
    for (const auto& [family, f] : stack.fits) fitted.insert(fitted.end(), f.gpus.begin(), f.gpus.end());
    std::vector<std::string> others;
    for (const auto& [name, st] : set.stacks)
      if (stack_fit_for(st, gpu_name)) others.push_back(name);
    throw InputError(fmt::format("stack '{}' has no values for GPU '{}' (it was fitted on: {}); stacks with values "
                                 "for '{}': {} (set recipe.stack or --stack)",
                                 stack_name, gpu_name, join_names(fitted), gpu_name, join_names(others)));
  }
  g.stack = stack_name;
  g.kernel_launch_seconds = fit->kernel_launch_seconds;
  g.memory_efficiency = fit->memory_efficiency;
  g.gemm.max_efficiency = fit->gemm_max_efficiency;
  g.batched_gemm.max_efficiency = fit->batched_gemm_max_efficiency;
  g.memory_bound.max_efficiency = 1.0;  // the streaming ceiling is memory_efficiency
  const std::string from = fmt::format("stack {} ({}): ", stack_name, fit->family);
  g.sources["kernel_launch_overhead"] = from + fit->sources.at("kernel_launch_overhead");
  g.sources["memory_efficiency"] = from + fit->sources.at("memory_efficiency");
  g.sources["gemm.max_efficiency"] = from + fit->sources.at("gemm_max_efficiency");
  g.sources["batched_gemm.max_efficiency"] = from + fit->sources.at("batched_gemm_max_efficiency");
  return g;
}

std::string default_stack_for(const ProfileSet& set, const std::string& gpu) {
  (void)find_gpu(set, gpu);
  std::vector<std::string> candidates;
  for (const auto& [name, st] : set.stacks)
    if (stack_fit_for(st, gpu)) candidates.push_back(name);
  if (candidates.size() == 1) return candidates.front();
  throw InputError(fmt::format("GPU '{}': {} (set recipe.stack or --stack; 'ptsim profiles list' shows the stacks)",
                               gpu, candidates.empty() ? std::string("no stack in stacks/ has values for it")
                                                       : "several stacks have values for it: " + join_names(candidates)));
}

const NodeProfile& find_node(const ProfileSet& set, const std::string& name) {
  return find_in(set.nodes, name, "node");
}
const NetworkProfile& find_network(const ProfileSet& set, const std::string& name) {
  return find_in(set.networks, name, "network");
}

const char* to_string(IntraNodeTopology t) {
  switch (t) {
    case IntraNodeTopology::pcie_tree: return "pcie_tree";
    case IntraNodeTopology::nvlink_cube_mesh: return "nvlink_cube_mesh";
    case IntraNodeTopology::nvswitch: return "nvswitch";
  }
  return "?";
}

const char* to_string(Transport t) {
  switch (t) {
    case Transport::tcp_socket: return "tcp_socket";
    case Transport::rdma: return "rdma";
  }
  return "?";
}

}  // namespace ptsim::hwprofiles
