// runtime/exec/executor.cpp — TaskGraph → storage → ops in order. Storage, every byte of it allocated by the
// Backend: one flat weight buffer, one flat gradient buffer, one input buffer, one small scalar buffer (the
// losses), and one activation arena laid out exactly as models::plan_memory says for the storage graph
// (offsets × sizeof(T)/4, i.e. ×2 for f64). The executor names storage only as DeviceSpans and moves values
// through the backend's copies. Body ops go to the Backend; the step tail (all-reduce, global norm, optimizer)
// is driven here because it needs the Communicator and the Optimizer.
// Mixed precision (bf16/fp16 graphs): tensors are stored as storage_graph says for the backend (activations
// as 16 bits on a backend that stores_16bit(), the backend converting at the op boundary; fp32 otherwise,
// the executor rounding each 16-bit output after its op: precision.hpp); fp32 master weights in a buffer of
// their own; the tail unscales the gradients and refreshes the 16-bit weight copies after each update.
// Not here: kernels (cpu_backend.cpp), the training loop (runtime/train/).
#include "runtime/exec/executor.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <numbers>
#include <optional>
#include <stdexcept>
#include <type_traits>

#include "core/error.hpp"
#include "core/hash.hpp"
#include "runtime/comm/communicator.hpp"
#include "runtime/exec/backend.hpp"
#include "runtime/exec/cpu_gemm.hpp"  // defines: gemm_set_threads
#include "runtime/exec/cpu_parallel.hpp"  // defines: vector_pass_threads
#include "runtime/exec/precision.hpp"
#include "runtime/exec/step_state.hpp"  // defines: DeviceStepState
#include "runtime/optim/optimizer.hpp"

namespace ptsim::runtime {
namespace {

using core::InputError;
using models::DType;
using models::Op;
using models::OpKind;
using models::Phase;
using models::TaskGraph;
using models::TensorRole;

constexpr size_t kBufferAlignment = 64;  // tensors start on a cache line inside the flat buffers
size_t round_up(size_t bytes) { return (bytes + kBufferAlignment - 1) / kBufferAlignment * kBufferAlignment; }
// Gradients are aligned in elements (Impl::round_up_gradient): 16, 64 bytes of fp32.
constexpr int64_t kGradientAlignElements = kBufferAlignment / sizeof(float);
// A gradient's elements rounded up to the next gradient start (the flat gradient buffer's placement).
size_t aligned_gradient_elements(int64_t elements) {
  return static_cast<size_t>((elements + kGradientAlignElements - 1) / kGradientAlignElements * kGradientAlignElements);
}

bool is_float(DType t) { return t == DType::f32 || t == DType::f16 || t == DType::bf16 || t == DType::f64; }

// Parameter initialisation is counter-based (core/hash.hpp: splitmix64 at a counter, FNV-1a of the
// name), so every element's value depends only on (seed, parameter name, element index).
using core::fnv1a64;
using core::mix64;
double uniform_open(uint64_t bits) { return (static_cast<double>(bits >> 11) + 0.5) * 0x1.0p-53; }  // (0, 1)

}  // namespace

models::TaskGraph storage_graph(const models::TaskGraph& graph, bool stores_16bit) {
  models::TaskGraph g = graph;
  for (models::Tensor& t : g.tensors) {
    const bool kept = stores_16bit && (t.role == TensorRole::activation || t.role == TensorRole::workspace ||
                                       t.role == TensorRole::weight || t.role == TensorRole::gradient);
    if (is_16bit_float(t.dtype) && !kept) t.dtype = DType::f32;
  }
  return g;
}

namespace {
// The 16-bit gradient buckets of `stored` (all_reduce ops of 16-bit gradients), in op order: each one's fp32
// bytes, the alignment padding between its tensors included (each tensor rounded up to
// kGradientAlignElements, as the flat gradient buffer places them), and each op's place in that order.
struct Staged16bitBuckets {
  std::vector<size_t> bytes;    // per bucket, in op order
  std::vector<int> ordinal_of;  // per op id: its bucket's index in `bytes`, -1 not a 16-bit bucket
};
Staged16bitBuckets staged_16bit_buckets(const models::TaskGraph& stored) {
  Staged16bitBuckets b;
  b.ordinal_of.assign(stored.ops.size(), -1);
  for (const Op& op : stored.ops) {
    if (op.kind != OpKind::all_reduce || op.inputs.empty() || !is_16bit_float(stored.tensor(op.inputs.front()).dtype))
      continue;
    size_t elements = 0;
    for (int id : op.inputs) elements += aligned_gradient_elements(stored.tensor(id).elements());
    b.ordinal_of[static_cast<size_t>(op.id)] = static_cast<int>(b.bytes.size());
    b.bytes.push_back(elements * sizeof(float));
  }
  return b;
}
// The staging slot of the bucket with index `ordinal`: with overlap_comm bucket i always takes slot
// i mod kAllReduceStagingSlots (consecutive buckets, started one after the other in backward, alternate), so a
// slot only needs the largest bucket of its own residue; without, one slot (the buckets run one at a time).
size_t staging_slot_for(int ordinal, bool overlap_comm) {
  return overlap_comm ? static_cast<size_t>(ordinal) % kAllReduceStagingSlots : 0;
}
// Each slot's bytes: the largest bucket that takes it (0: no bucket does, never allocated).
std::vector<size_t> staging_slot_sizes(const Staged16bitBuckets& b, bool overlap_comm) {
  std::vector<size_t> sizes(kAllReduceStagingSlots, 0);
  for (size_t i = 0; i < b.bytes.size(); ++i) {
    size_t& size = sizes[staging_slot_for(static_cast<int>(i), overlap_comm)];
    size = std::max(size, b.bytes[i]);
  }
  return sizes;
}
}  // namespace

double all_reduce_staging_bytes(const models::TaskGraph& stored, bool overlap_comm) {
  double total = 0;
  for (size_t size : staging_slot_sizes(staged_16bit_buckets(stored), overlap_comm)) total += static_cast<double>(size);
  return total;
}

double all_reduce_staging_bytes(const models::TaskGraph& stored, bool overlap_comm, const Communicator& comm) {
  for (const Op& op : stored.ops) {
    if (op.kind != OpKind::all_reduce || op.inputs.empty()) continue;
    const DType dtype = stored.tensor(op.inputs.front()).dtype;
    if (is_16bit_float(dtype) && !comm.sums_natively(dtype)) return all_reduce_staging_bytes(stored, overlap_comm);
  }
  return 0.0;  // every bucket is summed in place, in its own dtype
}

namespace {
const char* f64_or_f32(ComputeType c) { return c == ComputeType::f64 ? "f64" : "f32"; }
}  // namespace

struct Executor::Impl {
  TaskGraph graph;
  TaskGraph stored;  // graph with each tensor's dtype as stored (storage_graph): what the backend runs
  ExecutorOptions options;
  models::MemoryPlan plan;
  std::unique_ptr<Backend> backend;
  size_t scalar_bytes = 4;     // storage of one float-like element
  int64_t offset_scale = 1;    // arena offsets × this (2 for f64)
  DeviceBuffer arena, weights, gradients, inputs, masters, scalars, staging;
  // 16-bit gradient buckets are all-reduced in place in their own dtype when the communicator sums it
  // natively (MPI, NCCL, one rank); for one that does not (Communicator::sums_natively), through fp32
  // staging (all_reduce_staging_bytes): a pool of
  // kAllReduceStagingSlots buffers, allocated at first use. Bucket i (op order) always takes slot
  // i mod kAllReduceStagingSlots under overlap_comm (slot 0 without), each slot the size of the largest
  // bucket that takes it (staging_slot_sizes). A bucket holds its slot from its widening until it is
  // narrowed; a bucket whose slot is held first finishes the holder (waits for that all-reduce alone,
  // narrows it): then finished_early[that op].
  struct StagingSlot {
    DeviceBuffer buffer;
    int holder = -1;      // the all_reduce op whose bucket is staged here, -1 none
    Event reduced{};      // recorded on the comm stream right after the holder's all-reduce was started
  };
  std::vector<StagingSlot> staging_slots;
  std::vector<size_t> staging_slot_bytes;  // per slot (staging_slot_sizes)
  std::vector<int> bucket_ordinal;         // per op id (staged_16bit_buckets(stored).ordinal_of)
  std::vector<int> slot_of;           // per op id: the slot its bucket holds, -1
  std::vector<char> finished_early;   // per op id: reduced and narrowed before the tail reached it
  bool gradients_16bit = false;  // the parameter gradients are stored as 16 bits (storage_graph)
  double grad_factor = 1.0;      // this tail's unscale, applied on read when gradients_16bit (1/loss scale)
  std::vector<DeviceSpan> storage;  // per tensor id; invalid when the executor holds none (optimizer state)
  // Per op: the outputs whose graph dtype is f16/bf16 but which are stored as fp32, rounded after the op runs
  // (mixed precision on a backend that does not store them as 16 bits).
  std::vector<std::vector<int>> rounded_outputs;
  std::vector<std::vector<void*>> op_inputs, op_outputs;  // kernel addresses, resolved once
  std::vector<int> body_ops, tail_ops;
  // The scalars kept per micro-step (loss, cross-entropy losses): slot per tensor id (-1: none), their
  // values after the last micro-step.
  std::vector<int> scalar_slot;
  std::vector<double> scalar_values;
  // Op timing: a start and a stop event per op, recorded around it and read after the micro-step / tail.
  std::vector<Event> op_start, op_stop;
  std::vector<int> pending_timings;
  Stream compute_stream, comm_stream;
  Event bucket_ready, bucket_reduced;
  std::vector<double> seconds;
  std::vector<int> executions;
  // Overlap (options.overlap_comm): per body position k, the all_reduce ops whose bucket is final once
  // body_ops[k] has run in the last micro-step; per op id, the collective started for it and not yet waited.
  std::vector<std::vector<int>> buckets_after;
  std::vector<CommRequest> in_flight;
  // [op id]: recorded on the communication stream right after that bucket's in-place all-reduce was started
  // (created at its first start): the compute stream waits for this bucket's sum alone, not the later ones.
  std::vector<Event> bucket_summed;
  Communicator* in_flight_comm = nullptr;
  int in_flight_count = 0;
  double last_norm = std::numeric_limits<double>::quiet_NaN();
  bool last_skipped = false;
  // The step tail's norm verdict on the device (docs/cuda-backend.md, "The optimizer"): Σg² accumulates in
  // tail_sum (one double in backend memory) and finish_step_scalars forms √, clip and skip in a StepScalars,
  // the optimizer's when it stepped (verdict_optimizer), else tail_verdict. last_norm / last_skipped are
  // read from there lazily, once (verdict_unread).
  DeviceBuffer tail_sum, tail_verdict;
  const Optimizer* verdict_optimizer = nullptr;
  int64_t verdict_serial = 0;  // verdict_optimizer->step_serial() when its tail ended
  bool verdict_unread = false;
  // The step state in backend memory (step_state.hpp): the device loss scale once set_device_loss_scale
  // gave one, the micro-step loss sums, a copy of the last verdict. Allocated at first use.
  std::unique_ptr<DeviceStepState> step_state;
  bool factor_on_device = false;  // this tail's unscale is the device loss scale's grad_factor (grad_factor 1)

