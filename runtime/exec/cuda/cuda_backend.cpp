// runtime/exec/cuda/cuda_backend.cpp — CudaBackend: maps each TaskGraph op onto this folder's kernels
// (the shapes and attributes read exactly as CpuBackend reads them, cpu_backend.cpp), and
// make_cuda_backend. f32 kernels; f16/bf16 activations stored as 16 bits, taken directly by the 16-bit GEMMs
// below and converted around every other op (cuda_16bit_boundary.hpp, the CPU backend's plan). Every launch
// is checked; bad ids/labels surface at the next synchronising call (device_error.hpp). The fused
// attention: fused_attention.cu (attention.hpp).
// GEMM epilogues (unless PTSIM_CUDA_GEMM_EPILOGUES=0, lt_gemm_plan.hpp): a GEMM's bias in cuBLASLt's BIAS
// epilogue; and when the op right after a GEMM is a bias_grad whose dy the GEMM reduces over its rows (the
// weight-gradient GEMM of a linear layer, bias_grad_epilogue), the GEMM also writes Σ dy into a backend
// vector and that bias_grad only adds the vector into dbias (no second pass over dy).
// 16-bit operands (the graph given is the storage graph: activations, weight copies and gradients of a
// bf16/fp16 run): runs_16bit_natively says which ops take them directly — the GEMMs gemm_types.hpp allows
// (gemm_forward_16bit, batched_gemm_forward_16bit: bf16/fp16 A and B, fp32 accumulation; bf16 refused below
// sm_80, fp16 below sm_70), a bias_grad whose sum a GEMM's epilogue already wrote, a bias_grad on 16-bit dy
// and dbias (bias_grad_16bit.hpp, bias_grad.cu: the boundary's bits), the elementwise ops
// native_16bit_elementwise.hpp names and the row ops whose storage-typed kernels take the operands as stored
// (native_16bit_rows.hpp), unless PTSIM_CUDA_NATIVE_16BIT=0; the fused attention ops on the tensor-core
// kernels when made with BackendOptions::attention tensor_core (attention_tc_dispatch.hpp; off by default:
// docs/cuda-backend.md, "When it runs"); every other op with a 16-bit operand runs its fp32 kernel on widened
// copies (the op boundary, cuda_16bit_boundary.hpp).
#include <fmt/format.h>

#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "runtime/comm/local_device.hpp"
#include "runtime/exec/attention_problem.hpp"  // defines: attention_problem, attention_mask_input
#include "runtime/exec/cuda/attention.hpp"
#include "runtime/exec/cuda/attention_args.hpp"  // defines: fused_attention_args
#include "runtime/exec/cuda/attention_tc_dispatch.hpp"
#include "runtime/exec/cuda/bias_grad_16bit.hpp"
#include "runtime/exec/cuda/cuda_16bit_boundary.hpp"  // defines: OpBoundary, runs_16bit_natively
#include "runtime/exec/cuda/cuda_backend.hpp"
#include "runtime/exec/cuda/cuda_check.hpp"
#include "runtime/exec/cuda/cuda_device.hpp"
#include "runtime/exec/cuda/elementwise.hpp"
#include "runtime/exec/cuda/fused_dropout.hpp"
#include "runtime/exec/cuda/gather.hpp"
#include "runtime/exec/cuda/gemm.hpp"
#include "runtime/exec/cuda/gemm_types.hpp"
#include "runtime/exec/cuda/native_16bit_elementwise.hpp"
#include "runtime/exec/cuda/native_16bit_rows.hpp"
#include "runtime/exec/cuda/native_16bit_switch.hpp"
#include "runtime/exec/cuda/optimizer.hpp"
#include "runtime/exec/cuda/rows.hpp"
#include "runtime/exec/dropout_mask.hpp"
#include "runtime/exec/math/storage_dtype.hpp"  // defines: storage_of_16bit
#include "runtime/exec/op_shape_checks.hpp"
#include "runtime/exec/optimizer_plan.hpp"

