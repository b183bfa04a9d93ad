// runtime/exec/executor.cpp — TaskGraph → storage → ops in order. Storage: one flat weight buffer, one flat
// gradient buffer, one input buffer, and one activation arena laid out exactly as models::plan_memory
// says for the storage graph (offsets × sizeof(T)/4, i.e. ×2 for f64). Body ops go to the Backend; the step
// tail (all-reduce, global norm, optimizer) runs here because it needs the Communicator and the Optimizer.
// Mixed precision (bf16/fp16 graphs): every float tensor is stored in fp32; after each op the executor rounds
// the outputs whose graph dtype is 16-bit (precision.hpp), keeps fp32 master weights in a buffer of their
// own, unscales the gradients in the tail and refreshes the 16-bit weight copies after each update.
// Not here: kernels (cpu_backend.cpp), the training loop (runtime/train/).
#include "runtime/exec/executor.hpp"

#include <fmt/format.h>

#include <Eigen/Core>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <numbers>
#include <optional>
#include <stdexcept>
#include <type_traits>

#include "core/error.hpp"
#include "core/hash.hpp"
#include "runtime/comm/communicator.hpp"
#include "runtime/exec/backend.hpp"
#include "runtime/exec/precision.hpp"
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

constexpr size_t kBufferAlignment = 64;  // a cache line; enough for any SIMD load

// Zero-initialised, 64-byte aligned bytes.
class AlignedBuffer {
 public:
  void allocate(size_t bytes) {
    bytes_ = bytes;
    const size_t rounded = (bytes + kBufferAlignment - 1) / kBufferAlignment * kBufferAlignment;
    data_.reset(rounded > 0 ? static_cast<std::byte*>(std::aligned_alloc(kBufferAlignment, rounded)) : nullptr);
    if (rounded > 0 && !data_) throw std::bad_alloc();
    if (rounded > 0) std::memset(data_.get(), 0, rounded);
  }
  std::byte* data() const { return data_.get(); }
  size_t bytes() const { return bytes_; }

 private:
  struct Free {
    void operator()(std::byte* p) const { std::free(p); }
  };
  std::unique_ptr<std::byte, Free> data_;
  size_t bytes_ = 0;
};

bool is_float(DType t) { return t == DType::f32 || t == DType::f16 || t == DType::bf16 || t == DType::f64; }

// Parameter initialisation is counter-based (core/hash.hpp: splitmix64 at a counter, FNV-1a of the
// name), so every element's value depends only on (seed, parameter name, element index).
using core::fnv1a64;
using core::mix64;
double uniform_open(uint64_t bits) { return (static_cast<double>(bits >> 11) + 0.5) * 0x1.0p-53; }  // (0, 1)

}  // namespace

models::TaskGraph cpu_storage_graph(const models::TaskGraph& graph) {
  models::TaskGraph g = graph;
  for (models::Tensor& t : g.tensors)
    if (is_16bit_float(t.dtype)) t.dtype = DType::f32;
  return g;
}

struct Executor::Impl {
  TaskGraph graph;
  ExecutorOptions options;
  models::MemoryPlan plan;
  std::unique_ptr<Backend> backend;
  size_t scalar_bytes = 4;     // storage of one float-like element
  int64_t offset_scale = 1;    // arena offsets × this (2 for f64)
  AlignedBuffer arena, weights, gradients, inputs, masters;
  std::vector<void*> storage;  // per tensor id; null when the executor holds none (optimizer state)
  // Per op: the outputs whose graph dtype is f16/bf16, rounded after the op runs (mixed precision only).
  std::vector<std::vector<int>> rounded_outputs;
  std::vector<std::vector<void*>> op_inputs, op_outputs;
  std::vector<int> body_ops, tail_ops;
  std::vector<double> seconds;
  std::vector<int> executions;
  double last_norm = std::numeric_limits<double>::quiet_NaN();
  bool last_skipped = false;

  Impl(const TaskGraph& g, ExecutorOptions o) : graph(g), options(o) {
    validate();
    // The CPU stores 16-bit tensors in fp32: plan the arena for what it stores (the same graph with f16/bf16
    // tensors as f32), so offsets and sizes are those of the buffers really allocated.
    plan = models::plan_memory(cpu_storage_graph(graph));
    scalar_bytes = options.compute == ComputeType::f64 ? sizeof(double) : sizeof(float);
    offset_scale = static_cast<int64_t>(scalar_bytes / sizeof(float));
    backend = make_cpu_backend(options.compute);
    if (options.threads > 0) Eigen::setNbThreads(options.threads);
    allocate();
    seconds.assign(graph.ops.size(), 0.0);
    executions.assign(graph.ops.size(), 0);
  }