  Impl(const TaskGraph& g, ExecutorOptions o, std::unique_ptr<Backend> given) : graph(g), options(o) {
    validate();
    scalar_bytes = options.compute == ComputeType::f64 ? sizeof(double) : sizeof(float);
    offset_scale = static_cast<int64_t>(scalar_bytes / sizeof(float));
    backend = given ? std::move(given)
                    : make_backend(options.backend, options.compute, cpu::vector_pass_threads(options.threads),
                                   options.backend_options);
    if (backend->compute() != options.compute)
      throw std::invalid_argument(fmt::format("Executor: the {} backend computes in {}, the options ask for {}",
                                              backend->name(), f64_or_f32(backend->compute()), f64_or_f32(options.compute)));
    // Plan the arena for what is stored, so offsets and sizes are those of the buffers really allocated: on a
    // backend that stores 16-bit activations as 16 bits that is the graph's own plan (the simulator's).
    stored = storage_graph(graph, backend->stores_16bit());
    plan = models::plan_memory(stored);
    cpu::gemm_set_threads(options.threads);  // OpenBLAS's pool (and Eigen's): --threads, not all cores
    allocate();
    seconds.assign(graph.ops.size(), 0.0);
    executions.assign(graph.ops.size(), 0);
    compute_stream = Stream{};
    comm_stream = backend->create_stream();
    bucket_ready = backend->create_event();
    bucket_reduced = backend->create_event();
    for (size_t i = 0; i < graph.ops.size(); ++i) {
      op_start.push_back(backend->create_event());
      op_stop.push_back(backend->create_event());
    }
    place_bucket_starts();
  }

  // Where each bucket's all-reduce can start: after the last body op that writes one of its gradients
  // (the graph's dependency edges into the all_reduce op say the same, and are included; the simulator
  // starts the bucket there too). Only buckets that are one contiguous span (always, for the builder's
  // graphs) are started early: the packed ones would share the staging buffer.
  void place_bucket_starts() {
    buckets_after.assign(body_ops.size(), {});
    in_flight.assign(graph.ops.size(), CommRequest{});
    bucket_summed.assign(graph.ops.size(), Event{});
    std::vector<int> position(graph.ops.size(), -1);
    for (size_t k = 0; k < body_ops.size(); ++k) position[static_cast<size_t>(body_ops[k])] = static_cast<int>(k);
    std::vector<int> last_writer(graph.tensors.size(), -1);
    for (size_t k = 0; k < body_ops.size(); ++k)
      for (int out : graph.ops[static_cast<size_t>(body_ops[k])].outputs) last_writer[static_cast<size_t>(out)] = static_cast<int>(k);
    for (int id : tail_ops) {
      const Op& op = graph.ops[static_cast<size_t>(id)];
      if (op.kind != OpKind::all_reduce || !contiguous(op.inputs) || body_ops.empty()) continue;
      int ready = 0;
      for (int t : op.inputs) ready = std::max(ready, last_writer[static_cast<size_t>(t)]);
      for (auto [e, end] = boost::in_edges(static_cast<size_t>(id), graph.deps); e != end; ++e)
        ready = std::max(ready, position[boost::source(*e, graph.deps)]);
      buckets_after[static_cast<size_t>(ready)].push_back(id);
    }
  }
  ~Impl() {
    // Unwinding from an exception with bucket all-reduces in flight (the trainer then aborts every rank):
    // the collective may still write the gradient buffer, so the backend and its memory are left allocated
    // (a deliberate leak) rather than freed under it. Waiting here instead could hang on a peer that never
    // posts its half.
    if (in_flight_count > 0) {
      static_cast<void>(step_state.release());
      static_cast<void>(backend.release());
      return;
    }
    step_state.reset();
    for (DeviceBuffer b : {arena, weights, gradients, inputs, masters, scalars, staging, tail_sum, tail_verdict})
      if (b.valid()) backend->free(b);
    for (const StagingSlot& slot : staging_slots)
      if (slot.buffer.valid()) backend->free(slot.buffer);
  }

  void validate() const {
    if (graph.recipe.precision == models::Precision::fp8)
      throw InputError("the CPU runtime does not run fp8 graphs (precision fp8: E4M3/E5M2 GEMMs with Transformer "
                       "Engine's delayed scaling need Hopper tensor cores; only the simulator predicts them): build "
                       "the graph with precision fp32, fp16 or bf16");
    if (models::is_mixed_precision(graph.recipe.precision) && options.compute != ComputeType::f32)
      throw InputError(fmt::format("ComputeType::f64 (finite-difference checks) needs a graph built with precision "
                                   "fp32 (got {}): bf16/fp16 graphs run with ComputeType::f32",
                                   models::to_string(graph.recipe.precision)));
    if (graph.recipe.tensor_parallel > 1)
      throw InputError(fmt::format("the CPU runtime does not run tensor parallelism (tensor_parallel = {}): "
                                   "use --tensor-parallel 1",
                                   graph.recipe.tensor_parallel));
    if (graph.recipe.pipeline_parallel > 1 || graph.recipe.zero_stage > 0)
      throw InputError(fmt::format("the CPU runtime does not run pipeline parallelism or ZeRO (pipeline_parallel = {}, "
                                   "zero_stage = {}): only the simulator predicts them",
                                   graph.recipe.pipeline_parallel, graph.recipe.zero_stage));
    for (const Op& op : graph.ops) {
      const bool tail_kind =
          op.kind == OpKind::all_reduce || op.kind == OpKind::grad_norm || op.kind == OpKind::optimizer_update;
      if (models::is_micro_step_phase(op.phase)) {
        if (models::is_communication(op.kind) || op.kind == OpKind::grad_norm || op.kind == OpKind::optimizer_update)
          throw InputError(fmt::format("op {}: {} inside a micro-step is not supported by the CPU runtime", op.name,
                                       models::to_string(op.kind)));
      } else if (!tail_kind) {
        throw InputError(fmt::format("op {}: {} in the step tail is not supported by the CPU runtime", op.name,
                                     models::to_string(op.kind)));
      }
    }
  }

  // Bytes per element of a stored dtype (storage_graph's): 16-bit floats 2, other floats the compute type.
  size_t element_bytes(DType t) const {
    if (is_16bit_float(t)) return 2;
    if (is_float(t)) return scalar_bytes;
    return t == DType::u8 ? 1 : 4;
  }
  size_t storage_bytes(int tensor_id) const {
    const models::Tensor& t = stored.tensor(tensor_id);
    return static_cast<size_t>(t.elements()) * element_bytes(t.dtype);
  }
  // Gradients start every kGradientAlignElements elements of their stored dtype (64 bytes in fp32, 32 in 16
  // bits), so a 16-bit gradient buffer has the fp32 buffer's element layout: the global norm's fixed chunks
  // and lanes (math/lane_sums.hpp) then hold the same elements either way, and give the same double.
  size_t round_up_gradient(int tensor_id, size_t bytes) const {
    const size_t e = element_bytes(stored.tensor(tensor_id).dtype);
    return aligned_gradient_elements(static_cast<int64_t>((bytes + e - 1) / e)) * e;
  }