namespace ptsim::runtime {
namespace {

using models::Op;
using models::OpKind;
using models::TaskGraph;

int64_t elements(const TaskGraph& g, int id) { return g.tensor(id).elements(); }
int64_t last_dim(const TaskGraph& g, int id) {
  const auto& s = g.tensor(id).shape;
  return s.empty() ? 1 : s.back();
}

class CudaBackend final : public cuda::CudaDevice {
 public:
  CudaBackend(int device, bool gemm_epilogues, bool native_16bit, AttentionKernel attention)
      : CudaDevice(device),
        optimizer_(wait_for_stream()),
        lt_(gemm_epilogues ? std::make_unique<cuda::LtGemm>() : nullptr),
        native_16bit_(native_16bit),
        tensor_core_attention_(attention == AttentionKernel::tensor_core) {
    cudaDeviceProp prop{};
    PTSIM_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
    cc_major_ = prop.major;
    cc_minor_ = prop.minor;
    gpu_name_ = prop.name;
  }
  // The streams drained (bounded) before any member frees device memory: the optimizer's tables, the
  // boundary's scratch, the bias-gradient vector and the cuBLASLt state free without waiting.
  ~CudaBackend() override {
    drain_for_teardown();
    (void)cudaFree(bias_grad_part_);
  }
  CudaBackend(const CudaBackend&) = delete;
  CudaBackend& operator=(const CudaBackend&) = delete;
  const char* name() const override { return "cuda-f32"; }
  // f16/bf16 activations as 16 bits, converted at the op boundary (cuda_16bit_boundary.hpp).
  bool stores_16bit() const override { return true; }

  // An op with 16-bit operands runs its fp32 kernel on widened copies (boundary_), unless its kernel takes
  // 16-bit operands itself (runs_16bit_natively: the 16-bit GEMMs gemm_types.hpp allows, the row kernels).
  void run(const TaskGraph& g, const Op& op, std::span<void* const> in, std::span<void* const> out,
           const OpContext& context) override {
    // A bias gradient computed inside a GEMM is only used by the op right after that GEMM.
    if (op.kind != OpKind::bias_grad) pending_ = {};
    stored_inputs_.assign(in.begin(), in.end());  // launch() may get the boundary's scratch addresses instead
    const bool native = cuda::has_16bit_operand(g, op) && runs_16bit_natively(g, op, in);
    if (native) {
      if (op.kind == OpKind::gemm || op.kind == OpKind::batched_gemm) {
        gemm_16bit(g, op, in, out);
        cuda::check_launch(models::to_string(op.kind));
        return;
      }
      if (op.kind == OpKind::bias_grad && cuda::bias_grad_runs_natively(g, op)) {
        bias_grad_16bit(g, op, in, out);
        cuda::check_launch(models::to_string(op.kind));
        return;
      }
      if (op.kind == OpKind::fused_attention || op.kind == OpKind::fused_attention_backward) {
        fused_attention_16bit(g, op, in, out, context);  // the tensor-core kernels (attention_tc.hpp)
        cuda::check_launch(models::to_string(op.kind));
        return;
      }
      if (const std::optional<math::Storage> rows = cuda::native_row_storage(g, op)) {
        launch(g, op, in, out, context, *rows);  // the row kernels on the stored operands (native_16bit_rows.hpp)
        cuda::check_launch(models::to_string(op.kind));
        return;
      }
    } else if (boundary_.prepare(g, op, in, out, compute_stream())) {
      launch(g, op, boundary_.inputs(), boundary_.outputs(), context, math::Storage::f32);
      cuda::check_launch(models::to_string(op.kind));
      boundary_.finish(compute_stream());
      return;
    }
    // Native here: an elementwise kernel on its 16-bit storage (native_16bit_elementwise.hpp), or the bias_grad.
    launch(g, op, in, out, context,
           native ? cuda::native_16bit_elementwise_storage(g, op).value_or(math::Storage::f32)
                  : math::Storage::f32);
    cuda::check_launch(models::to_string(op.kind));
  }

