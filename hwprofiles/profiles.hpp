// hwprofiles/profiles.hpp — hardware, network and price profiles loaded from hwprofiles/**/*.json.
// Every modelling number in the JSON carries a `source` (datasheet, paper, or "fitted: <on what>").
// Not here: how the numbers are used (sim/compute_model, sim/network) — this is data + validation.
#pragma once
#include <map>
#include <string>
#include <vector>

namespace ptsim::hwprofiles {

// Efficiency of one op class as a function of its size: eff(x) = max_efficiency · x / (x + half_size),
// x in FLOPs for compute-bound classes, bytes for memory-bound ones (docs/compute-model.md).
struct EfficiencyCurve {
  double max_efficiency = 1.0;  // (0, 1]
  double half_size = 0.0;       // >= 0; size at which efficiency is half of max
};

struct GpuProfile {
  std::string name;                        // file stem, e.g. "v100-sxm3-32gb"
  std::string description;
  double memory_bytes = 0;
  double memory_bandwidth_bytes_per_second = 0;
  // Dense peak FLOP/s at boost clock, per math mode. 0 = not supported (e.g. bf16 on V100).
  double peak_fp32_flops_per_second = 0;
  double peak_tf32_flops_per_second = 0;
  double peak_fp16_tensor_flops_per_second = 0;
  double peak_bf16_tensor_flops_per_second = 0;
  double peak_fp8_tensor_flops_per_second = 0;  // E4M3/E5M2 tensor cores (Hopper and later)
  double sustained_clock_fraction = 1.0;   // sustained / boost clock under training load (T4 throttles)
  // The software stack's part (stacks/*.json, applied by device_profile): 0 until a stack is applied.
  std::string stack;                       // the applied stack's name ("" = datasheet only: not costable)
  double kernel_launch_seconds = 0;        // per-op fixed overhead (launch + framework dispatch)
  double memory_efficiency = 0;            // achievable fraction of memory bandwidth for streaming ops
  // Curves: the chip's ramp (half_size, from gpus/*.json) under the stack's ceiling (max_efficiency).
  EfficiencyCurve gemm{0, 0};              // compute efficiency of large GEMMs (tensor cores)
  EfficiencyCurve batched_gemm{0, 0};      // attention's batched GEMMs
  EfficiencyCurve memory_bound;            // elementwise / normalisation ops (x in bytes); ceiling 1
  double reserved_memory_bytes = 0;        // CUDA context + allocator fragmentation not in the plan
  double power_watts = 0;
  std::string pcie_generation;             // "3.0", "4.0", "5.0"
  std::map<std::string, std::string> sources;  // field -> source
};

// What a software stack (PyTorch + Apex in one container, ptsim's CPU runtime …) contributes on one GPU
// family it was fitted on: per-op overhead and the efficiency ceilings, each with its source.
struct StackFit {
  std::string family;                      // e.g. "gv100"
  std::vector<std::string> gpus;           // GPU profiles the values apply to
  std::vector<std::string> fitted_on;      // runs (calibration/data) the values were fitted on; empty = estimate
  std::vector<std::string> held_out;       // runs kept out of the fit
  double kernel_launch_seconds = 0;        // launch + framework dispatch per op
  double memory_efficiency = 1.0;          // fraction of memory bandwidth streaming ops reach
  double gemm_max_efficiency = 1.0;        // ceiling of the GEMM curve
  double batched_gemm_max_efficiency = 1.0;  // ceiling of attention's batched-GEMM curve
  std::map<std::string, std::string> sources;
};

// The fusions a stack may declare; each changes the TaskGraph the simulator costs (docs/stacks.md).
const std::vector<std::string>& known_fusions();

struct StackProfile {
  std::string name;                        // file stem, e.g. "pytorch-apex-ngc19.07"
  std::string description;
  std::string source;
  std::vector<std::string> fuses;          // names from known_fusions()
  std::map<std::string, StackFit> fits;    // family -> fitted values
  bool fuses_op(const std::string& fusion) const;
};

enum class IntraNodeTopology { pcie_tree, nvlink_cube_mesh, nvswitch };

struct NodeProfile {
  std::string name;                        // e.g. "dgx-2h"
  std::string description;
  std::string gpu;                         // GpuProfile name
  int gpus_per_node = 0;
  IntraNodeTopology topology = IntraNodeTopology::pcie_tree;
  // NVLink / NVSwitch: per-GPU unidirectional bandwidth into the fabric (bytes/s).
  double nvlink_bytes_per_second = 0;
  int nvlink_links_per_gpu = 0;            // cube-mesh: links per GPU
  // PCIe tree: GPUs per PCIe switch, switch uplink and host-bridge bandwidth (bytes/s, one direction).
  int gpus_per_pcie_switch = 0;
  double pcie_link_bytes_per_second = 0;
  double pcie_host_bridge_bytes_per_second = 0;
  double intra_node_latency_seconds = 0;
  int nics_per_node = 0;
  std::string default_network;             // NetworkProfile name
  double power_watts = 0;                  // whole node under load
  double purchase_usd = 0;                 // 0 = unknown; filled by load_profiles from a "purchase" price
  std::map<std::string, std::string> sources;
};

enum class Transport { tcp_socket, rdma };

struct NetworkProfile {
  std::string name;                        // e.g. "10gbe-tcp", "ib-edr"
  std::string description;
  double link_bytes_per_second = 0;        // line rate per NIC, one direction
  Transport transport = Transport::rdma;
  double achieved_fraction = 1.0;          // fraction of line rate a collective's flow achieves
  double latency_seconds = 0;              // per message, end to end
  double per_flow_bytes_per_second = 0;    // cap per TCP socket stream (0 = none)
  // TCP sockets one NCCL connection (one channel to one peer) stripes over: NCCL_SOCKET_NTHREADS ×
  // NCCL_NSOCKS_PERTHREAD. A flow's cap is per_flow × this (docs/network-model.md).
  int sockets_per_connection = 1;
  double connection_cap_bytes_per_second() const { return per_flow_bytes_per_second * sockets_per_connection; }
  bool host_staging = false;               // data crosses host memory (socket transport)
  double switch_port_usd = 0;              // per port incl. cable/NIC share (ownership cost); 0 = unknown
  std::map<std::string, std::string> sources;
};

struct PriceItem {
  std::string name;                        // e.g. "gcp-t4-on-demand-2020"
  std::string unit;                        // "gpu_hour", "instance_hour", "purchase", "kwh", "pue"
  double usd = 0;                          // USD per `unit` (0 for "pue")
  double ratio = 0;                        // unit "pue" only: facility power / IT power (>= 1)
  std::string applies_to;                  // gpu or node profile name ("" for kwh, pue)
  // How the price is paid: "on_demand", "spot", "reserved" (hourly units), "purchase", "energy" (kwh, pue).
  std::string kind;
  std::string date;                        // when the price was observed: "YYYY-MM", or "YYYY" (month unknown)
  std::string price_set;                   // a set declared under "price_sets" in some prices/*.json
  std::string source;
};

// The kinds a price item may have, in the order docs/hwprofiles.md lists them.
const std::vector<std::string>& price_kinds();

// One prices/*.json file: its items and the price sets it declares (name -> description).
struct PriceFile {
  std::vector<PriceItem> items;
  std::map<std::string, std::string> price_sets;
};

struct ProfileSet {
  std::map<std::string, GpuProfile> gpus;
  std::map<std::string, StackProfile> stacks;
  std::map<std::string, NodeProfile> nodes;
  std::map<std::string, NetworkProfile> networks;
  std::map<std::string, PriceItem> prices;
  std::map<std::string, std::string> price_sets;  // name -> description, from every prices/*.json
};

// Months since the start of `date` ("YYYY-MM", or "YYYY" counted from its January) at year/month `now`.
int price_age_months(const std::string& date, int now_year, int now_month);

// Loads and validates every profile under `directory` (default: hwprofiles_directory()).
// Throws core::InputError naming the file and field for malformed or inconsistent profiles.
ProfileSet load_profiles(const std::string& directory);
ProfileSet load_profiles();
std::string hwprofiles_directory();

// Single-file loaders (used by load_profiles and tests). `path` is the JSON file.
GpuProfile load_gpu_profile(const std::string& path);
StackProfile load_stack_profile(const std::string& path);
NodeProfile load_node_profile(const std::string& path);
NetworkProfile load_network_profile(const std::string& path);
std::vector<PriceItem> load_price_file(const std::string& path);
PriceFile read_price_file(const std::string& path);  // items and the sets the file declares

const GpuProfile& find_gpu(const ProfileSet& set, const std::string& name);       // InputError lists names
const StackProfile& find_stack(const ProfileSet& set, const std::string& name);
// The stack's fit for `gpu`, or nullptr.
const StackFit* stack_fit_for(const StackProfile& stack, const std::string& gpu);
// The GPU with `stack` applied: what the compute model costs. InputError when the stack has no fit for it.
GpuProfile device_profile(const ProfileSet& set, const std::string& gpu, const std::string& stack);
// The one stack fitted on `gpu` (used when a prediction names none); InputError when none or several are.
std::string default_stack_for(const ProfileSet& set, const std::string& gpu);
const NodeProfile& find_node(const ProfileSet& set, const std::string& name);
const NetworkProfile& find_network(const ProfileSet& set, const std::string& name);

const char* to_string(IntraNodeTopology t);
const char* to_string(Transport t);

}  // namespace ptsim::hwprofiles