  void allocate() {
    const size_t n = graph.tensors.size();
    storage.assign(n, DeviceSpan{});
    // Persistent buffers: weights, masters and gradients back to back in tensor order (each tensor on a
    // 64-byte boundary; the padding stays 0), inputs likewise: flat buffers with one view per tensor.
    size_t weight_bytes = 0, grad_bytes = 0, input_bytes = 0, master_bytes = 0;
    for (const auto& t : graph.tensors) {
      if (t.role == TensorRole::weight) weight_bytes += round_up(storage_bytes(t.id));
      if (t.role == TensorRole::master_weight) master_bytes += round_up(storage_bytes(t.id));
      if (t.role == TensorRole::gradient) grad_bytes += round_up_gradient(t.id, storage_bytes(t.id));
      if (t.role == TensorRole::input) input_bytes += round_up(storage_bytes(t.id));
    }
    weights = backend->allocate(weight_bytes);
    gradients = backend->allocate(grad_bytes);
    inputs = backend->allocate(input_bytes);
    masters = backend->allocate(master_bytes);
    const double peak = plan.activations_peak_bytes * static_cast<double>(offset_scale);
    arena = backend->allocate(static_cast<size_t>(peak));
    size_t w = 0, g = 0, in = 0, mw = 0;
    auto place = [](DeviceBuffer b, size_t& at, size_t bytes) {
      const DeviceSpan span{b, at, bytes};
      at += round_up(bytes);
      return span;
    };
    for (const auto& t : graph.tensors) {
      const size_t bytes = storage_bytes(t.id);
      switch (t.role) {
        case TensorRole::weight: storage[t.id] = place(weights, w, bytes); break;
        case TensorRole::gradient: break;  // below, in bucket order
        case TensorRole::input: storage[t.id] = place(inputs, in, bytes); break;
        case TensorRole::master_weight: storage[t.id] = place(masters, mw, bytes); break;
        case TensorRole::activation:
        case TensorRole::workspace: {
          const int64_t offset = plan.offset[static_cast<size_t>(t.id)];
          if (offset < 0) break;  // never produced (no storage needed)
          const size_t at = static_cast<size_t>(offset * offset_scale);
          if (at + bytes > arena.bytes)
            throw std::logic_error(fmt::format("memory plan: tensor {} ({} bytes at offset {}) overflows the {}-byte "
                                               "activation arena",
                                               t.name, bytes, at, arena.bytes));
          storage[t.id] = DeviceSpan{arena, at, bytes};
          break;
        }
        default: break;  // optimizer state (owned by the Optimizer)
      }
    }
    for (int id : gradient_order()) {
      storage[static_cast<size_t>(id)] = DeviceSpan{gradients, g, storage_bytes(id)};
      g += round_up_gradient(id, storage_bytes(id));
    }
    for (const models::Parameter& p : graph.params)
      if (is_16bit_float(stored.tensor(p.gradient).dtype)) gradients_16bit = true;
    staging_slots.assign(kAllReduceStagingSlots, StagingSlot{});
    for (StagingSlot& slot : staging_slots) slot.reduced = backend->create_event();
    const Staged16bitBuckets staged = staged_16bit_buckets(stored);
    staging_slot_bytes = staging_slot_sizes(staged, options.overlap_comm);
    bucket_ordinal = staged.ordinal_of;
    slot_of.assign(graph.ops.size(), -1);
    finished_early.assign(graph.ops.size(), 0);
    allocate_scalars();
    op_inputs.resize(graph.ops.size());
    op_outputs.resize(graph.ops.size());
    rounded_outputs.resize(graph.ops.size());
    for (const Op& op : graph.ops) {
      (models::is_micro_step_phase(op.phase) ? body_ops : tail_ops).push_back(op.id);
      if (op.kind != OpKind::optimizer_update)  // its weight copies are refreshed from the masters instead
        for (int id : op.outputs)
          if (is_16bit_float(graph.tensor(id).dtype) && !is_16bit_float(stored.tensor(id).dtype))
            rounded_outputs[static_cast<size_t>(op.id)].push_back(id);
      if (op.kind == OpKind::optimizer_update) continue;  // reads gradients by parameter index, writes via the Optimizer
      auto resolve = [&](const std::vector<int>& ids, std::vector<void*>& out) {
        for (int id : ids) {
          if (!storage[static_cast<size_t>(id)].valid())
            throw std::logic_error(fmt::format("op {}: tensor {} has no storage", op.name, graph.tensor(id).name));
          out.push_back(backend->kernel_address(storage[static_cast<size_t>(id)]));
        }
      };
      resolve(op.inputs, op_inputs[static_cast<size_t>(op.id)]);
      resolve(op.outputs, op_outputs[static_cast<size_t>(op.id)]);
    }
  }

  // The gradient tensors in the order they lie in the flat gradient buffer: each all_reduce bucket's
  // gradients back to back, buckets in graph order (DDP's gradient-as-bucket-view layout), so every bucket is
  // one span that can be all-reduced in place, also while backward runs; then any gradient in no bucket, in
  // tensor order. Without data parallelism (no all_reduce ops): tensor order.
  std::vector<int> gradient_order() const {
    std::vector<int> order;
    std::vector<char> placed(graph.tensors.size(), 0);
    for (const Op& op : graph.ops)
      if (op.kind == OpKind::all_reduce)
        for (int id : op.inputs)
          if (graph.tensor(id).role == TensorRole::gradient && !placed[static_cast<size_t>(id)]) {
            placed[static_cast<size_t>(id)] = 1;
            order.push_back(id);
          }
    for (const auto& t : graph.tensors)
      if (t.role == TensorRole::gradient && !placed[static_cast<size_t>(t.id)]) order.push_back(t.id);
    return order;
  }

  // One slot per kept scalar: the graph's loss and each cross_entropy op's loss output (each copied into the
  // scalar buffer right after its op, since the plan may reuse its arena bytes at once).
  void allocate_scalars() {
    scalar_slot.assign(graph.tensors.size(), -1);
    int slots = 0;
    auto keep = [&](int id) {
      if (id >= 0 && scalar_slot[static_cast<size_t>(id)] < 0 && storage[static_cast<size_t>(id)].valid())
        scalar_slot[static_cast<size_t>(id)] = slots++;
    };
    keep(graph.loss_tensor);
    for (const Op& op : graph.ops)
      if (op.kind == OpKind::cross_entropy && !op.outputs.empty()) keep(op.outputs[0]);
    scalars = backend->allocate(static_cast<size_t>(slots) * scalar_bytes);
    scalar_values.assign(static_cast<size_t>(slots), std::numeric_limits<double>::quiet_NaN());
  }
  DeviceSpan scalar_span(int slot) const { return DeviceSpan{scalars, static_cast<size_t>(slot) * scalar_bytes, scalar_bytes}; }

  const DeviceSpan& span_of(int tensor_id) const {
    const DeviceSpan& span = storage.at(static_cast<size_t>(tensor_id));
    if (!span.valid())
      throw std::invalid_argument(fmt::format("tensor {} has no storage in the executor", graph.tensor(tensor_id).name));
    return span;
  }
  // Copies out / in. A tensor stored as 16 bits is widened to float on the way out (exact) and rounded to
  // its 16-bit dtype on the way in (to nearest even).
  template <class T>
  std::vector<T> read(int tensor_id) {
    const size_t n = static_cast<size_t>(graph.tensor(tensor_id).elements());
    std::vector<T> values(n);
    const DType as = stored.tensor(tensor_id).dtype;
    if constexpr (std::is_same_v<T, float>) {
      if (is_16bit_float(as)) {
        std::vector<uint16_t> bits(n);
        backend->copy_to_host(bits.data(), span_of(tensor_id));
        widen_16bit(values.data(), bits.data(), n, as);
        return values;
      }
    }
    backend->copy_to_host(values.data(), span_of(tensor_id));
    return values;
  }
  template <class T>
  void write(int tensor_id, std::span<const T> values) {
    const DeviceSpan& span = span_of(tensor_id);
    const DType as = stored.tensor(tensor_id).dtype;
    if (values.size() != static_cast<size_t>(graph.tensor(tensor_id).elements()))
      throw std::invalid_argument(fmt::format("tensor {} holds {} values, {} were given", graph.tensor(tensor_id).name,
                                              graph.tensor(tensor_id).elements(), values.size()));
    if constexpr (std::is_same_v<T, float>) {
      if (is_16bit_float(as)) {
        std::vector<uint16_t> bits(values.size());
        narrow_16bit(bits.data(), values.data(), values.size(), as);
        backend->copy_to_device(span, bits.data());
        return;
      }
    }
    backend->copy_to_device(span, values.data());
  }