  // The ops that take 16-bit operands directly (the rest go through the op-boundary conversion): the
  // GEMMs gemm_types.hpp allows, the bias_grad whose Σ dy the previous GEMM's epilogue wrote in fp32
  // (it reads only that vector and an fp32 dbias), a bias_grad on 16-bit dy and dbias of one type
  // (bias_grad_16bit.hpp: the boundary's bits without its widened copies), the elementwise ops of
  // native_16bit_elementwise.hpp and the row ops of native_16bit_rows.hpp; with the tensor-core attention
  // (BackendOptions::attention, its own switch: unlike PTSIM_CUDA_NATIVE_16BIT's kernels it does not give the
  // boundary's bits), the fused attention ops its kernels take.
  bool runs_16bit_natively(const TaskGraph& g, const Op& op, std::span<void* const> in) const {
    if (op.kind == OpKind::gemm || op.kind == OpKind::batched_gemm) return cuda::gemm_runs_natively(g, op);
    if (op.kind == OpKind::fused_attention || op.kind == OpKind::fused_attention_backward)
      return tensor_core_attention_ && cuda::fused_attention_runs_natively(g, op);
    const bool f32_dbias = op.kind == OpKind::bias_grad && g.tensor(op.outputs.at(0)).dtype == models::DType::f32;
    if (f32_dbias && pending_matches(op, in)) return true;
    if (!native_16bit_) return false;  // PTSIM_CUDA_NATIVE_16BIT=0: every other op through the boundary
    if (cuda::bias_grad_runs_natively(g, op)) return true;  // 16-bit dy and dbias (bias_grad_16bit.hpp)
    if (cuda::elementwise_runs_16bit_natively(g, op)) return true;  // one 16-bit type for all float operands
    if (cuda::rows_run_16bit_natively(g, op)) return true;  // the row kernels on their storage (native_16bit_rows.hpp)
    return false;
  }

  // The multi-tensor optimizer kernels (optimizer.cu) on the compute stream, bit for bit the CPU reference,
  // for f32 and 16-bit gradients alike (read times StepScalars::grad_factor: scaled_read.hpp); the kernels
  // read the step's StepScalars from `scalars` in device memory.
  bool optimizer_reads_16bit_gradients() const override { return true; }
  void optimizer_step(const optim_math::Hyperparameters& hyper, const DeviceSpan& scalars,
                      std::span<const OptimizerTensor> tensors) override {
    check_step_scalars(scalars);
    const int states = optimizer_state_arrays(hyper.rule);
    std::vector<cuda::OptimizerTensorAddresses> list(tensors.size());
    for (size_t i = 0; i < tensors.size(); ++i) {
      const OptimizerTensor& t = tensors[i];
      check_optimizer_tensor(t, states);
      list[i].elements = t.weight.bytes / sizeof(float);
      list[i].decay = t.decay;
      list[i].grad_storage = cuda::tail_storage(t.grad_dtype);
      if (list[i].elements == 0) continue;  // no addresses needed (nor, for a 0-byte buffer, any)
      list[i].weight = static_cast<float*>(kernel_address(t.weight));
      list[i].grad = kernel_address(t.grad);
      for (int k = 0; k < states; ++k) list[i].state[k] = static_cast<float*>(kernel_address(t.state[k]));
    }
    optimizer_.step(hyper, static_cast<const optim_math::StepScalars*>(kernel_address(scalars)), list,
                    compute_stream());
  }

 private:
  cuda::MultiTensorOptimizer optimizer_;
  int cc_major_ = 0, cc_minor_ = 0;  // the GPU's compute capability (bf16 GEMMs need 8.0, fp16 7.0)
  std::string gpu_name_;
  std::unique_ptr<cuda::LtGemm> lt_;  // null: PTSIM_CUDA_GEMM_EPILOGUES=0
  bool native_16bit_ = true;  // PTSIM_CUDA_NATIVE_16BIT (native_16bit_switch.hpp)
  bool tensor_core_attention_ = false;  // BackendOptions::attention == tensor_core (--attention-kernel)
  // The bias gradient a GEMM's epilogue wrote into bias_grad_part_ for the bias_grad op `op` reading `dy`.
  struct PendingBiasGrad {
    int op = -1;
    const void* dy = nullptr;
  };
  PendingBiasGrad pending_;
  // The op being run's input addresses as stored (its 16-bit ones are replaced by fp32 scratch for the
  // kernel): the pending bias gradient is matched on these, which do not move from op to op.
  std::vector<void*> stored_inputs_;
  cuda::OpBoundary boundary_{wait_for_stream()};  // the fp32 device scratch of 16-bit operands, reused op after op
  float* bias_grad_part_ = nullptr;  // device, bias_grad_part_elements_ floats
  int64_t bias_grad_part_elements_ = 0;

