// reports/cache_bytes.cpp — heap-byte estimates of cached graphs, plans and simulations (see the header).
#include "reports/cache_bytes.hpp"

#include <string>

namespace ptsim::reports {
namespace {

// What glibc's malloc adds to each allocation (its header, rounded up to 16 bytes).
constexpr size_t kAllocationOverhead = 16;

size_t heap(const std::string& s) {
  return s.capacity() > 15 ? s.capacity() + 1 + kAllocationOverhead : 0;  // 15: libstdc++'s inline buffer
}

template <typename T>
size_t heap(const std::vector<T>& v) {
  return v.capacity() ? v.capacity() * sizeof(T) + kAllocationOverhead : 0;
}

// boost::adjacency_list<vecS, vecS, bidirectionalS>: per vertex an out- and an in-edge vector; per edge an
// entry in each (target and a pointer to its list node) and a node in the graph's edge list.
size_t heap(const models::DependencyGraph& g) {
  constexpr size_t vertex = 2 * sizeof(std::vector<int>) + 2 * kAllocationOverhead;
  constexpr size_t edge = 2 * 2 * sizeof(void*) + 4 * sizeof(void*) + kAllocationOverhead;
  return boost::num_vertices(g) * vertex + boost::num_edges(g) * edge;
}

}  // namespace

size_t approximate_bytes(const models::TaskGraph& g) {
  size_t bytes = sizeof(g) + heap(g.ops) + heap(g.tensors) + heap(g.params) + heap(g.deps) + heap(g.model.name);
  for (const models::Op& op : g.ops)
    bytes += heap(op.name) + heap(op.inputs) + heap(op.outputs) + heap(op.attrs.params);
  for (const models::Tensor& t : g.tensors) bytes += heap(t.name) + heap(t.shape);
  for (const models::Parameter& p : g.params) bytes += heap(p.name) + heap(p.optimizer_states);
  constexpr size_t map_node = 4 * sizeof(void*) + sizeof(std::pair<const int, std::vector<int>>) + kAllocationOverhead;
  for (const auto& [tensor, readers] : g.readers_since_write) bytes += map_node + heap(readers);
  return bytes;
}

size_t approximate_bytes(const models::MemoryPlan& plan) {
  return sizeof(plan) + heap(plan.offset) + heap(plan.last_use);
}

size_t approximate_bytes(const std::vector<sim::StageMemory>& stages) {
  size_t bytes = heap(stages);
  for (const auto& s : stages) bytes += heap(s.plan.offset) + heap(s.plan.last_use);
  return bytes;
}

size_t approximate_bytes(const sim::SingleDevicePrediction& p) {
  constexpr size_t map_node = 4 * sizeof(void*) + sizeof(std::pair<const std::string, double>) + kAllocationOverhead;
  size_t bytes = sizeof(p) + heap(p.op_seconds);
  for (const auto& [kind, seconds] : p.seconds_by_kind) bytes += map_node + heap(kind);
  return bytes;
}

size_t approximate_bytes(const sim::StepSimulation& s) {
  return sizeof(s) + heap(s.data_parallel_algorithm) + heap(s.timeline) + heap(s.stages) + heap(s.pipeline_timeline);
}

}  // namespace ptsim::reports