  // The spans of `ids` as one span when they lie back to back in one buffer (allowing the alignment padding
  // between them, which holds zeros), in any listed order; nullopt otherwise.
  // The tensors must share one stored dtype (so the span is one array of it); gradients use their alignment
  // (round_up_gradient), other tensors the buffers' 64 bytes.
  std::optional<DeviceSpan> contiguous(const std::vector<int>& ids) const {
    if (ids.empty()) return std::nullopt;
    std::vector<int> sorted = ids;
    std::sort(sorted.begin(), sorted.end(), [&](int a, int b) { return span_of(a).offset < span_of(b).offset; });
    for (size_t k = 0; k + 1 < sorted.size(); ++k) {
      const DeviceSpan &a = span_of(sorted[k]), &b = span_of(sorted[k + 1]);
      const bool gradient = graph.tensor(sorted[k]).role == TensorRole::gradient;
      const size_t end = gradient ? a.offset + round_up_gradient(sorted[k], a.bytes) : round_up(a.offset + a.bytes);
      if (a.buffer.id != b.buffer.id || end != b.offset ||
          stored.tensor(sorted[k]).dtype != stored.tensor(sorted[k + 1]).dtype)
        return std::nullopt;
    }
    const DeviceSpan &first = span_of(sorted.front()), &last = span_of(sorted.back());
    return DeviceSpan{first.buffer, first.offset, last.offset + last.bytes - first.offset};
  }
  std::vector<int> parameter_gradients() const {
    std::vector<int> ids;
    for (const models::Parameter& p : graph.params) ids.push_back(p.gradient);
    return ids;
  }

  // Starts timing `op` (a start and a stop event around it, read in flush_timings: no synchronisation per op).
  void timed(const Op& op, auto&& body) {
    if (!options.time_ops) {
      body();
    } else {
      backend->record(op_start[static_cast<size_t>(op.id)], compute_stream);
      body();
      backend->record(op_stop[static_cast<size_t>(op.id)], compute_stream);
      pending_timings.push_back(op.id);
    }
    ++executions[static_cast<size_t>(op.id)];
  }
  // Adds the recorded ops' times (once per micro-step and once per tail: each op is recorded at most once
  // in between).
  void flush_timings() {
    for (int id : pending_timings)
      seconds[static_cast<size_t>(id)] +=
          backend->elapsed_seconds(op_start[static_cast<size_t>(id)], op_stop[static_cast<size_t>(id)]);
    pending_timings.clear();
  }

  // One copy back of every kept scalar.
  void read_scalars() {
    if (scalar_values.empty()) return;
    if (options.compute == ComputeType::f64) {
      std::vector<double> v(scalar_values.size());
      backend->copy_to_host(v.data(), DeviceSpan::of(scalars));
      std::copy(v.begin(), v.end(), scalar_values.begin());
    } else {
      std::vector<float> v(scalar_values.size());
      backend->copy_to_host(v.data(), DeviceSpan::of(scalars));
      std::copy(v.begin(), v.end(), scalar_values.begin());
    }
  }

  double run_micro_step(int64_t step, int64_t micro_step, Communicator* comm) {
    run_micro_step_body(step, micro_step, comm);
    read_scalars();
    flush_timings();
    const int loss_slot = graph.loss_tensor >= 0 ? scalar_slot[static_cast<size_t>(graph.loss_tensor)] : -1;
    return loss_slot >= 0 ? scalar_values[static_cast<size_t>(loss_slot)] : std::numeric_limits<double>::quiet_NaN();
  }

  // The micro-step with its kept scalars added to the step state's sums (zeroed at micro-step 0) on the
  // backend instead of read back: sum k += the value of summed[k] (the host's `loss_sum += ...`).
  void run_micro_step_summed(int64_t step, int64_t micro_step, Communicator* comm, std::span<const int> summed) {
    if (summed.size() > kStepStateSums)
      throw std::invalid_argument(fmt::format("run_micro_step_summed: at most {} sums, got {}", kStepStateSums,
                                              summed.size()));
    std::vector<int> slots;
    for (int id : summed) {
      if (id < 0 || static_cast<size_t>(id) >= scalar_slot.size() || scalar_slot[static_cast<size_t>(id)] < 0)
        throw std::invalid_argument(fmt::format("run_micro_step_summed: tensor {} is not a scalar the executor keeps "
                                                "(the loss or a cross_entropy loss)", id));
      slots.push_back(scalar_slot[static_cast<size_t>(id)]);
    }
    DeviceStepState& state = step_state_buffer();
    run_micro_step_body(step, micro_step, comm);
    if (micro_step == 0) backend->fill_zero(state.sums());
    for (size_t k = 0; k < slots.size(); ++k) backend->add_to_sum(state.sum(k), scalar_span(slots[k]));
    flush_timings();
  }

  DeviceStepState& step_state_buffer() {
    if (!step_state) step_state = std::make_unique<DeviceStepState>(*backend);
    return *step_state;
  }

  void run_micro_step_body(int64_t step, int64_t micro_step, Communicator* comm) {
    if (in_flight_count > 0)
      throw std::logic_error("run_micro_step: bucket all-reduces of the last micro-step are still in flight; run the "
                             "step tail (run_step_tail) first");
    // The last micro-step of an optimizer step starts each bucket's all-reduce as soon as its gradients are
    // final (data parallel only; the tail waits for them).
    const bool overlap = comm && options.overlap_comm && micro_step == graph.micro_steps - 1 &&
                         graph.recipe.data_parallel > 1;
    if (overlap) check_communicator(*comm);
    if (micro_step == 0) {
      backend->fill_zero(DeviceSpan::of(gradients));
      grad_factor = 1.0;  // read_gradient: the new step's gradients, as stored (the last tail's unscale is over)
      factor_on_device = false;
      forget_staging();   // a tail that threw may have left buckets marked or slots held
    }
    const OpContext context{options.seed, step, micro_step};
    for (size_t k = 0; k < body_ops.size(); ++k) {
      if (options.stop_requested && options.stop_requested()) {
        flush_timings();
        throw MicroStepAbandoned();
      }
      const Op& op = graph.ops[static_cast<size_t>(body_ops[k])];
      timed(op, [&] {
        try {
          backend->run(stored, op, op_inputs[static_cast<size_t>(op.id)], op_outputs[static_cast<size_t>(op.id)], context);
          round_outputs(op);
        } catch (const InputError& e) {
          throw InputError(fmt::format("op {} ({}): {}", op.name, models::to_string(op.kind), e.what()));
        }
      });
      // The losses have no reader in the body, so the plan may reuse their bytes right after: keep them now.
      for (int out : op.outputs)
        if (const int slot = scalar_slot[static_cast<size_t>(out)]; slot >= 0)
          backend->copy(scalar_span(slot), storage[static_cast<size_t>(out)]);
      if (options.after_op) options.after_op(op);
      if (overlap) {
        for (int bucket : buckets_after[k]) start_bucket(graph.ops[static_cast<size_t>(bucket)], *comm);
        if (in_flight_count > 0) comm->progress();
      }
    }
  }

  void check_communicator(const Communicator& comm) const {
    if (comm.size() != graph.recipe.data_parallel)
      throw InputError(fmt::format("the communicator has {} ranks but the graph was built for data_parallel = {}: "
                                   "build it with --data-parallel {}",
                                   comm.size(), graph.recipe.data_parallel, comm.size()));
  }

  // Starts bucket `op`'s sum on the communication stream, after the compute stream's work so far, in place in
  // the gradient buffer in the bucket's own dtype. A 16-bit bucket the communicator cannot sum in its type is
  // widened into a staging slot first (take_staging_slot: which may finish an older bucket).
  void start_bucket(const Op& op, Communicator& comm) {
    const DeviceSpan whole = *contiguous(op.inputs);
    const bool staged = staged_through_fp32(op, comm);
    divide_before_sum(op, comm);
    const DeviceSpan reduced = staged ? widen_bucket({{op.inputs.front(), whole}}, take_staging_slot(op, comm)) : whole;
    backend->record(bucket_ready, compute_stream);
    backend->wait(comm_stream, bucket_ready);
    in_flight[static_cast<size_t>(op.id)] =
        comm.start_all_reduce_sum(*backend, reduced, staged ? DType::f32 : bucket_dtype(op), comm_stream);
    // This bucket's sum alone (not the later buckets queued behind it): what averaging it, or reusing its
    // staging slot, waits for.
    backend->record(staged ? staging_slots[static_cast<size_t>(slot_of[static_cast<size_t>(op.id)])].reduced
                           : summed_event(op),
                    comm_stream);
    in_flight_comm = &comm;
    ++in_flight_count;
  }

  // Bucket `op`'s own completion event (bucket_summed), created the first time it is started.
  Event summed_event(const Op& op) {
    Event& event = bucket_summed[static_cast<size_t>(op.id)];
    if (event.id < 0) event = backend->create_event();
    return event;
  }