  // `st`: the storage of the op's float operands (math/storage.hpp): the 16-bit dtype when run() gives an
  // elementwise or row kernel the stored operands, else f32 (fp32 operands, the boundary's scratch).
  void launch(const TaskGraph& g, const Op& op, std::span<void* const> in, std::span<void* const> out,
              const OpContext& context, math::Storage st) {
    auto x = [&](size_t i) { return static_cast<const float*>(in[i]); };
    auto ids = [&](size_t i) { return static_cast<const int32_t*>(in[i]); };
    auto y = [&](size_t i) { return static_cast<float*>(out[i]); };
    const models::OpAttrs& a = op.attrs;
    const cudaStream_t s = compute_stream();
    switch (op.kind) {
      case OpKind::embedding: {  // table (V,H), ids (M) → y (M,H)
        const auto& table = g.tensor(op.inputs[0]).shape;
        cuda::launch_gather_rows(out[0], in[0], ids(1), elements(g, op.inputs[1]), table.at(0), table.at(1),
                                 cuda::DeviceErrorKind::token_id, device_error(), st, s);
        break;
      }
      case OpKind::embedding_backward: {  // dy (M,H), ids (M) → dtable (V,H) +=
        const auto& table = g.tensor(op.outputs[0]).shape;
        segments_add(st, out[0], in[0], ids(1), elements(g, op.inputs[1]), table.at(1), table.at(0),
                     cuda::DeviceErrorKind::token_id);
        break;
      }
      case OpKind::gemm:
        check_gemm_shapes(g, op);
        if (gemm_with_next_bias_grad(g, op, in, out)) break;
        cuda::gemm_forward(cublas(), lt_.get(), y(0), x(0), x(1), a.gemm.has_bias ? x(2) : nullptr, a.gemm,
                           op.tf32_math, s);
        break;
      case OpKind::batched_gemm:
        check_gemm_shapes(g, op);
        cuda::batched_gemm_forward(cublas(), y(0), x(0), x(1), a.gemm, op.tf32_math);
        break;
      case OpKind::bias_grad: {  // dy (M,N) → dbias (N) +=
        const int64_t N = elements(g, op.outputs[0]), M = elements(g, op.inputs[0]) / N;
        if (pending_matches(op, stored_inputs_)) {  // the previous GEMM's epilogue summed dy (stored addresses)
          const void* terms[] = {y(0), bias_grad_part_};
          cuda::launch_add(y(0), terms, N, math::Storage::f32, s);
          pending_ = {};
          break;
        }
        cuda::launch_bias_grad(y(0), x(0), M, N, math::Storage::f32, scratch(cuda::column_sums_scratch_bytes(M, N)), s);
        break;
      }
      case OpKind::add: {
        const std::vector<const void*> xs(in.begin(), in.end());
        cuda::launch_add(out[0], xs, elements(g, op.outputs[0]), st, s);
        break;
      }
      case OpKind::layernorm: {  // x (M,N), gamma, beta → y, mean (M), rstd (M)
        const int64_t N = last_dim(g, op.inputs[0]);
        cuda::launch_layernorm_forward(st, out[0], y(1), y(2), in[0], in[1], in[2], elements(g, op.inputs[0]) / N,
                                       N, a.epsilon, s);
        break;
      }
      case OpKind::layernorm_backward: {  // dy, x, gamma, mean, rstd → dx, dgamma +=, dbeta +=
        const int64_t N = last_dim(g, op.inputs[1]), M = elements(g, op.inputs[1]) / N;
        cuda::launch_layernorm_backward(st, out[0], out[1], out[2], in[0], in[1], in[2], x(3), x(4), M, N,
                                        scratch(2 * cuda::column_sums_scratch_bytes(M, N)), s);
        break;
      }
      case OpKind::softmax: {  // scores (B·nh,S,S), (mask (B,S)) → probs
        const int64_t cols = last_dim(g, op.inputs[0]);
        cuda::launch_softmax_forward(st, out[0], in[0], elements(g, op.inputs[0]) / cols, cols,
                                     in.size() > 1 ? ids(1) : nullptr, a.heads > 0 ? a.heads : 1,
                                     a.seq > 0 ? a.seq : cols, a.causal, s);
        break;
      }
      case OpKind::softmax_backward: {  // dprobs, probs → dscores
        const int64_t cols = last_dim(g, op.inputs[1]);
        cuda::launch_softmax_backward(st, out[0], in[0], in[1], elements(g, op.inputs[1]) / cols, cols, s);
        break;
      }
      case OpKind::dropout: {  // x → y, mask (u8)
        const uint64_t key = dropout_key(context.seed, context.step, context.micro_step, a.rng_stream);
        cuda::launch_dropout_forward(out[0], static_cast<uint8_t*>(out[1]), in[0], elements(g, op.inputs[0]),
                                     a.dropout_p, key, st, s);
        break;
      }
      case OpKind::dropout_backward:  // dy, mask → dx
        cuda::launch_dropout_backward(out[0], in[0], static_cast<const uint8_t*>(in[1]), elements(g, op.inputs[0]),
                                      a.dropout_p, st, s);
        break;
      case OpKind::softmax_dropout: {  // scores, (mask (B,S)) → dropped, probs, mask (u8)
        const int64_t cols = last_dim(g, op.inputs[0]);
        const uint64_t key = dropout_key(context.seed, context.step, context.micro_step, a.rng_stream);
        cuda::launch_softmax_dropout_forward(st, out[0], out[1], static_cast<uint8_t*>(out[2]), in[0],
                                             elements(g, op.inputs[0]) / cols, cols, in.size() > 1 ? ids(1) : nullptr,
                                             a.heads > 0 ? a.heads : 1, a.seq > 0 ? a.seq : cols, a.causal,
                                             a.dropout_p, key, s);
        break;
      }
      case OpKind::softmax_dropout_backward: {  // ddropped, probs, mask → dscores
        const int64_t cols = last_dim(g, op.inputs[1]);
        cuda::launch_softmax_dropout_backward(st, out[0], in[0], in[1], static_cast<const uint8_t*>(in[2]),
                                              elements(g, op.inputs[1]) / cols, cols, a.dropout_p, s);
        break;
      }
      case OpKind::bias_dropout_residual: {  // y (M,N), bias (N), residual → out, (mask u8)
        const int64_t N = last_dim(g, op.inputs[0]);
        const uint64_t key = dropout_key(context.seed, context.step, context.micro_step, a.rng_stream);
        cuda::launch_bias_dropout_residual_forward(out[0], out.size() > 1 ? static_cast<uint8_t*>(out[1]) : nullptr,
                                                   in[0], in[1], in[2], elements(g, op.inputs[0]) / N, N, a.dropout_p,
                                                   key, st, s);
        break;
      }
      case OpKind::bias_dropout_residual_backward: {  // dout, (mask) → dy, dbias +=
        const int64_t N = last_dim(g, op.inputs[0]), M = elements(g, op.inputs[0]) / N;
        cuda::launch_bias_dropout_residual_backward(
            out[0], out[1], in[0], in.size() > 1 ? static_cast<const uint8_t*>(in[1]) : nullptr, M, N, a.dropout_p,
            scratch(cuda::bias_dropout_residual_backward_scratch_bytes(M, N)), st, s);
        break;
      }
      case OpKind::gelu: cuda::launch_gelu_forward(out[0], in[0], elements(g, op.inputs[0]), a.gelu_tanh, st, s); break;
      case OpKind::gelu_backward:
        cuda::launch_gelu_backward(out[0], in[0], in[1], elements(g, op.inputs[0]), a.gelu_tanh, st, s);
        break;
      case OpKind::tanh: cuda::launch_tanh_forward(out[0], in[0], elements(g, op.inputs[0]), st, s); break;
      case OpKind::tanh_backward:
        cuda::launch_tanh_backward(out[0], in[0], in[1], elements(g, op.inputs[0]), st, s);
        break;
      case OpKind::split_heads:
        check_heads_shapes(g, op);
        cuda::launch_split_heads(out[0], in[0], a.batch, a.seq, a.heads, a.head_dim, st, s);
        break;
      case OpKind::merge_heads:
        check_heads_shapes(g, op);
        cuda::launch_merge_heads(out[0], in[0], a.batch, a.seq, a.heads, a.head_dim, st, s);
        break;
      case OpKind::gather_rows: {  // x (M,N), index (P) → y (P,N)
        const int64_t N = last_dim(g, op.inputs[0]);
        cuda::launch_gather_rows(out[0], in[0], ids(1), elements(g, op.inputs[1]), elements(g, op.inputs[0]) / N, N,
                                 cuda::DeviceErrorKind::gather_index, device_error(), st, s);
        break;
      }
      case OpKind::gather_rows_backward: {  // dy (P,N), index (P) → dx (M,N), zeros where not gathered
        const int64_t N = last_dim(g, op.outputs[0]);
        const int64_t M = elements(g, op.outputs[0]) / N;
        // All-zero bits are +0 in fp32, bf16 and fp16; then each gathered row is 0 + its rows in fp32, in
        // ascending p, rounded once (16-bit storage: the boundary's widen, fp32 sum, one narrowing).
        const size_t element_bytes = st == math::Storage::f32 ? sizeof(float) : sizeof(uint16_t);
        PTSIM_CUDA_CHECK(cudaMemsetAsync(out[0], 0, static_cast<size_t>(M * N) * element_bytes, s));
        segments_add(st, out[0], in[0], ids(1), elements(g, op.inputs[1]), N, M, cuda::DeviceErrorKind::gather_index);
        break;
      }
      case OpKind::cross_entropy: {  // logits (P,C), labels (P) → loss (1), lse (P)
        const int64_t C = last_dim(g, op.inputs[0]), P = elements(g, op.inputs[0]) / C;
        cuda::launch_cross_entropy_forward(st, y(0), y(1), in[0], ids(1), P, C, a.valid_classes,
                                           scratch(cuda::cross_entropy_scratch_bytes(P)), device_error(), s);
        break;
      }
      case OpKind::cross_entropy_backward: {  // dloss (1), logits, labels, lse → dlogits
        const int64_t C = last_dim(g, op.inputs[1]), P = elements(g, op.inputs[1]) / C;
        cuda::launch_cross_entropy_backward(st, out[0], x(0), in[1], ids(2), x(3), P, C, a.valid_classes, scratch(16),
                                            device_error(), s);
        break;
      }
      case OpKind::fused_attention:           // q, k, v, (mask) → context, lse
      case OpKind::fused_attention_backward:  // dcontext, q, k, v, context, lse, (mask) → dq, dk, dv
        fused_attention(g, op, in, out, context);
        break;
      default:
        throw std::invalid_argument(
            fmt::format("the CUDA backend does not run op kind {} ({})", models::to_string(op.kind), op.name));
    }
  }

