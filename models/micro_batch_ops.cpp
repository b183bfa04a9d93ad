// models/micro_batch_ops.cpp — op costs at any micro-batch from two builds (see the header).
#include "models/micro_batch_ops.hpp"

#include <algorithm>
#include <cmath>

#include "models/builder.hpp"
#include "models/micro_batch_scaling.hpp"

namespace ptsim::models {
namespace {

// The size attributes of an op that its cost reads (models/op_cost.cpp), in MicroBatchOps::SizedOp::sizes order.
template <typename O>
auto size_fields(O& op) {
  auto& a = op.attrs;
  return std::array{&a.gemm.batch, &a.gemm.m, &a.gemm.n, &a.gemm.k, &a.seq, &a.head_dim, &a.rows, &a.cols};
}

// What the cost reads of an op besides its sizes, tensors and collective bytes: equal at micro-batch 1 and 2.
bool same_fixed_fields(const Op& x, const Op& y) {
  const CommAttrs &c = x.attrs.comm, &d = y.attrs.comm;
  return x.dtype == y.dtype && x.tf32_math == y.tf32_math && x.attrs.gemm.has_bias == y.attrs.gemm.has_bias &&
         x.attrs.gemm.accumulate == y.attrs.gemm.accumulate && x.attrs.causal == y.attrs.causal &&
         x.attrs.params == y.attrs.params && c.group == d.group && c.group_size == d.group_size &&
         c.bucket == d.bucket;
}

// A collective's payload at micro-batch 1 that doubles at 2 is scaled as an integer byte count (the builder's
// tensor bytes): B × bytes(1) is then the builder's double at B to the bit.
bool scalable_bytes(double at_one, double at_two) {
  return at_two == 2 * at_one && at_one == std::floor(at_one) && at_one < 0x1p53;
}

}  // namespace

std::optional<MicroBatchOps> MicroBatchOps::from(const TaskGraph& at_one, const TaskGraph& at_two) {
  if (at_one.recipe.micro_batch != 1 || at_two.recipe.micro_batch != 2 || !same_structure(at_one, at_two) ||
      at_one.params.size() != at_two.params.size())
    return std::nullopt;
  MicroBatchOps out;
  for (size_t i = 0; i < at_one.tensors.size(); ++i) {
    const int grows = micro_batch_dimensions(at_one.tensors[i], at_two.tensors[i]);
    if (grows < 0) return std::nullopt;
    out.tensor_elements_.push_back(at_one.tensors[i].elements());
    out.tensor_grows_.push_back(static_cast<uint8_t>(grows));
    out.tensor_dtypes_.push_back(at_one.tensors[i].dtype);
  }
  for (size_t p = 0; p < at_one.params.size(); ++p) {
    if (at_one.params[p].elements != at_two.params[p].elements) return std::nullopt;
    out.param_elements_.push_back(at_one.params[p].elements);
  }
  for (size_t i = 0; i < at_one.ops.size(); ++i) {
    const Op &x = at_one.ops[i], &y = at_two.ops[i];
    if (!same_fixed_fields(x, y)) return std::nullopt;
    SizedOp r;
    const auto one = size_fields(x), two = size_fields(y);
    for (size_t s = 0; s < kSizes; ++s) {
      r.sizes[s] = *one[s];
      if (*two[s] == *one[s]) continue;
      if (*two[s] != 2 * *one[s]) return std::nullopt;
      r.grows |= static_cast<uint16_t>(1u << s);
    }
    r.comm = x.attrs.comm;
    if (y.attrs.comm.bytes != x.attrs.comm.bytes) {
      if (!scalable_bytes(x.attrs.comm.bytes, y.attrs.comm.bytes)) return std::nullopt;
      r.grows |= static_cast<uint16_t>(1u << kSizes);
    }
    r.ids_begin = static_cast<uint32_t>(out.ids_.size());
    r.inputs = static_cast<uint32_t>(x.inputs.size());
    r.outputs = static_cast<uint32_t>(x.outputs.size());
    r.params = static_cast<uint32_t>(x.attrs.params.size());
    out.ids_.insert(out.ids_.end(), x.inputs.begin(), x.inputs.end());
    out.ids_.insert(out.ids_.end(), x.outputs.begin(), x.outputs.end());
    out.ids_.insert(out.ids_.end(), x.attrs.params.begin(), x.attrs.params.end());
    r.fixed = r.grows == 0 && std::none_of(out.ids_.begin() + r.ids_begin, out.ids_.begin() + r.ids_begin + r.inputs + r.outputs,
                                           [&](int t) { return out.tensor_grows_[static_cast<size_t>(t)] != 0; });
    r.flops = x.flops;
    r.bytes_read = x.bytes_read;
    r.bytes_written = x.bytes_written;
    r.kind = x.kind;
    r.phase = x.phase;
    r.dtype = x.dtype;
    r.tf32_math = x.tf32_math;
    r.has_bias = x.attrs.gemm.has_bias;
    r.accumulate = x.attrs.gemm.accumulate;
    r.causal = x.attrs.causal;
    out.ops_.push_back(r);
  }
  // The recorded fields are all the cost reads: recomputed at 1 and 2 they give the builds' own costs.
  bool same_costs = true;
  for (const TaskGraph* built : {&at_one, &at_two})
    out.for_each_op_at(built->recipe.micro_batch, [&](const Op& op) {
      const Op& b = built->ops[static_cast<size_t>(op.id)];
      same_costs = same_costs && op.flops == b.flops && op.bytes_read == b.bytes_read &&
                   op.bytes_written == b.bytes_written && op.attrs.comm.bytes == b.attrs.comm.bytes;
    });
  if (!same_costs) return std::nullopt;
  return out;
}

void MicroBatchOps::for_each_op_at(int64_t micro_batch, const std::function<void(const Op&)>& visit) const {
  std::vector<int64_t> elements(tensor_elements_.size());
  for (size_t t = 0; t < elements.size(); ++t)
    elements[t] = tensor_grows_[t] ? tensor_elements_[t] * micro_batch : tensor_elements_[t];
  const OpCostSizes sizes{elements, tensor_dtypes_, param_elements_};
  Op op;
  for (size_t i = 0; i < ops_.size(); ++i) {
    const SizedOp& r = ops_[i];
    op.id = static_cast<int>(i);
    op.kind = r.kind;
    op.phase = r.phase;
    op.dtype = r.dtype;
    op.tf32_math = r.tf32_math;
    const int* ids = ids_.data() + r.ids_begin;
    op.inputs.assign(ids, ids + r.inputs);
    op.outputs.assign(ids + r.inputs, ids + r.inputs + r.outputs);
    op.attrs.params.assign(ids + r.inputs + r.outputs, ids + r.inputs + r.outputs + r.params);
    op.attrs.gemm.has_bias = r.has_bias;
    op.attrs.gemm.accumulate = r.accumulate;
    op.attrs.causal = r.causal;
    const auto fields = size_fields(op);
    for (size_t s = 0; s < kSizes; ++s) *fields[s] = (r.grows >> s & 1u) ? r.sizes[s] * micro_batch : r.sizes[s];
    op.attrs.comm = r.comm;
    if (r.grows >> kSizes & 1u) op.attrs.comm.bytes = r.comm.bytes * static_cast<double>(micro_batch);
    if (r.fixed) {  // as built: nothing it reads depends on the micro-batch (the builder may rescale such costs, ZeRO's updates)
      op.flops = r.flops;
      op.bytes_read = r.bytes_read;
      op.bytes_written = r.bytes_written;
    } else {
      assign_op_cost(sizes, op);
    }
    visit(op);
  }
}

size_t MicroBatchOps::approximate_bytes() const {
  return sizeof(MicroBatchOps) + ops_.capacity() * sizeof(SizedOp) + ids_.capacity() * sizeof(int) +
         tensor_elements_.capacity() * sizeof(int64_t) + tensor_grows_.capacity() +
         tensor_dtypes_.capacity() * sizeof(DType) + param_elements_.capacity() * sizeof(int64_t);
}

}  // namespace ptsim::models