  // A 16-bit store of what the op wrote: the next reader sees exactly the values a GPU kernel that computes in
  // fp32 and writes f16/bf16 would leave (accumulating outputs: fp32 sum of the stored value and the new
  // terms, rounded once, as a GEMM with beta = 1 does).
  void round_outputs(const Op& op) {
    for (int t : rounded_outputs[static_cast<size_t>(op.id)])
      backend->round_to_dtype(storage[static_cast<size_t>(t)], graph.tensor(t).dtype);
  }

  // Mixed precision: the 16-bit compute copy of parameter p is its fp32 master rounded (what Apex's O2 and
  // Megatron copy into the model after each step). No-op under fp32 (the weight is its own master).
  void refresh_weight_copy(const models::Parameter& p) {
    if (p.master < 0) return;
    const DType stored_as = stored.tensor(p.weight).dtype;
    if (is_16bit_float(stored_as)) return backend->convert(span_of(p.weight), stored_as, span_of(p.master), DType::f32);
    backend->copy(span_of(p.weight), span_of(p.master));  // fp32 storage of a 16-bit value: copy, then round
    backend->round_to_dtype(span_of(p.weight), graph.tensor(p.weight).dtype);
  }
  void refresh_weight_copies() {
    for (const models::Parameter& p : graph.params) refresh_weight_copy(p);
  }

  // x ← x·factor over the tensors `ids`: one call when they are back to back, else one per tensor. 16-bit
  // storage: widened, multiplied in fp32 and rounded back (Backend::scale_16bit).
  void scale_tensors(const std::vector<int>& ids, double factor) {
    auto scale = [&](const DeviceSpan& span, DType stored_as) {
      if (is_16bit_float(stored_as)) backend->scale_16bit(span, stored_as, factor);
      else backend->scale(span, factor);
    };
    if (auto whole = contiguous(ids)) return scale(*whole, stored.tensor(ids.front()).dtype);
    for (int id : ids) scale(span_of(id), stored.tensor(id).dtype);
  }
  // Σ x² over the tensors `ids` (one pass over the flat range when they are back to back).
  // 16-bit gradients: of the values × grad_factor (the unscale on read), the same double as unscaling fp32
  // storage in place and summing it (Backend::scaled_sum_of_squares).
  double sum_of_squares(const std::vector<int>& ids) {
    double sum = 0;  // 0 + the one pass's value is that value: the same double either way
    for_each_gradient_range(ids, [&](const DeviceSpan& span, models::DType dtype, double factor) {
      sum += backend->scaled_sum_of_squares(span, dtype, factor);
    });
    return sum;
  }
  // f(span, dtype, factor) over the tensors `ids` as the norm reads them: one range when they are back to back,
  // else tensor by tensor in order; 16-bit gradients × grad_factor (the unscale on read), fp32 ones × 1.
  template <class F>
  void for_each_gradient_range(const std::vector<int>& ids, F&& f) {
    const double factor = gradients_16bit ? grad_factor : 1.0;
    if (auto whole = contiguous(ids)) return f(*whole, stored.tensor(ids.front()).dtype, factor);
    for (int id : ids) f(span_of(id), stored.tensor(id).dtype, factor);
  }

  // Gradients ÷ loss scale, in fp32 (Apex's fp32 master gradients; torch GradScaler.unscale_): the values
  // clipping, the norm and the optimizer see. Skipped when the scale is 1.
  // 16-bit gradients are not rewritten: the factor 1/loss scale is applied where they are read (the norm, the
  // optimizer: StepInputs::grad_factor), giving the same fp32 values without storing any unscaled value.
  void unscale_gradients(double loss_scale) {
    grad_factor = 1.0;
    if (factor_on_device) return;  // the device loss scale's grad_factor, read where the gradients are read
    if (loss_scale == 1.0) return;
    if (gradients_16bit) grad_factor = 1.0 / loss_scale;
    else scale_tensors(parameter_gradients(), 1.0 / loss_scale);
  }

  // One collective per bucket, on the communication stream after the compute stream's work, in the bucket's
  // own dtype (16-bit buckets too, when the communicator sums them natively): in place when
  // the bucket's gradients are back to back in the flat gradient buffer (the usual case: buckets are runs of
  // parameters), else packed into a staging buffer and unpacked again. Then averaged over ranks.
  void all_reduce(const Op& op, Communicator& comm) {
    if (finished_early[static_cast<size_t>(op.id)]) {  // its staging slot was reused: waited and narrowed then
      finished_early[static_cast<size_t>(op.id)] = 0;
      return;
    }
    if (in_flight[static_cast<size_t>(op.id)].valid()) return finish_started_bucket(op, comm);  // started in backward
    std::optional<DeviceSpan> whole = contiguous(op.inputs);
    if (staged_through_fp32(op, comm)) return all_reduce_16bit(op, comm, whole);
    divide_before_sum(op, comm);
    size_t total = 0;
    if (!whole) {  // pack
      for (int id : op.inputs) total += span_of(id).bytes;
      if (staging.bytes < total) {
        if (staging.valid()) backend->free(staging);
        staging = backend->allocate(total);
      }
      size_t at = 0;
      for (int id : op.inputs) {
        backend->copy(DeviceSpan::of(staging).sub(at, span_of(id).bytes), span_of(id));
        at += span_of(id).bytes;
      }
    }
    sum_on_comm_stream(comm, whole ? *whole : DeviceSpan::of(staging).sub(0, total), bucket_dtype(op));
    if (!whole) {  // unpack
      size_t at = 0;
      for (int id : op.inputs) {
        backend->copy(span_of(id), DeviceSpan::of(staging).sub(at, span_of(id).bytes));
        at += span_of(id).bytes;
      }
    }
    average(op, comm);
  }
  // Sums `span` over the ranks on the communication stream, after the compute stream's work so far; the
  // compute stream's later work waits for the sum.
  void sum_on_comm_stream(Communicator& comm, const DeviceSpan& span, DType dtype) {
    backend->record(bucket_ready, compute_stream);
    backend->wait(comm_stream, bucket_ready);
    comm.all_reduce_sum(*backend, span, dtype, comm_stream);
    backend->record(bucket_reduced, comm_stream);
    backend->wait(compute_stream, bucket_reduced);
  }
  // The dtype the bucket's elements are stored as: f16/bf16 (16-bit storage), else the compute type.
  DType bucket_dtype(const Op& op) const {
    if (bucket_is_16bit(op)) return stored.tensor(op.inputs.front()).dtype;
    return options.compute == ComputeType::f64 ? DType::f64 : DType::f32;
  }
  // Whether the bucket is all-reduced through fp32 staging: 16-bit elements that `comm` cannot sum in their
  // own type (Communicator::sums_natively; MPI, NCCL and one rank can: a test communicator may not).
  bool staged_through_fp32(const Op& op, const Communicator& comm) const {
    return bucket_is_16bit(op) && !comm.sums_natively(bucket_dtype(op));
  }
  // 16-bit gradient buckets (16-bit storage) on a communicator that sums only fp32. Each bucket is widened
  // into fp32 staging (exact), all-reduced there, averaged in fp32 and narrowed back to 16 bits (round to
  // nearest even): the values the fp32 storage of 16-bit gradients gave (fp32 sum, × fp32(1/N), round_to_dtype).
  // Pieces: the bucket's one span when its gradients are back to back, else one per tensor, packed.
  using Pieces = std::vector<std::pair<int, DeviceSpan>>;  // (a tensor of the piece's dtype, its 16-bit span)
  bool bucket_is_16bit(const Op& op) const {
    const DType first = stored.tensor(op.inputs.front()).dtype;
    for (int id : op.inputs)
      if (stored.tensor(id).dtype != first)
        throw std::logic_error(fmt::format("op {}: a bucket mixes gradient dtypes (the builder gives one per graph)", op.name));
    return is_16bit_float(first);
  }
  void all_reduce_16bit(const Op& op, Communicator& comm, const std::optional<DeviceSpan>& whole) {
    Pieces pieces;
    if (whole) pieces.emplace_back(op.inputs.front(), *whole);
    else
      for (int id : op.inputs) pieces.emplace_back(id, span_of(id));
    const size_t slot = take_staging_slot(op, comm);
    const DeviceSpan staged = widen_bucket(pieces, slot);
    sum_on_comm_stream(comm, staged, DType::f32);
    narrow_bucket(pieces, slot, comm);
    release_staging_slot(op);
  }
  // A bucket started from backward: wait for its sum, then (on the compute stream, after the sum) average it
  // in place (summed in its own dtype) or narrow it from its staging slot (16-bit through fp32 staging).
  void finish_started_bucket(const Op& op, Communicator& comm) {
    if (&comm != in_flight_comm)
      throw std::logic_error("run_step_tail: the bucket all-reduces were started on another communicator");
    CommRequest& started = in_flight[static_cast<size_t>(op.id)];
    comm.wait(started);
    started = CommRequest{};
    --in_flight_count;
    // The compute stream waits for this bucket's sum only (its own event, or its slot's), not for the buckets
    // started after it: averaging bucket i, or evicting the oldest slot in backward, does not stall on the
    // newer all-reduces.
    if (!staged_through_fp32(op, comm)) {
      backend->wait(compute_stream, bucket_summed[static_cast<size_t>(op.id)]);
      return average(op, comm);
    }
    const size_t slot = static_cast<size_t>(slot_of[static_cast<size_t>(op.id)]);
    backend->wait(compute_stream, staging_slots[slot].reduced);
    narrow_bucket({{op.inputs.front(), *contiguous(op.inputs)}}, slot, comm);
    release_staging_slot(op);
  }
  // Bucket `op`'s staging slot (staging_slot_for). Held by an older bucket: that one is finished first
  // (finish_started_bucket: the same wait and narrowing the tail would do, earlier; its gradients are final,
  // so the same bits). Bounds the staging at all_reduce_staging_bytes.
  size_t take_staging_slot(const Op& op, Communicator& comm) {
    const int ordinal = bucket_ordinal[static_cast<size_t>(op.id)];
    if (ordinal < 0) throw std::logic_error(fmt::format("op {}: not a 16-bit gradient bucket (staged_16bit_buckets)", op.name));
    const size_t pick = staging_slot_for(ordinal, options.overlap_comm);
    if (const int holder = staging_slots[pick].holder; holder >= 0) {
      finish_started_bucket(graph.ops[static_cast<size_t>(holder)], comm);
      finished_early[static_cast<size_t>(holder)] = 1;
    }
    StagingSlot& slot = staging_slots[pick];
    if (!slot.buffer.valid()) slot.buffer = backend->allocate(staging_slot_bytes[pick]);
    slot.holder = op.id;
    slot_of[static_cast<size_t>(op.id)] = static_cast<int>(pick);
    return pick;
  }
  // No bucket in flight (run_micro_step checked): every slot free, no bucket marked as finished early.
  void forget_staging() {
    for (StagingSlot& slot : staging_slots) slot.holder = -1;
    std::fill(slot_of.begin(), slot_of.end(), -1);
    std::fill(finished_early.begin(), finished_early.end(), 0);
  }
  void release_staging_slot(const Op& op) {
    int& slot = slot_of[static_cast<size_t>(op.id)];
    staging_slots[static_cast<size_t>(slot)].holder = -1;
    slot = -1;
  }
  // The bucket's fp32 staging in slot `slot` (all_reduce_staging_bytes counts the slots).
  DeviceSpan bucket_staging_span(const Pieces& pieces, size_t slot) {
    size_t bytes = 0;
    for (const auto& piece : pieces) bytes += piece.second.bytes * 2;
    const DeviceBuffer& buffer = staging_slots[slot].buffer;
    if (buffer.bytes < bytes)
      throw std::logic_error(fmt::format("a 16-bit bucket needs {} bytes of fp32 staging, more than its slot's {} "
                                         "(staging_slot_sizes)", bytes, buffer.bytes));
    return DeviceSpan::of(buffer).sub(0, bytes);
  }
  DeviceSpan widen_bucket(const Pieces& pieces, size_t slot) {
    const DeviceSpan staged = bucket_staging_span(pieces, slot);
    size_t at = 0;
    for (const auto& [id, span] : pieces) {
      backend->convert(staged.sub(at, span.bytes * 2), DType::f32, span, stored.tensor(id).dtype);
      at += span.bytes * 2;
    }
    return staged;
  }
  void narrow_bucket(const Pieces& pieces, size_t slot, const Communicator& comm) {
    const DeviceSpan staged = bucket_staging_span(pieces, slot);
    backend->scale(staged, 1.0 / comm.size());
    size_t at = 0;
    for (const auto& [id, span] : pieces) {
      backend->convert(span, stored.tensor(id).dtype, staged.sub(at, span.bytes * 2), DType::f32);
      at += span.bytes * 2;
    }
  }