  void validate() const {
    if (graph.recipe.precision != models::Precision::fp32 && options.compute != ComputeType::f32)
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

  size_t element_bytes(DType t) const {
    if (is_float(t)) return scalar_bytes;
    return t == DType::u8 ? 1 : 4;
  }
  size_t storage_bytes(const models::Tensor& t) const { return static_cast<size_t>(t.elements()) * element_bytes(t.dtype); }

  void allocate() {
    const size_t n = graph.tensors.size();
    storage.assign(n, nullptr);
    // Persistent buffers: weights and gradients back to back in tensor order, inputs likewise.
    auto round = [](size_t bytes) { return (bytes + kBufferAlignment - 1) / kBufferAlignment * kBufferAlignment; };
    size_t weight_bytes = 0, grad_bytes = 0, input_bytes = 0, master_bytes = 0;
    for (const auto& t : graph.tensors) {
      if (t.role == TensorRole::weight) weight_bytes += round(storage_bytes(t));
      if (t.role == TensorRole::master_weight) master_bytes += round(storage_bytes(t));
      if (t.role == TensorRole::gradient) grad_bytes += round(storage_bytes(t));
      if (t.role == TensorRole::input) input_bytes += round(storage_bytes(t));
    }
    weights.allocate(weight_bytes);
    gradients.allocate(grad_bytes);
    inputs.allocate(input_bytes);
    masters.allocate(master_bytes);
    const double peak = plan.activations_peak_bytes * static_cast<double>(offset_scale);
    arena.allocate(static_cast<size_t>(peak));
    size_t w = 0, g = 0, in = 0, mw = 0;
    for (const auto& t : graph.tensors) {
      const size_t bytes = storage_bytes(t);
      switch (t.role) {
        case TensorRole::weight: storage[t.id] = weights.data() + w; w += round(bytes); break;
        case TensorRole::gradient: storage[t.id] = gradients.data() + g; g += round(bytes); break;
        case TensorRole::input: storage[t.id] = inputs.data() + in; in += round(bytes); break;
        case TensorRole::master_weight: storage[t.id] = masters.data() + mw; mw += round(bytes); break;
        case TensorRole::activation:
        case TensorRole::workspace: {
          const int64_t offset = plan.offset[static_cast<size_t>(t.id)];
          if (offset < 0) break;  // never produced (no storage needed)
          const size_t at = static_cast<size_t>(offset * offset_scale);
          if (at + bytes > arena.bytes())
            throw std::logic_error(fmt::format("memory plan: tensor {} ({} bytes at offset {}) overflows the {}-byte "
                                               "activation arena",
                                               t.name, bytes, at, arena.bytes()));
          storage[t.id] = arena.data() + at;
          break;
        }
        default: break;  // optimizer state (owned by the Optimizer)
      }
    }
    op_inputs.resize(graph.ops.size());
    op_outputs.resize(graph.ops.size());
    rounded_outputs.resize(graph.ops.size());
    for (const Op& op : graph.ops) {
      (models::is_micro_step_phase(op.phase) ? body_ops : tail_ops).push_back(op.id);
      if (op.kind != OpKind::optimizer_update)  // its weight copies are refreshed from the masters instead
        for (int id : op.outputs)
          if (is_16bit_float(graph.tensor(id).dtype)) rounded_outputs[static_cast<size_t>(op.id)].push_back(id);
      if (op.kind == OpKind::optimizer_update) continue;  // reads gradients by parameter index, writes via the Optimizer
      auto resolve = [&](const std::vector<int>& ids, std::vector<void*>& out) {
        for (int id : ids) {
          if (!storage[static_cast<size_t>(id)])
            throw std::logic_error(fmt::format("op {}: tensor {} has no storage", op.name, graph.tensor(id).name));
          out.push_back(storage[static_cast<size_t>(id)]);
        }
      };
      resolve(op.inputs, op_inputs[static_cast<size_t>(op.id)]);
      resolve(op.outputs, op_outputs[static_cast<size_t>(op.id)]);
    }
  }

  template <class T>
  std::span<T> view(int tensor_id) {
    const models::Tensor& t = graph.tensor(tensor_id);
    void* p = storage.at(static_cast<size_t>(tensor_id));
    if (!p) throw std::invalid_argument(fmt::format("tensor {} has no storage in the executor", t.name));
    return {static_cast<T*>(p), static_cast<size_t>(t.elements())};
  }

  void timed(const Op& op, auto&& body) {
    if (!options.time_ops) {
      body();
    } else {
      const auto t0 = std::chrono::steady_clock::now();
      body();
      backend->synchronize();
      seconds[static_cast<size_t>(op.id)] += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
    ++executions[static_cast<size_t>(op.id)];
  }

  double read_scalar(int tensor_id) const {
    const void* p = storage[static_cast<size_t>(tensor_id)];
    return scalar_bytes == sizeof(double) ? *static_cast<const double*>(p) : *static_cast<const float*>(p);
  }

  double run_micro_step(int64_t step, int64_t micro_step) {
    if (micro_step == 0) std::memset(gradients.data(), 0, gradients.bytes());
    const OpContext context{options.seed, step, micro_step};
    double loss = std::numeric_limits<double>::quiet_NaN();
    for (int id : body_ops) {
      if (options.stop_requested && options.stop_requested()) throw MicroStepAbandoned();
      const Op& op = graph.ops[static_cast<size_t>(id)];
      timed(op, [&] {
        try {
          backend->run(graph, op, op_inputs[static_cast<size_t>(id)], op_outputs[static_cast<size_t>(id)], context);
          round_outputs(op);
        } catch (const InputError& e) {
          throw InputError(fmt::format("op {} ({}): {}", op.name, models::to_string(op.kind), e.what()));
        }
      });
      // The loss has no reader in the body, so the plan may reuse its bytes right after: read it now.
      for (int out : op.outputs)
        if (out == graph.loss_tensor) loss = read_scalar(out);
      if (options.after_op) options.after_op(op);
    }
    return loss;
  }

  // A 16-bit store of what the op wrote: the next reader sees exactly the values a GPU kernel that computes in
  // fp32 and writes f16/bf16 would leave (accumulating outputs: fp32 sum of the stored value and the new
  // terms, rounded once, as a GEMM with beta = 1 does).
  void round_outputs(const Op& op) {
    for (int t : rounded_outputs[static_cast<size_t>(op.id)]) round_to_dtype(graph.tensor(t).dtype, view<float>(t));
  }

  // Mixed precision: the 16-bit compute copy of parameter p is its fp32 master rounded (what Apex's O2 and
  // Megatron copy into the model after each step). No-op under fp32 (the weight is its own master).
  void refresh_weight_copy(const models::Parameter& p) {
    if (p.master < 0) return;
    auto master = view<float>(p.master);
    auto weight = view<float>(p.weight);
    std::copy(master.begin(), master.end(), weight.begin());
    round_to_dtype(graph.tensor(p.weight).dtype, weight);
  }
  void refresh_weight_copies() {
    for (const models::Parameter& p : graph.params) refresh_weight_copy(p);
  }

  // Gradients ÷ loss scale, in fp32 (Apex's fp32 master gradients; torch GradScaler.unscale_): the values
  // clipping, the norm and the optimizer see. Skipped when the scale is 1.
  void unscale_gradients(double loss_scale) {
    if (loss_scale == 1.0) return;
    const float inv = static_cast<float>(1.0 / loss_scale);
    for (const models::Parameter& p : graph.params)
      for (float& g : view<float>(p.gradient)) g *= inv;
  }

  template <class T>
  void all_reduce(const Op& op, Communicator& comm, std::vector<T>& staging) {
    // One collective per bucket: pack the bucket's gradients, sum over ranks, unpack divided by the size.
    size_t total = 0;
    for (int id : op.inputs) total += static_cast<size_t>(graph.tensor(id).elements());
    staging.resize(total);
    size_t at = 0;
    for (int id : op.inputs) {
      auto g = view<T>(id);
      std::copy(g.begin(), g.end(), staging.begin() + static_cast<std::ptrdiff_t>(at));
      at += g.size();
    }
    comm.all_reduce_sum(std::span<T>(staging));
    const T inv = static_cast<T>(1.0 / comm.size());
    at = 0;
    for (int id : op.inputs) {
      auto g = view<T>(id);
      for (size_t i = 0; i < g.size(); ++i) g[i] = staging[at + i] * inv;
      at += g.size();
    }
    // NCCL reduces 16-bit gradients in their dtype: the averaged value is stored as f16/bf16 again.
    if constexpr (std::is_same_v<T, float>)
      for (int id : op.inputs) round_to_dtype(graph.tensor(id).dtype, view<float>(id));
  }

  template <class T>
  double grad_norm(const Op& op) {
    double sum = 0;
    for (int id : op.inputs)
      for (T v : view<T>(id)) sum += static_cast<double>(v) * static_cast<double>(v);
    return std::sqrt(sum);
  }

  void check_slots(const Optimizer& optimizer) {
    const auto& slots = optimizer.slots();
    if (slots.size() != graph.params.size())
      throw std::invalid_argument(fmt::format("optimizer has {} slots, the graph {} parameters: build it from "
                                              "Executor::param_slots()",
                                              slots.size(), graph.params.size()));
    for (size_t i = 0; i < slots.size(); ++i) {
      const models::Parameter& p = graph.params[i];
      if (slots[i].weight != storage[static_cast<size_t>(p.master >= 0 ? p.master : p.weight)] ||
          slots[i].grad != storage[static_cast<size_t>(p.gradient)] ||
          slots[i].n != static_cast<size_t>(p.elements))
        throw std::invalid_argument(fmt::format("optimizer slot {} ({}) does not point at the executor's storage of "
                                                "{}: build the optimizer from Executor::param_slots()",
                                                i, slots[i].name, p.name));
    }
  }

  void run_step_tail(Communicator* comm, Optimizer* optimizer, double lr, double loss_scale) {
    const bool f64 = options.compute == ComputeType::f64;
    if (!(loss_scale > 0) || !std::isfinite(loss_scale))
      throw std::invalid_argument(fmt::format("run_step_tail: loss scale must be finite and > 0, got {}", loss_scale));
    if (f64 && loss_scale != 1.0) throw InputError("loss scaling needs ComputeType::f32 (f64 is for gradient checks)");
    if (optimizer && f64)
      throw InputError("optimizer updates run in fp32: use ComputeType::f32 (f64 is for gradient checks)");
    if (comm && comm->size() != graph.recipe.data_parallel)
      throw InputError(fmt::format("the communicator has {} ranks but the graph was built for data_parallel = {}: "
                                   "build it with --data-parallel {}",
                                   comm->size(), graph.recipe.data_parallel, comm->size()));
    if (optimizer) check_slots(*optimizer);
    last_norm = std::numeric_limits<double>::quiet_NaN();
    last_skipped = false;
    bool in_step = false;
    std::vector<float> staging32;
    std::vector<double> staging64;
    bool unscaled = false;
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
          timed(op, [&] { f64 ? all_reduce<double>(op, *comm, staging64) : all_reduce<float>(op, *comm, staging32); });
          break;
        case OpKind::grad_norm:
          unscale_once();
          timed(op, [&] {
            last_norm = f64 ? grad_norm<double>(op) : grad_norm<float>(op);
            void* out = storage[static_cast<size_t>(op.outputs.at(0))];
            if (f64) *static_cast<double*>(out) = last_norm;
            else *static_cast<float*>(out) = static_cast<float>(last_norm);
          });
          break;
        case OpKind::optimizer_update: {
          if (!optimizer || last_skipped) break;
          unscale_once();
          timed(op, [&] {
            if (!in_step) {
              if (std::isnan(last_norm)) last_norm = all_gradients_norm();  // the graph has no grad_norm op
              if (!std::isfinite(last_norm)) {  // overflow or NaN somewhere: leave the weights as they are
                last_skipped = true;
                return;
              }
              optimizer->step_begin(lr, last_norm);
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
  }

  double all_gradients_norm() {
    double sum = 0;
    for (const models::Parameter& p : graph.params) {
      if (options.compute == ComputeType::f64)
        for (double v : view<double>(p.gradient)) sum += v * v;
      else
        for (float v : view<float>(p.gradient)) sum += static_cast<double>(v) * static_cast<double>(v);
    }
    return std::sqrt(sum);
  }

  // BERT / GPT-2 initialisation (Devlin et al. 2019, initializer_range 0.02; HF _init_weights): matrices and
  // embedding tables ~ normal(0, 0.02), LayerNorm gains 1, LayerNorm biases and linear biases 0; padded
  // vocabulary rows 0.
  template <class T>
  void init_parameters(uint64_t seed) {
    std::vector<char> is_gain(graph.tensors.size(), 0);
    for (const Op& op : graph.ops)
      if (op.kind == OpKind::layernorm) is_gain[static_cast<size_t>(op.inputs.at(1))] = 1;
    constexpr double kStd = 0.02;
    for (const models::Parameter& p : graph.params) {
      auto w = view<T>(p.master >= 0 ? p.master : p.weight);  // fp32 master under mixed precision
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
    }
    zero_vocabulary_padding<T>();
    refresh_weight_copies();
    std::memset(gradients.data(), 0, gradients.bytes());
  }

  // Rows ≥ vocab_size of the word table and the MLM decoder bias are GEMM padding (never looked up, left out
  // of the softmax): start them at 0 so they stay 0 (their gradient is 0) and do not count in LAMB's ‖w‖.
  template <class T>
  void zero_vocabulary_padding() {
    const int64_t vocab = graph.model.vocab_size, padded = graph.model.padded_vocab_size();
    if (padded == vocab) return;
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
      if (t.role != TensorRole::weight || t.shape.empty() || t.shape[0] != padded) continue;
      const int master = graph.params.at(static_cast<size_t>(t.param_index)).master;
      auto w = view<T>(master >= 0 ? master : id);
      const size_t row = w.size() / static_cast<size_t>(padded);
      std::fill(w.begin() + static_cast<std::ptrdiff_t>(static_cast<size_t>(vocab) * row), w.end(), T(0));
    }
  }
};

Executor::Executor(const models::TaskGraph& graph, ExecutorOptions options)
    : impl_(std::make_unique<Impl>(graph, options)) {}
Executor::~Executor() = default;

const models::TaskGraph& Executor::graph() const { return impl_->graph; }
const models::MemoryPlan& Executor::plan() const { return impl_->plan; }
size_t Executor::allocated_activation_bytes() const { return impl_->arena.bytes(); }
ComputeType Executor::compute() const { return impl_->options.compute; }

void Executor::init_parameters(uint64_t seed) {
  if (impl_->options.compute == ComputeType::f64) impl_->init_parameters<double>(seed);
  else impl_->init_parameters<float>(seed);
}

std::span<float> Executor::f32(int tensor_id) {
  const auto& t = impl_->graph.tensor(tensor_id);
  if (impl_->options.compute != ComputeType::f32 || !is_float(t.dtype))
    throw std::invalid_argument(fmt::format("tensor {} ({}) is not stored as f32 by this executor", t.name,
                                            models::to_string(t.dtype)));
  return impl_->view<float>(tensor_id);
}
std::span<double> Executor::f64(int tensor_id) {
  const auto& t = impl_->graph.tensor(tensor_id);
  if (impl_->options.compute != ComputeType::f64 || !is_float(t.dtype))
    throw std::invalid_argument(fmt::format("tensor {} ({}) is not stored as f64 by this executor", t.name,
                                            models::to_string(t.dtype)));
  return impl_->view<double>(tensor_id);
}
std::span<int32_t> Executor::i32(int tensor_id) {
  const auto& t = impl_->graph.tensor(tensor_id);
  if (t.dtype != DType::i32)
    throw std::invalid_argument(fmt::format("tensor {} is {}, not i32", t.name, models::to_string(t.dtype)));
  return impl_->view<int32_t>(tensor_id);
}

void Executor::zero_gradients() { std::memset(impl_->gradients.data(), 0, impl_->gradients.bytes()); }

double Executor::run_micro_step(int64_t step, int64_t micro_step) { return impl_->run_micro_step(step, micro_step); }

void Executor::run_step_tail(Communicator* comm, Optimizer* optimizer, double lr, double loss_scale) {
  impl_->run_step_tail(comm, optimizer, lr, loss_scale);
}

std::span<float> Executor::parameter_f32(size_t param_index) {
  const models::Parameter& p = impl_->graph.params.at(param_index);
  return f32(p.master >= 0 ? p.master : p.weight);
}
void Executor::refresh_weight_copies() { impl_->refresh_weight_copies(); }

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
    s.weight = f32(p.master >= 0 ? p.master : p.weight).data();  // the optimizer updates the fp32 master
    s.grad = f32(p.gradient).data();
    s.n = static_cast<size_t>(p.elements);
    s.decay = p.decay;
    slots.push_back(std::move(s));
  }
  return slots;
}

double Executor::last_grad_norm() const { return impl_->last_norm; }
bool Executor::last_step_skipped() const { return impl_->last_skipped; }

}  // namespace ptsim::runtime