  bool pending_matches(const Op& bias_grad, std::span<void* const> in) const {
    return pending_.op == bias_grad.id && pending_.dy == in[0];
  }

  // dbias (N) += column sums of dy (M, N), both stored as one 16-bit type (bias_grad_16bit.hpp). No GEMM
  // epilogue wrote them: that pairing needs an fp32 dbias (docs/cuda-backend.md, "16-bit GEMMs").
  void bias_grad_16bit(const TaskGraph& g, const Op& op, std::span<void* const> in, std::span<void* const> out) {
    const int64_t N = elements(g, op.outputs[0]), M = N > 0 ? elements(g, op.inputs[0]) / N : 0;
    cuda::launch_bias_grad(out[0], in[0], M, N, *math::storage_of_16bit(g.tensor(op.outputs[0]).dtype),
                           scratch(cuda::column_sums_scratch_bytes(M, N)), compute_stream());
  }

  // A gemm / batched_gemm on 16-bit operands (gemm_types.hpp: runs_16bit_natively said yes).
  void gemm_16bit(const TaskGraph& g, const Op& op, std::span<void* const> in, std::span<void* const> out) {
    const cuda::GemmTypes types = cuda::native_16bit_gemm_types(g, op).value();
    cuda::check_gemm_element_supported(types.ab, cc_major_, cc_minor_, gpu_name_);
    check_gemm_shapes(g, op);
    const models::GemmAttrs& a = op.attrs.gemm;
    const cuda::GemmOperands16 ops{out[0], in[0], in[1], a.has_bias ? in[2] : nullptr};
    if (op.kind == OpKind::batched_gemm) {
      cuda::batched_gemm_forward_16bit(cublas(), ops, types, a);
      return;
    }
    if (gemm_with_next_bias_grad(g, op, in, out, types)) return;
    cuda::gemm_forward_16bit(cublas(), lt_.get(), ops, types, a, [this](size_t bytes) { return scratch(bytes); },
                             compute_stream());
  }