  // The sum over ranks → the mean (gradients averaged, as DDP does). A bucket summed in its own 16-bit type
  // is divided before the sum, on the compute stream before the bucket is marked ready, as PyTorch DDP's
  // default hook does ("Apply the division first to avoid overflow, especially for FP16"): sum-then-divide
  // overflows fp16 to inf once |Σg| ≥ 65520 even where Σg/N fits. Each element × fp32(1/N), rounded once
  // (scale_16bit), then one rounding per add in the sum (docs/executor.md). fp32 buckets, and 16-bit ones
  // through fp32 staging (narrow_bucket), divide after the sum.
  bool divides_before_sum(const Op& op, const Communicator& comm) const {
    return bucket_is_16bit(op) && !staged_through_fp32(op, comm);
  }
  void divide_before_sum(const Op& op, const Communicator& comm) {
    if (divides_before_sum(op, comm)) scale_tensors(op.inputs, 1.0 / comm.size());
  }
  // After the sum: × fp32(1/N) in fp32; fp32 storage of 16-bit values (the emulation) is rounded to the 16-bit
  // type after. Nothing left to do for a bucket divided before its sum.
  void average(const Op& op, const Communicator& comm) {
    if (divides_before_sum(op, comm)) return;
    scale_tensors(op.inputs, 1.0 / comm.size());
    for (int id : op.inputs) backend->round_to_dtype(span_of(id), graph.tensor(id).dtype);
  }

  // The optimizer runs on this executor's backend over its storage: slot i is graph.params[i]'s fp32 (master)
  // weight and gradient, as param_slots() gives them.
  void check_slots(const Optimizer& optimizer) {
    const auto& slots = optimizer.slots();
    if (&optimizer.backend() != backend.get())
      throw std::invalid_argument("the optimizer was built on another backend: build it on Executor::backend()");
    if (slots.size() != graph.params.size())
      throw std::invalid_argument(fmt::format("optimizer has {} slots, the graph {} parameters: build it from "
                                              "Executor::param_slots()",
                                              slots.size(), graph.params.size()));
    auto same = [](const DeviceSpan& a, const DeviceSpan& b) {
      return a.buffer.id == b.buffer.id && a.offset == b.offset && a.bytes == b.bytes;
    };
    for (size_t i = 0; i < slots.size(); ++i) {
      const models::Parameter& p = graph.params[i];
      if (!same(slots[i].weight, span_of(p.master >= 0 ? p.master : p.weight)) || !same(slots[i].grad, span_of(p.gradient)))
        throw std::invalid_argument(fmt::format("optimizer slot {} ({}) does not point at the executor's storage of "
                                                "{}: build the optimizer from Executor::param_slots()",
                                                i, slots[i].name, p.name));
    }
  }

  // ---- the step tail's norm verdict, formed on the device ----
  DeviceSpan small_buffer(DeviceBuffer& buffer, size_t bytes) {
    if (!buffer.valid()) buffer = backend->allocate(bytes);
    return DeviceSpan::of(buffer);
  }
  DeviceSpan tail_sum_span() { return small_buffer(tail_sum, sizeof(double)); }
  // tail_sum ← Σ x² over the tensors `ids`, queued without a read back: the double sum_of_squares(ids)
  // returns (16-bit gradients × grad_factor; one pass over a back-to-back range, else tensor by tensor in
  // order, 0 + each as the host adds them).
  void queue_sum_of_squares(const std::vector<int>& ids) {
    const DeviceSpan sum = tail_sum_span();
    backend->fill_zero(sum);
    for_each_gradient_range(ids, [&](const DeviceSpan& span, models::DType dtype, double factor) {
      if (factor_on_device) backend->scaled_sum_of_squares_into_by(span, dtype, step_state->grad_factor(), sum);
      else backend->scaled_sum_of_squares_into(span, dtype, factor, sum);
    });
  }
  // After the tail: the StepScalars holding this tail's verdict (the optimizer's, or tail_verdict finished
  // here without clipping when no optimizer stepped), and the grad_norm op's f32 output copied from it.
  void finish_verdict(const Optimizer* stepped, int norm_output) {
    DeviceSpan verdict;
    if (stepped) verdict = stepped->step_scalars_span();
    else {
      verdict = small_buffer(tail_verdict, sizeof(optim_math::StepScalars));
      backend->finish_step_scalars(verdict, tail_sum_span(), 0.0);
    }
    if (norm_output >= 0)
      backend->copy(span_of(norm_output),
                    verdict.sub(offsetof(optim_math::StepScalars, grad_norm_f32), sizeof(float)));
    verdict_optimizer = stepped;
    verdict_serial = stepped ? stepped->step_serial() : 0;
    verdict_unread = true;
  }
  // last_norm / last_skipped from the device verdict: one small copy the first time they are asked.
  void read_verdict() {
    if (!verdict_unread) return;
    if (verdict_optimizer) {
      if (verdict_optimizer->step_serial() != verdict_serial)
        throw std::logic_error("Executor::last_grad_norm/last_step_skipped: the optimizer of the last run_step_tail "
                               "began another step since; ask before stepping it again");
      const StepVerdict v = verdict_optimizer->last_step_verdict();  // may throw a queued device error: ask again
      last_norm = v.grad_norm;
      last_skipped = v.skipped;
      verdict_unread = false;
      return;
    }
    optim_math::StepScalars s;
    backend->copy_to_host(&s, DeviceSpan::of(tail_verdict));
    last_norm = s.grad_norm;
    last_skipped = false;  // no optimizer stepped: nothing was skipped, whatever the norm
    verdict_unread = false;
  }