  // The GEMM `op` with the next op's bias gradient in its cuBLASLt epilogue, when that op is a bias_grad
  // the layout allows (lt_gemm_plan.hpp, bias_grad_epilogue) into an fp32 dbias. False: nothing enqueued,
  // run it plainly. `types`: the GEMM's stored types (fp32, or 16-bit A/B with an fp32 C).
  bool gemm_with_next_bias_grad(const TaskGraph& g, const Op& op, std::span<void* const> in,
                                std::span<void* const> out, const cuda::GemmTypes& types = {}) {
    const size_t next = static_cast<size_t>(op.id) + 1;
    if (!lt_ || op.attrs.gemm.has_bias || next >= g.ops.size() || g.ops[next].kind != OpKind::bias_grad) return false;
    const Op& bias_grad = g.ops[next];
    if (g.tensor(bias_grad.outputs.at(0)).dtype != models::DType::f32) return false;
    const int dy = bias_grad.inputs.at(0);
    const int64_t N = elements(g, bias_grad.outputs.at(0));
    if (N <= 0) return false;
    const int64_t M = elements(g, dy) / N;
    std::optional<cuda::LtEpilogue> epilogue;
    const void* dy_address = nullptr;
    if (op.inputs[0] == dy) {
      epilogue = cuda::bias_grad_epilogue(op.attrs.gemm, cuda::GemmOperand::a, M, N);
      dy_address = stored_inputs_[0];
    } else if (op.inputs[1] == dy) {
      epilogue = cuda::bias_grad_epilogue(op.attrs.gemm, cuda::GemmOperand::b, M, N);
      dy_address = stored_inputs_[1];
    }
    if (!epilogue) return false;
    float* part = bias_grad_part(N);
    if (!cuda::gemm_with_bias_grad(*lt_, out[0], in[0], in[1], part, op.attrs.gemm, *epilogue, op.tf32_math,
                                   compute_stream(), types))
      return false;
    pending_ = {bias_grad.id, dy_address};
    return true;
  }