  // The device loss scale's preconditions (set_device_loss_scale): an optimizer to decide the skip, f32
  // compute and 16-bit gradients (fp32 ones would be rescaled in place by a host factor).
  void check_device_loss_scale(const Optimizer* optimizer) const {
    if (!step_state || !step_state->has_loss_scale())
      throw std::logic_error("run_step_tail_device_scale: no device loss scale (call set_device_loss_scale first)");
    if (!optimizer)
      throw std::invalid_argument("run_step_tail_device_scale: the device loss scale is updated from the optimizer's "
                                  "verdict; pass an optimizer");
  }
  // After the tail: a copy of the verdict into the step state (read back with the sums in one copy), and with
  // a device loss scale its update from that verdict (the next step's seed and unscale).
  void finish_step_state(const Optimizer* stepped, bool device_scale) {
    const DeviceSpan verdict = stepped ? stepped->step_scalars_span() : DeviceSpan::of(tail_verdict);
    DeviceStepState& state = step_state_buffer();
    backend->copy(state.verdict(), verdict);
    if (device_scale) backend->update_loss_scale(state.loss_scale(), state.verdict());
  }

  void run_step_tail(Communicator* comm, Optimizer* optimizer, double lr, double loss_scale, bool device_scale) {
    if (device_scale) check_device_loss_scale(optimizer);
    const bool f64 = options.compute == ComputeType::f64;
    if (!(loss_scale > 0) || !std::isfinite(loss_scale))
      throw std::invalid_argument(fmt::format("run_step_tail: loss scale must be finite and > 0, got {}", loss_scale));
    if (f64 && loss_scale != 1.0) throw InputError("loss scaling needs ComputeType::f32 (f64 is for gradient checks)");
    if (optimizer && f64)
      throw InputError("optimizer updates run in fp32: use ComputeType::f32 (f64 is for gradient checks)");
    if (comm) check_communicator(*comm);
    if (in_flight_count > 0 && comm != in_flight_comm)
      throw std::logic_error("run_step_tail: bucket all-reduces were started on a communicator; pass the same one");
    if (optimizer) check_slots(*optimizer);
    last_norm = std::numeric_limits<double>::quiet_NaN();
    last_skipped = false;
    verdict_unread = false;
    verdict_optimizer = nullptr;
    grad_factor = 1.0;
    factor_on_device = device_scale;
    bool in_step = false;
    bool unscaled = false;
    bool summed = false;   // tail_sum holds this tail's Σg² (f32 compute: the norm stays on the device)
    int norm_output = -1;  // the grad_norm op's output, written from the verdict after the tail
    // Unscale once the gradients are final (after every all-reduce, before the norm and the first update).
    auto unscale_once = [&] {
      if (!unscaled && !f64) unscale_gradients(loss_scale);
      unscaled = true;
    };
    for (int id : tail_ops) {
      const Op& op = graph.ops[static_cast<size_t>(id)];
      switch (op.kind) {
        case OpKind::all_reduce:
          if (!comm) {
            if (graph.recipe.data_parallel > 1)
              throw InputError(fmt::format("op {}: the graph was built for data_parallel = {} but no communicator was "
                                           "given",
                                           op.name, graph.recipe.data_parallel));
            break;  // one rank: the average is the gradient itself
          }
          timed(op, [&] { all_reduce(op, *comm); });
          break;
        case OpKind::grad_norm:
          unscale_once();
          timed(op, [&] {
            if (!f64) {  // Σg² into tail_sum; √ and the output after the tail (finish_verdict)
              queue_sum_of_squares(op.inputs);
              summed = true;
              norm_output = op.outputs.at(0);
              return;
            }
            last_norm = std::sqrt(sum_of_squares(op.inputs));  // f64 (gradient checks): one small copy
            write<double>(op.outputs.at(0), std::span<const double>(&last_norm, 1));
          });
          break;
        case OpKind::optimizer_update: {
          if (!optimizer) break;
          unscale_once();
          timed(op, [&] {
            if (!in_step) {
              if (!summed) queue_sum_of_squares(parameter_gradients());  // no grad_norm op: the overflow check
              summed = true;
              // The norm, clip divisor and skip flag (non-finite norm: the passes change nothing) are formed
              // on the compute stream; nothing is read back here.
              if (factor_on_device) optimizer->step_begin_on_device(lr, tail_sum_span(), step_state->grad_factor());
              else optimizer->step_begin_on_device(lr, tail_sum_span(), grad_factor);
              in_step = true;
            }
            std::vector<size_t> slots(op.attrs.params.begin(), op.attrs.params.end());
            optimizer->update(slots);
            for (size_t p : slots) refresh_weight_copy(graph.params[p]);
          });
          break;
        }
        default:
          throw std::logic_error(fmt::format("op {}: {} is not a step-tail op", op.name, models::to_string(op.kind)));
      }
    }
    if (in_step) optimizer->step_end();
    if (device_scale && !in_step)
      throw std::logic_error("run_step_tail_device_scale: the graph has no optimizer_update op to decide the skip");
    if (summed) {
      finish_verdict(in_step ? optimizer : nullptr, norm_output);
      finish_step_state(in_step ? optimizer : nullptr, device_scale);
    }
    flush_timings();
  }

  // BERT / GPT-2 initialisation (Devlin et al. 2019, initializer_range 0.02; HF _init_weights): matrices and
  // embedding tables ~ normal(0, 0.02), LayerNorm gains 1, LayerNorm biases and linear biases 0; padded
  // vocabulary rows 0. Computed on the host, copied in once per parameter.
  template <class T>
  void init_parameters(uint64_t seed) {
    std::vector<char> is_gain(graph.tensors.size(), 0);
    for (const Op& op : graph.ops)
      if (op.kind == OpKind::layernorm) is_gain[static_cast<size_t>(op.inputs.at(1))] = 1;
    const std::vector<char> padded = vocabulary_padded_weights();
    constexpr double kStd = 0.02;
    for (const models::Parameter& p : graph.params) {
      const int target = p.master >= 0 ? p.master : p.weight;  // fp32 master under mixed precision
      std::vector<T> w(static_cast<size_t>(graph.tensor(target).elements()));
      const auto& shape = graph.tensor(p.weight).shape;
      if (is_gain[static_cast<size_t>(p.weight)]) {
        std::fill(w.begin(), w.end(), T(1));
      } else if (shape.size() < 2) {
        std::fill(w.begin(), w.end(), T(0));
      } else {
        const uint64_t key = mix64(seed ^ fnv1a64(p.name));
        for (size_t i = 0; i < w.size(); ++i) {  // Box–Muller on two counter-based uniforms
          const double u1 = uniform_open(mix64(key + 2 * i)), u2 = uniform_open(mix64(key + 2 * i + 1));
          w[i] = static_cast<T>(kStd * std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2));
        }
      }
      if (padded[static_cast<size_t>(p.weight)]) {
        const size_t row = w.size() / static_cast<size_t>(graph.model.padded_vocab_size());
        std::fill(w.begin() + static_cast<std::ptrdiff_t>(static_cast<size_t>(graph.model.vocab_size) * row), w.end(), T(0));
      }
      write<T>(target, w);
    }
    refresh_weight_copies();
    backend->fill_zero(DeviceSpan::of(gradients));
  }

  // Rows ≥ vocab_size of the word table and the MLM decoder bias are GEMM padding (never looked up, left out
  // of the softmax): start them at 0 so they stay 0 (their gradient is 0) and do not count in LAMB's ‖w‖.
  // Per tensor id: whether it is such a weight.
  std::vector<char> vocabulary_padded_weights() const {
    std::vector<char> padded_weight(graph.tensors.size(), 0);
    const int64_t vocab = graph.model.vocab_size, padded = graph.model.padded_vocab_size();
    if (padded == vocab) return padded_weight;
    std::vector<int> tables;
    for (const Op& op : graph.ops) {
      if (op.kind == OpKind::embedding && op.inputs.at(1) == graph.inputs.input_ids) tables.push_back(op.inputs[0]);
      if (op.kind == OpKind::cross_entropy && op.attrs.valid_classes > 0) {
        const int producer = graph.tensor(op.inputs.at(0)).producer;
        if (producer >= 0 && graph.op(producer).kind == OpKind::gemm && graph.op(producer).attrs.gemm.has_bias)
          tables.push_back(graph.op(producer).inputs.at(2));
      }
    }
    for (int id : tables) {
      const models::Tensor& t = graph.tensor(id);
      if (t.role == TensorRole::weight && !t.shape.empty() && t.shape[0] == padded) padded_weight[static_cast<size_t>(id)] = 1;
    }
    return padded_weight;
  }
};