  // The epilogue's bias-gradient vector, at least N floats (grows after the compute stream drains).
  float* bias_grad_part(int64_t N) {
    if (N > bias_grad_part_elements_) {
      await_stream(compute_stream(), "the compute stream (bias-gradient growth)");
      PTSIM_CUDA_CHECK(cudaFree(bias_grad_part_));
      bias_grad_part_ = nullptr;
      void* part = nullptr;
      PTSIM_CUDA_CHECK(cudaMalloc(&part, static_cast<size_t>(N) * sizeof(float)));
      bias_grad_part_ = static_cast<float*>(part);
      bias_grad_part_elements_ = N;
    }
    return bias_grad_part_;
  }

  cuda::FusedAttentionArgs fused_attention_args(const TaskGraph& g, const Op& op, std::span<void* const> in,
                                                const OpContext& context) {
    const AttentionProblem p = attention_problem(g, op, context);
    const auto* keep = p.has_mask ? static_cast<const int32_t*>(in[attention_mask_input(op)]) : nullptr;
    return cuda::fused_attention_args(p, keep);
  }

  void fused_attention(const TaskGraph& g, const Op& op, std::span<void* const> in, std::span<void* const> out,
                       const OpContext& context) {
    const cuda::FusedAttentionArgs a = fused_attention_args(g, op, in, context);
    auto x = [&](size_t i) { return static_cast<const float*>(in[i]); };
    auto y = [&](size_t i) { return static_cast<float*>(out[i]); };
    if (op.kind == OpKind::fused_attention) {
      cuda::launch_fused_attention_forward(y(0), y(1), x(0), x(1), x(2), a, compute_stream());
      return;
    }
    cuda::launch_fused_attention_backward(y(0), y(1), y(2), x(0), x(1), x(2), x(3), x(4), x(5), a,
                                          scratch(cuda::fused_attention_backward_scratch_bytes(a)), compute_stream());
  }

  // The fused attention on its 16-bit tensors as stored (an op cuda::fused_attention_runs_natively accepts).
  void fused_attention_16bit(const TaskGraph& g, const Op& op, std::span<void* const> in, std::span<void* const> out,
                             const OpContext& context) {
    const cuda::FusedAttentionArgs a = fused_attention_args(g, op, in, context);
    const cuda::Attention16 t = cuda::attention16_of(g, op);
    cuda::check_attention_tc_supported(t, cc_major_, cc_minor_, gpu_name_);  // bf16 below sm_80: an InputError
    if (op.kind == OpKind::fused_attention) {
      cuda::launch_fused_attention_tc_forward(out[0], static_cast<float*>(out[1]), in[0], in[1], in[2], t, a,
                                              compute_stream());
      return;
    }
    cuda::launch_fused_attention_tc_backward(out[0], out[1], out[2], in[0], in[1], in[2], in[3], in[4],
                                             static_cast<const float*>(in[5]), t, a,
                                             scratch(cuda::fused_attention_backward_scratch_bytes(a)), compute_stream());
  }

  // dst[index[m]] += src[m] (rows of H in `storage`), deterministically (row_segments.cu).
  void segments_add(math::Storage storage, void* dst, const void* src, const int32_t* index, int64_t M, int64_t H,
                    int64_t V, cuda::DeviceErrorKind bad) {
    const size_t bytes = cuda::row_segments_scratch_bytes(M, V);
    cuda::launch_row_segments_add(storage, dst, src, index, M, H, V, bad, scratch(bytes), bytes, device_error(),
                                  compute_stream());
  }
};

}  // namespace

std::unique_ptr<Backend> make_cuda_backend(ComputeType compute, const BackendOptions& options) {
  if (compute != ComputeType::f32)
    throw core::InputError("backend 'cuda' computes in f32 only (f64 runs on the cpu backend)");
  if (cuda_device_count() == 0)
    throw core::InputError("backend 'cuda': no CUDA device was found (cudaGetDeviceCount reports none; use --backend cpu)");
  int device = 0;
  PTSIM_CUDA_CHECK(cudaGetDevice(&device));
  const bool epilogues = cuda::gemm_epilogues_enabled(std::getenv(cuda::kGemmEpiloguesEnv));
  const bool native_16bit = cuda::native_16bit_kernels_enabled(std::getenv(cuda::kNative16bitEnv));
  return std::make_unique<CudaBackend>(device, epilogues, native_16bit, options.attention);
}

int use_local_rank_device() {
  const int local_rank = local_rank_from_env().value_or(0);
  const int device = choose_local_device(local_rank, local_rank + 1, cuda_device_count());
  PTSIM_CUDA_CHECK(cudaSetDevice(device));
  return device;
}

}  // namespace ptsim::runtime