namespace {
std::unique_ptr<Backend> non_null(std::unique_ptr<Backend> backend) {
  if (!backend) throw std::invalid_argument("Executor: the backend given is null");
  return backend;
}
}  // namespace

Executor::Executor(const models::TaskGraph& graph, ExecutorOptions options)
    : impl_(std::make_unique<Impl>(graph, options, nullptr)) {}
Executor::Executor(const models::TaskGraph& graph, ExecutorOptions options, std::unique_ptr<Backend> backend)
    : impl_(std::make_unique<Impl>(graph, options, non_null(std::move(backend)))) {}
Executor::~Executor() = default;

const models::TaskGraph& Executor::graph() const { return impl_->graph; }
const models::MemoryPlan& Executor::plan() const { return impl_->plan; }
size_t Executor::allocated_activation_bytes() const { return impl_->arena.bytes; }
Executor::ParameterBytes Executor::allocated_parameter_bytes() const {
  return {impl_->weights.bytes, impl_->masters.bytes, impl_->gradients.bytes};
}
ComputeType Executor::compute() const { return impl_->options.compute; }
Backend& Executor::backend() { return *impl_->backend; }

void Executor::init_parameters(uint64_t seed) {
  if (impl_->options.compute == ComputeType::f64) impl_->init_parameters<double>(seed);
  else impl_->init_parameters<float>(seed);
}

namespace {
template <class T>
void check_read_type(const models::Tensor& t, ComputeType compute) {
  bool ok = false;
  if constexpr (std::is_same_v<T, float>) ok = compute == ComputeType::f32 && is_float(t.dtype);
  else if constexpr (std::is_same_v<T, double>) ok = compute == ComputeType::f64 && is_float(t.dtype);
  else ok = t.dtype == DType::i32;
  if (!ok)
    throw std::invalid_argument(fmt::format("tensor {} ({}) is not stored as {} by this executor (compute {})", t.name,
                                            models::to_string(t.dtype),
                                            std::is_same_v<T, float> ? "f32" : std::is_same_v<T, double> ? "f64" : "i32",
                                            compute == ComputeType::f64 ? "f64" : "f32"));
}
}  // namespace

template <class T>
std::vector<T> Executor::read_tensor(int tensor_id) {
  check_read_type<T>(impl_->graph.tensor(tensor_id), impl_->options.compute);
  return impl_->read<T>(tensor_id);
}
template <class T>
void Executor::write_tensor(int tensor_id, std::span<const T> values) {
  check_read_type<T>(impl_->graph.tensor(tensor_id), impl_->options.compute);
  impl_->write<T>(tensor_id, values);
}
template std::vector<float> Executor::read_tensor<float>(int);
template std::vector<double> Executor::read_tensor<double>(int);
template std::vector<int32_t> Executor::read_tensor<int32_t>(int);
template void Executor::write_tensor<float>(int, std::span<const float>);
template void Executor::write_tensor<double>(int, std::span<const double>);
template void Executor::write_tensor<int32_t>(int, std::span<const int32_t>);

bool Executor::has_scalar_output(int tensor_id) const {
  return tensor_id >= 0 && static_cast<size_t>(tensor_id) < impl_->scalar_slot.size() &&
         impl_->scalar_slot[static_cast<size_t>(tensor_id)] >= 0;
}
double Executor::scalar_output(int tensor_id) const {
  if (!has_scalar_output(tensor_id))
    throw std::invalid_argument(fmt::format("tensor {} is not a scalar the executor keeps (the loss or a "
                                            "cross_entropy loss)",
                                            tensor_id));
  return impl_->scalar_values[static_cast<size_t>(impl_->scalar_slot[static_cast<size_t>(tensor_id)])];
}

void Executor::zero_gradients() { impl_->backend->fill_zero(DeviceSpan::of(impl_->gradients)); }

double Executor::run_micro_step(int64_t step, int64_t micro_step, Communicator* comm) {
  return impl_->run_micro_step(step, micro_step, comm);
}

void Executor::run_step_tail(Communicator* comm, Optimizer* optimizer, double lr, double loss_scale) {
  impl_->run_step_tail(comm, optimizer, lr, loss_scale, false);
}
void Executor::run_step_tail_device_scale(Communicator* comm, Optimizer* optimizer, double lr) {
  impl_->run_step_tail(comm, optimizer, lr, 1.0, true);
}
void Executor::run_micro_step_summed(int64_t step, int64_t micro_step, Communicator* comm, std::span<const int> summed) {
  impl_->run_micro_step_summed(step, micro_step, comm, summed);
}

bool Executor::supports_device_loss_scale() const {
  return impl_->options.compute == ComputeType::f32 && impl_->gradients_16bit;
}
void Executor::set_device_loss_scale(const optim_math::LossScaleState& state) {
  if (!supports_device_loss_scale())
    throw std::logic_error("Executor::set_device_loss_scale: needs f32 compute and 16-bit gradients "
                           "(supports_device_loss_scale)");
  impl_->step_state_buffer().write_loss_scale(state);
}
void Executor::seed_loss_gradient() {
  Impl& m = *impl_;
  if (!m.step_state || !m.step_state->has_loss_scale())
    throw std::logic_error("Executor::seed_loss_gradient: no device loss scale (call set_device_loss_scale first)");
  const int id = m.graph.inputs.loss_grad;
  const DType as = m.stored.tensor(id).dtype;
  if (m.graph.tensor(id).elements() != 1)
    throw std::logic_error("Executor::seed_loss_gradient: the loss gradient input is not one scalar");
  // write_tensor's rounding: a 16-bit store narrows to nearest even (Backend::convert), fp32 copies.
  if (is_16bit_float(as)) m.backend->convert(m.span_of(id), as, m.step_state->loss_grad(), DType::f32);
  else m.backend->copy(m.span_of(id), m.step_state->loss_grad());
}
StepStateRecord Executor::read_step_state() {
  Impl& m = *impl_;
  const StepStateRecord r = m.step_state_buffer().read();
  if (m.verdict_unread) {  // the verdict came with the record: no second read for last_grad_norm and the optimizer
    if (m.verdict_optimizer) m.verdict_optimizer->adopt_verdict(r.verdict, m.verdict_serial);
    m.last_norm = r.verdict.grad_norm;
    m.last_skipped = m.verdict_optimizer && r.verdict.skip != 0;
    m.verdict_unread = false;
  }
  return r;
}

std::vector<float> Executor::read_parameter(size_t param_index) {
  const models::Parameter& p = impl_->graph.params.at(param_index);
  return read_tensor<float>(p.master >= 0 ? p.master : p.weight);
}
void Executor::write_parameter(size_t param_index, std::span<const float> values) {
  const models::Parameter& p = impl_->graph.params.at(param_index);
  write_tensor<float>(p.master >= 0 ? p.master : p.weight, values);
  impl_->refresh_weight_copy(p);
}
void Executor::refresh_weight_copies() { impl_->refresh_weight_copies(); }
std::vector<float> Executor::read_gradient(size_t param_index) {
  std::vector<float> g = read_tensor<float>(impl_->graph.params.at(param_index).gradient);
  auto factor = static_cast<float>(impl_->grad_factor);  // 1 unless the last tail unscales on read
  if (impl_->factor_on_device) impl_->backend->copy_to_host(&factor, impl_->step_state->grad_factor());
  if (impl_->gradients_16bit && factor != 1.0f)
    for (float& x : g) x *= factor;
  return g;
}

const std::vector<double>& Executor::op_seconds() const { return impl_->seconds; }
const std::vector<int>& Executor::op_executions() const { return impl_->executions; }
void Executor::reset_timers() {
  std::fill(impl_->seconds.begin(), impl_->seconds.end(), 0.0);
  std::fill(impl_->executions.begin(), impl_->executions.end(), 0);
}

std::vector<ParamSlot> Executor::param_slots() {
  if (impl_->options.compute != ComputeType::f32)
    throw InputError("optimizer slots need f32 compute (ComputeType::f64 is for gradient checks)");
  std::vector<ParamSlot> slots;
  for (const models::Parameter& p : impl_->graph.params) {
    ParamSlot s;
    s.name = p.name;
    s.weight = impl_->span_of(p.master >= 0 ? p.master : p.weight);  // the fp32 master under bf16/fp16
    s.grad = impl_->span_of(p.gradient);
    s.grad_dtype = impl_->stored.tensor(p.gradient).dtype;  // f16/bf16 under 16-bit storage
    s.n = static_cast<size_t>(p.elements);
    s.decay = p.decay;
    slots.push_back(std::move(s));
  }
  return slots;
}

double Executor::last_grad_norm() const {
  impl_->read_verdict();
  return impl_->last_norm;
}
bool Executor::last_step_skipped() const {
  impl_->read_verdict();
  return impl_->last_skipped;
}
size_t Executor::all_reduce_staging_held() const {
  size_t bytes = 0;
  for (const auto& slot : impl_->staging_slots) bytes += slot.buffer.valid() ? slot.buffer.bytes : 0;
  return bytes;
}

}  // namespace ptsim::runtime
