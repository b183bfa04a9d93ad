// models/builder.cpp — the forward graph of BERT / GPT-2, then backward (autodiff.cpp), gradient
// buckets, global norm and optimizer ops. Parameter names follow HuggingFace (BertForPreTraining) so
// checkpoints load in transformers.
#include "models/builder.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "core/error.hpp"
#include "models/build_context.hpp"
#include "models/shard_units.hpp"

namespace ptsim::models {
namespace {

using core::InputError;

class ForwardBuilder {
 public:
  ForwardBuilder(TaskGraph& g, const ModelSpec& m, const Recipe& r)
      : ctx_{g, activation_dtype(r.precision), r.precision == Precision::tf32}, g_(g), m_(m), r_(r) {
    tp_ = r.tensor_parallel;
    B_ = r.micro_batch;
    S_ = r.seq_len;
    M_ = B_ * S_;
    H_ = m.hidden_size;
    heads_ = m.num_heads / tp_;
    kv_heads_ = m.kv_heads() / tp_;
    d_ = m.head_dim();
    ffn_ = m.intermediate_size / tp_;
    vocab_ = m.padded_vocab_size() / tp_;
    sp_ = r.sequence_parallel && tp_ > 1;
    R_ = sp_ ? M_ / tp_ : M_;
  }

  // The forward of g.chunk's layers: embeddings on the first chunk, heads and loss on the last (Megatron's
  // placement); a chunk that is not first starts from the received activation, one that is not last ends in
  // the activation it sends, and its backward starts from that activation's received gradient.
  BackwardOptions build() {
    BackwardOptions opts;
    opts.tensor_parallel = tp_;
    opts.recompute = r_.recompute_activations;
    opts.selective_recompute = r_.selective_recompute;
    PipelineChunk& chunk = g_.chunk;
    const bool bert = m_.family == ModelFamily::bert;
    const bool llama = m_.family == ModelFamily::llama;
    int x = -1;
    if (chunk.first()) {
      x = bert ? bert_embeddings() : llama ? llama_embeddings() : gpt2_embeddings();
    } else {
      if (bert) g_.inputs.attention_mask = input("attention_mask", {B_, S_});
      x = chunk.recv_activation = input("pipeline.recv_activation", {R_, H_}, ctx_.act_dtype);
      opts.grad_inputs.insert(x);
    }
    for (int64_t layer = chunk.first_layer; layer < chunk.end_layer; ++layer)
      x = bert ? bert_layer(x, static_cast<int>(layer))
               : llama ? llama_layer(x, static_cast<int>(layer)) : gpt2_layer(x, static_cast<int>(layer));
    if (chunk.last()) {
      if (!chunk.first() && m_.tie_word_embeddings) tied_embedding_copy();
      int loss = bert ? bert_heads(x) : llama ? llama_head(x) : gpt2_head(x);
      g_.loss_tensor = loss;
      opts.loss = loss;
      opts.loss_grad = g_.inputs.loss_grad = input("loss_grad", {1}, DType::f32);
    } else {
      opts.loss = chunk.send_activation = x;
      opts.loss_grad = chunk.recv_gradient = input("pipeline.recv_gradient", {R_, H_}, ctx_.act_dtype);
    }
    opts.tp_grad_reduce = tp_grad_reduce_;
    return opts;
  }

 private:
  // The last pipeline stage's own copy of the word embeddings, which its decoder is tied to (Megatron).
  void tied_embedding_copy() {
    const char* name = m_.family == ModelFamily::bert    ? "bert.embeddings.word_embeddings.weight"
                       : m_.family == ModelFamily::llama ? "model.embed_tokens.weight"
                                                         : "transformer.wte.weight";
    g_.chunk.tied_embedding_param = static_cast<int>(g_.params.size());
    word_table_ = param(name, {vocab_, H_}, true, -1);
  }

  // ---- tensors ----
  int input(const std::string& name, std::vector<int64_t> shape, DType dtype = DType::i32) {
    return ctx_.new_tensor(name, std::move(shape), dtype, TensorRole::input, -1);
  }

  int param(const std::string& name, std::vector<int64_t> shape, bool decay, int layer) {
    Parameter p;
    p.name = name;
    p.decay = decay;
    p.layer = layer;
    p.elements = shape_elements(name, shape);
    int index = static_cast<int>(g_.params.size());
    auto make = [&](const std::string& suffix, DType dtype, TensorRole role) {
      int id = ctx_.new_tensor(name + suffix, shape, dtype, role, layer);
      g_.tensors[static_cast<size_t>(id)].param_index = index;
      return id;
    };
    p.weight = make("", ctx_.act_dtype, TensorRole::weight);
    p.gradient = make(".grad", ctx_.act_dtype, TensorRole::gradient);
    if (is_mixed_precision(r_.precision)) p.master = make(".master", DType::f32, TensorRole::master_weight);
    int states = r_.optimizer == OptimizerKind::sgd ? 1 : 2;
    for (int s = 0; s < states; ++s)
      p.optimizer_states.push_back(make(s == 0 ? ".exp_avg" : ".exp_avg_sq", DType::f32, TensorRole::optimizer_state));
    g_.params.push_back(p);
    return p.weight;
  }

  int act(const std::string& name, std::vector<int64_t> shape, int layer) { return ctx_.activation(name, std::move(shape), layer); }

  // ---- ops ----
  int emit1(OpKind kind, const std::string& name, int layer, std::vector<int> inputs, std::vector<int64_t> out_shape,
            OpAttrs attrs = {}, DType out_dtype = DType::f32, bool act_type = true) {
    int out = act_type ? act(name, std::move(out_shape), layer) : ctx_.activation(name, std::move(out_shape), layer, out_dtype);
    ctx_.emit(kind, name, Phase::forward, layer, std::move(inputs), {out}, std::move(attrs));
    return out;
  }

  // y [rows, out] = x [rows, in] · W^T (+ b); W is [out, in] as nn.Linear stores it.
  int linear(const std::string& name, int x, int64_t rows, int64_t in, int64_t out, int layer, bool bias = true,
             int shared_weight = -1, bool decay = true) {
    int w = shared_weight >= 0 ? shared_weight : param(name + ".weight", {out, in}, decay, layer);
    std::vector<int> inputs = {x, w};
    if (bias) inputs.push_back(param(name + ".bias", {out}, false, layer));
    OpAttrs a;
    a.gemm.m = rows;
    a.gemm.n = out;
    a.gemm.k = in;
    a.gemm.trans_b = true;
    a.gemm.has_bias = bias;
    if (fp8_linear(layer)) {  // Transformer Engine's te.Linear: both operands cast to E4M3 first
      a.gemm.fp8 = true;
      inputs[0] = fp8_cast(x, layer);
      inputs[1] = fp8_cast(w, layer);
    }
    return emit1(OpKind::gemm, name, layer, inputs, {rows, out}, a);
  }

  // Under precision fp8 the transformer layers' linears run in fp8 (TE replaces those modules); the
  // embeddings, the heads' linears and attention's batched GEMMs stay bf16 (docs/precisions.md).
  bool fp8_linear(int layer) const {
    return r_.precision == Precision::fp8 && layer >= 0 && layer < m_.num_layers;
  }

  // The E4M3 copy of a bf16 tensor [R, C] (an activation or a weight), with its transpose [C, R] kept for
  // backward and its amax; one cast per tensor, shared by the linears that read it (Q, K and V).
  int fp8_cast(int source, int layer) {
    if (auto it = fp8_casts_.find(source); it != fp8_casts_.end()) return it->second;
    const Tensor& t = g_.tensor(source);
    const int64_t cols = t.shape.back(), rows = t.elements() / cols;
    const std::string name = t.name;
    int x8 = ctx_.activation(name + ".fp8", {rows, cols}, layer, DType::f8e4m3);
    int x8t = ctx_.activation(name + ".fp8_t", {cols, rows}, layer, DType::f8e4m3);
    int amax = ctx_.activation(name + ".amax", {1}, layer, DType::f32);
    OpAttrs a;
    a.rows = rows;
    a.cols = cols;
    ctx_.emit(OpKind::fp8_cast_transpose, name + ".fp8_cast", Phase::forward, layer, {source}, {x8, x8t, amax}, a);
    return fp8_casts_[source] = x8;
  }

  int layernorm(const std::string& name, int x, int64_t rows, int layer) {
    int gamma = param(name + ".weight", {H_}, false, layer);
    int beta = param(name + ".bias", {H_}, false, layer);
    int y = act(name, {rows, H_}, layer);
    int mean = ctx_.activation(name + ".mean", {rows}, layer, DType::f32);
    int rstd = ctx_.activation(name + ".rstd", {rows}, layer, DType::f32);
    OpAttrs a;
    a.rows = rows;
    a.cols = H_;
    a.epsilon = m_.layer_norm_eps;
    ctx_.emit(OpKind::layernorm, name, Phase::forward, layer, {x, gamma, beta}, {y, mean, rstd}, a);
    return y;
  }

  int dropout(const std::string& name, int x, double p, int layer) {
    if (!r_.include_dropout || p <= 0) return x;
    const Tensor& t = g_.tensor(x);
    std::vector<int64_t> shape = t.shape;
    int y = act(name, shape, layer);
    int mask = ctx_.activation(name + ".mask", shape, layer, DType::u8);
    OpAttrs a;
    a.dropout_p = p;
    a.rng_stream = ++rng_streams_;
    ctx_.emit(OpKind::dropout, name, Phase::forward, layer, {x}, {y, mask}, a);
    return y;
  }

  int add(const std::string& name, std::vector<int> xs, int layer) {
    std::vector<int64_t> shape = g_.tensor(xs[0]).shape;
    return emit1(OpKind::add, name, layer, std::move(xs), shape);
  }

  int tp_all_reduce(const std::string& name, int x, int layer) {
    if (tp_ == 1) return x;
    OpAttrs a;
    a.comm.group = CommGroup::tensor_parallel;
    a.comm.group_size = tp_;
    a.comm.bytes = static_cast<double>(g_.tensor(x).bytes());
    return emit1(OpKind::all_reduce, name, layer, {x}, g_.tensor(x).shape, a);
  }

  // Megatron's "f" operator: identity forward, all-reduce of the gradient over the TP group in backward.
  void tp_enter_parallel_region(int x) {
    if (tp_ > 1) tp_grad_reduce_.insert(x);
  }

  // ---- the tensor-parallel region's edges (Megatron's f and g; with sequence parallelism their all-gather /
  // reduce-scatter form, Korthikanti et al. 2022 §4.2.2) ----
  // Before a column-parallel linear: "f" (identity; the gradient is all-reduced), or under sequence parallelism
  // the all-gather of the ranks' sequence shards [S/T rows] into the whole [S rows] (backward: reduce-scatter).
  int enter_tensor_region(const std::string& name, int x, int layer) {
    if (!sp_) {
      tp_enter_parallel_region(x);
      return x;
    }
    return tp_sequence_collective(OpKind::all_gather, name + ".tp_all_gather", x, M_, layer);
  }

  // After a row-parallel linear (or the vocabulary-parallel embedding): "g", the all-reduce of the partial sums,
  // or under sequence parallelism their reduce-scatter to this rank's S/T rows (backward: all-gather).
  int leave_tensor_region(const std::string& name, int x, int layer) {
    if (!sp_) return tp_all_reduce(name + ".tp_all_reduce", x, layer);
    return tp_sequence_collective(OpKind::reduce_scatter, name + ".tp_reduce_scatter", x, R_, layer);
  }

  // Both move the whole [B·S, H] tensor's bytes in the ring's terms (attrs.comm.bytes is the gathered size).
  int tp_sequence_collective(OpKind kind, const std::string& name, int x, int64_t out_rows, int layer) {
    OpAttrs a;
    a.comm.group = CommGroup::tensor_parallel;
    a.comm.group_size = tp_;
    a.comm.bytes = static_cast<double>(M_ * H_ * static_cast<int64_t>(dtype_bytes(ctx_.act_dtype)));
    return emit1(kind, name, layer, {x}, {out_rows, H_}, a);
  }

  // ---- a sublayer's end: output linear, dropout, residual ----
  // The output linear of attention or the MLP. Under fused_bias_dropout_residual its bias is not added by the
  // GEMM but by the fused op after it (Megatron's skip_bias_add), held in pending_bias_ until then.
  int output_linear(const std::string& name, int x, int64_t in, int layer) {
    if (!r_.fused_bias_dropout_residual) return linear(name, x, M_, in, H_, layer);
    int y = linear(name, x, M_, in, H_, layer, false);
    pending_bias_ = param(name + ".bias", {H_}, false, layer);
    return y;
  }

  // residual + dropout(y): a dropout and an add (the bias already in the GEMM), or one bias_dropout_residual
  // op (Megatron-LM's / Transformer Engine's bias_dropout_add) that also adds the pending bias.
  int dropout_residual(const std::string& prefix, const char* dropout_suffix, const char* add_suffix, int y,
                       int residual, bool residual_first, int layer) {
    if (!r_.fused_bias_dropout_residual) {
      y = dropout(prefix + dropout_suffix, y, m_.hidden_dropout, layer);
      return add(prefix + add_suffix, residual_first ? std::vector<int>{residual, y} : std::vector<int>{y, residual},
                 layer);
    }
    const std::string name = prefix + ".bias_dropout_residual";
    OpAttrs a;
    a.rows = R_;
    a.cols = H_;
    std::vector<int> outputs = {act(name, {R_, H_}, layer)};
    if (r_.include_dropout && m_.hidden_dropout > 0) {
      a.dropout_p = m_.hidden_dropout;
      a.rng_stream = ++rng_streams_;
      outputs.push_back(ctx_.activation(name + ".mask", {R_, H_}, layer, DType::u8));
    }
    ctx_.emit(OpKind::bias_dropout_residual, name, Phase::forward, layer, {y, pending_bias_, residual}, outputs, a);
    pending_bias_ = -1;
    return outputs[0];
  }

  // Attention's probabilities: softmax (scale in the scores GEMM's α, mask inside) then dropout, or both in one
  // softmax_dropout kernel (fused_softmax_dropout) that writes the probabilities for backward beside the
  // dropped ones and the mask.
  int softmax_then_dropout(const std::string& prefix, const std::vector<int>& inputs, const OpAttrs& sm, int layer) {
    const int64_t bh = B_ * heads_;
    const bool drop = r_.include_dropout && m_.attention_dropout > 0;
    if (!r_.fused_softmax_dropout || !drop) {
      int probs = emit1(OpKind::softmax, prefix + ".softmax", layer, inputs, {bh, S_, S_}, sm);
      return dropout(prefix + ".attn_dropout", probs, m_.attention_dropout, layer);
    }
    const std::string name = prefix + ".softmax_dropout";
    OpAttrs a = sm;
    a.dropout_p = m_.attention_dropout;
    a.rng_stream = ++rng_streams_;
    int dropped = act(name, {bh, S_, S_}, layer);
    int probs = act(name + ".probs", {bh, S_, S_}, layer);
    int mask = ctx_.activation(name + ".mask", {bh, S_, S_}, layer, DType::u8);
    ctx_.emit(OpKind::softmax_dropout, name, Phase::forward, layer, inputs, {dropped, probs, mask}, a);
    return dropped;
  }

  // ---- attention (shared by BERT and GPT-2) ----
  // The fused kernel a stack with "fused_attention" runs: one op from the heads to the context [B·nh, S, d];
  // it keeps the softmax's log-sum-exp per row (B·nh·S floats) for backward instead of the S×S probabilities.
  // K/V may have fewer heads than Q (grouped-query attention): the kernel reads each once for its group.
  int fused_attention_core(const std::string& prefix, int qh, int kh, int vh, const OpAttrs& heads, int layer,
                           bool causal) {
    const int64_t bh = B_ * heads_;
    OpAttrs fa = heads;
    fa.gemm.batch = bh;  // FLOPs per query head
    fa.gemm.m = S_;
    fa.gemm.n = S_;
    fa.gemm.k = d_;
    fa.gemm.alpha = 1.0 / std::sqrt(static_cast<double>(d_));
    fa.rows = bh * S_;
    fa.cols = S_;
    fa.causal = causal;
    fa.dropout_p = r_.include_dropout ? m_.attention_dropout : 0;
    // The stream the unfused path's attention dropout takes at this point (dropout()), so the fused kernel
    // draws the same mask at the same [B·nh, S, S] element index and both paths train identically.
    if (fa.dropout_p > 0) fa.rng_stream = ++rng_streams_;
    std::vector<int> inputs = {qh, kh, vh};
    if (!causal) inputs.push_back(g_.inputs.attention_mask);
    int context = act(prefix + ".fused_attention", {bh, S_, d_}, layer);
    int lse = ctx_.activation(prefix + ".fused_attention.lse", {bh, S_}, layer, DType::f32);
    ctx_.emit(OpKind::fused_attention, prefix + ".fused_attention", Phase::forward, layer, inputs, {context, lse}, fa);
    return context;
  }

  // Without the fused kernel: scores = QKᵀ/√d, the (masked) softmax and its dropout, then ·V; returns the
  // context [B·nh, S, d]. K and V have the query's head count here.
  int unfused_attention_core(const std::string& prefix, int qh, int kh, int vh, const OpAttrs& heads, int layer,
                             bool causal) {
    const int64_t bh = B_ * heads_;
    OpAttrs sc;
    sc.gemm.batch = bh;
    sc.gemm.m = S_;
    sc.gemm.n = S_;
    sc.gemm.k = d_;
    sc.gemm.trans_b = true;
    sc.gemm.alpha = 1.0 / std::sqrt(static_cast<double>(d_));
    int scores = emit1(OpKind::batched_gemm, prefix + ".scores", layer, {qh, kh}, {bh, S_, S_}, sc);
    OpAttrs sm = heads;
    sm.rows = bh * S_;
    sm.cols = S_;
    sm.causal = causal;
    std::vector<int> sm_inputs = {scores};
    if (!causal) sm_inputs.push_back(g_.inputs.attention_mask);
    int probs = softmax_then_dropout(prefix, sm_inputs, sm, layer);
    OpAttrs cx;
    cx.gemm.batch = bh;
    cx.gemm.m = S_;
    cx.gemm.n = d_;
    cx.gemm.k = S_;
    return emit1(OpKind::batched_gemm, prefix + ".context", layer, {probs, vh}, {bh, S_, d_}, cx);
  }

  int self_attention(const std::string& prefix, const std::string& out_prefix, int x, int layer, bool causal) {
    const int64_t local_hidden = heads_ * d_;
    int q = linear(prefix + ".query", x, M_, H_, local_hidden, layer);
    int k = linear(prefix + ".key", x, M_, H_, local_hidden, layer);
    int v = linear(prefix + ".value", x, M_, H_, local_hidden, layer);
    OpAttrs heads;
    heads.batch = B_;
    heads.seq = S_;
    heads.heads = heads_;
    heads.head_dim = d_;
    const int64_t bh = B_ * heads_;
    int qh = emit1(OpKind::split_heads, prefix + ".query.split", layer, {q}, {bh, S_, d_}, heads);
    int kh = emit1(OpKind::split_heads, prefix + ".key.split", layer, {k}, {bh, S_, d_}, heads);
    int vh = emit1(OpKind::split_heads, prefix + ".value.split", layer, {v}, {bh, S_, d_}, heads);
    int context = r_.fused_attention ? fused_attention_core(prefix, qh, kh, vh, heads, layer, causal)
                                     : unfused_attention_core(prefix, qh, kh, vh, heads, layer, causal);
    int merged = emit1(OpKind::merge_heads, prefix + ".context.merge", layer, {context}, {M_, local_hidden}, heads);
    int out = output_linear(out_prefix, merged, local_hidden, layer);
    return leave_tensor_region(out_prefix, out, layer);
  }

  int mlp(const std::string& in_name, const std::string& out_name, int x, int layer, bool gelu_tanh) {
    int h = linear(in_name, x, M_, H_, ffn_, layer);
    OpAttrs ga;
    ga.gelu_tanh = gelu_tanh;
    int g = emit1(OpKind::gelu, in_name + ".gelu", layer, {h}, {M_, ffn_}, ga);
    int o = output_linear(out_name, g, ffn_, layer);
    return leave_tensor_region(out_name, o, layer);
  }

  // ---- BERT ----
  int bert_embeddings() {
    g_.inputs.input_ids = input("input_ids", {M_});
    g_.inputs.token_type_ids = input("token_type_ids", {R_});  // this rank's sequence shard under sequence parallel
    g_.inputs.position_ids = input("position_ids", {R_});
    g_.inputs.attention_mask = input("attention_mask", {B_, S_});
    word_table_ = param("bert.embeddings.word_embeddings.weight", {vocab_, H_}, true, -1);
    int pos_table = param("bert.embeddings.position_embeddings.weight", {m_.max_position_embeddings, H_}, true, -1);
    int type_table = param("bert.embeddings.token_type_embeddings.weight", {m_.type_vocab_size, H_}, true, -1);
    int we = emit1(OpKind::embedding, "bert.embeddings.word", -1, {word_table_, g_.inputs.input_ids}, {M_, H_});
    we = leave_tensor_region("bert.embeddings.word", we, -1);
    int pe = emit1(OpKind::embedding, "bert.embeddings.position", -1, {pos_table, g_.inputs.position_ids}, {R_, H_});
    int te = emit1(OpKind::embedding, "bert.embeddings.token_type", -1, {type_table, g_.inputs.token_type_ids}, {R_, H_});
    int sum = add("bert.embeddings.sum", {we, pe, te}, -1);
    int x = layernorm("bert.embeddings.LayerNorm", sum, R_, -1);
    return dropout("bert.embeddings.dropout", x, m_.hidden_dropout, -1);
  }

  int bert_layer(int x, int layer) {
    const std::string p = fmt::format("bert.encoder.layer.{}", layer);
    int xg = enter_tensor_region(p + ".attention", x, layer);
    int attn = self_attention(p + ".attention.self", p + ".attention.output.dense", xg, layer, false);
    int r1 = dropout_residual(p + ".attention.output", ".dropout", ".residual", attn, x, false, layer);
    int x1 = layernorm(p + ".attention.output.LayerNorm", r1, R_, layer);
    int x1g = enter_tensor_region(p + ".intermediate", x1, layer);
    int o = mlp(p + ".intermediate.dense", p + ".output.dense", x1g, layer, false);
    int r2 = dropout_residual(p + ".output", ".dropout", ".residual", o, x1, false, layer);
    return layernorm(p + ".output.LayerNorm", r2, R_, layer);
  }

  int bert_heads(int x) {
    const int head = static_cast<int>(m_.num_layers);
    if (sp_) x = tp_sequence_collective(OpKind::all_gather, "bert.heads.tp_all_gather", x, M_, head);
    const int64_t P = B_ * r_.max_predictions_per_seq();
    g_.inputs.masked_positions = input("masked_positions", {P});
    g_.inputs.masked_labels = input("masked_labels", {P});
    g_.inputs.cls_positions = input("cls_positions", {B_});
    g_.inputs.nsp_labels = input("nsp_labels", {B_});
    // MLM: gather the masked positions first (NVIDIA/DeepSpeed BERT), then transform + decoder.
    OpAttrs ga;
    ga.rows = M_;
    ga.cols = H_;
    int rows = emit1(OpKind::gather_rows, "cls.predictions.gather", head, {x, g_.inputs.masked_positions}, {P, H_}, ga);
    int t = linear("cls.predictions.transform.dense", rows, P, H_, H_, head);
    int tg = emit1(OpKind::gelu, "cls.predictions.transform.gelu", head, {t}, {P, H_});
    int tn = layernorm("cls.predictions.transform.LayerNorm", tg, P, head);
    OpAttrs dec;
    dec.gemm.m = P;
    dec.gemm.n = vocab_;
    dec.gemm.k = H_;
    dec.gemm.trans_b = true;
    dec.gemm.has_bias = true;
    int dec_bias = param("cls.predictions.bias", {vocab_}, false, head);
    int logits = emit1(OpKind::gemm, "cls.predictions.decoder", head, {tn, word_table_, dec_bias}, {P, vocab_}, dec);
    int mlm_loss = cross_entropy("cls.predictions.loss", logits, g_.inputs.masked_labels, P, vocab_,
                                 tp_ == 1 ? m_.vocab_size : 0, head);
    // NSP: [CLS] rows → pooler (dense + tanh) → 2-way classifier.
    OpAttrs gc;
    gc.rows = M_;
    gc.cols = H_;
    int cls = emit1(OpKind::gather_rows, "bert.pooler.gather", head, {x, g_.inputs.cls_positions}, {B_, H_}, gc);
    int pooled = linear("bert.pooler.dense", cls, B_, H_, H_, head);
    int pt = emit1(OpKind::tanh, "bert.pooler.tanh", head, {pooled}, {B_, H_});
    int nsp_logits = linear("cls.seq_relationship", pt, B_, H_, 2, head);
    int nsp_loss = cross_entropy("cls.seq_relationship.loss", nsp_logits, g_.inputs.nsp_labels, B_, 2, 2, head);
    return emit1(OpKind::add, "loss", head, {mlm_loss, nsp_loss}, {1}, {}, DType::f32, false);
  }

  int cross_entropy(const std::string& name, int logits, int labels, int64_t rows, int64_t classes, int64_t valid,
                    int layer) {
    int loss = ctx_.activation(name, {1}, layer, DType::f32);
    int lse = ctx_.activation(name + ".logsumexp", {rows}, layer, DType::f32);
    OpAttrs a;
    a.rows = rows;
    a.cols = classes;
    a.valid_classes = valid;
    ctx_.emit(OpKind::cross_entropy, name, Phase::forward, layer, {logits, labels}, {loss, lse}, a);
    return loss;
  }

  // ---- GPT-2 (pre-LN, causal) ----
  int gpt2_embeddings() {
    g_.inputs.input_ids = input("input_ids", {M_});
    g_.inputs.position_ids = input("position_ids", {R_});  // this rank's sequence shard under sequence parallel
    word_table_ = param("transformer.wte.weight", {vocab_, H_}, true, -1);
    int pos_table = param("transformer.wpe.weight", {m_.max_position_embeddings, H_}, true, -1);
    int we = emit1(OpKind::embedding, "transformer.wte", -1, {word_table_, g_.inputs.input_ids}, {M_, H_});
    we = leave_tensor_region("transformer.wte", we, -1);
    int pe = emit1(OpKind::embedding, "transformer.wpe", -1, {pos_table, g_.inputs.position_ids}, {R_, H_});
    int sum = add("transformer.embeddings.sum", {we, pe}, -1);
    return dropout("transformer.drop", sum, m_.hidden_dropout, -1);
  }

  int gpt2_layer(int x, int layer) {
    const std::string p = fmt::format("transformer.h.{}", layer);
    int h = enter_tensor_region(p + ".ln_1", layernorm(p + ".ln_1", x, R_, layer), layer);
    int a = self_attention(p + ".attn", p + ".attn.c_proj", h, layer, true);
    int x1 = dropout_residual(p + ".attn", ".resid_dropout", ".residual", a, x, true, layer);
    int h2 = enter_tensor_region(p + ".ln_2", layernorm(p + ".ln_2", x1, R_, layer), layer);
    int o = mlp(p + ".mlp.c_fc", p + ".mlp.c_proj", h2, layer, true);
    return dropout_residual(p + ".mlp", ".dropout", ".residual", o, x1, true, layer);
  }

  int gpt2_head(int x) {
    const int head = static_cast<int>(m_.num_layers);
    g_.inputs.lm_labels = input("lm_labels", {M_});
    int xf = enter_tensor_region("transformer.ln_f", layernorm("transformer.ln_f", x, R_, head), head);
    OpAttrs dec;
    dec.gemm.m = M_;
    dec.gemm.n = vocab_;
    dec.gemm.k = H_;
    dec.gemm.trans_b = true;
    int logits = emit1(OpKind::gemm, "lm_head", head, {xf, word_table_}, {M_, vocab_}, dec);
    return cross_entropy("lm_head.loss", logits, g_.inputs.lm_labels, M_, vocab_, tp_ == 1 ? m_.vocab_size : 0, head);
  }

  // ---- Llama (pre-RMSNorm, causal; HF LlamaForCausalLM names; docs/llama.md) ----
  int llama_embeddings() {
    g_.inputs.input_ids = input("input_ids", {M_});
    word_table_ = param("model.embed_tokens.weight", {vocab_, H_}, true, -1);
    int we = emit1(OpKind::embedding, "model.embed_tokens", -1, {word_table_, g_.inputs.input_ids}, {M_, H_});
    return leave_tensor_region("model.embed_tokens", we, -1);  // this rank's sequence shard under sequence parallel
  }

  int llama_layer(int x, int layer) {
    const std::string p = fmt::format("model.layers.{}", layer);
    int h = enter_tensor_region(p + ".input_layernorm", rmsnorm(p + ".input_layernorm", x, layer), layer);
    int a = llama_attention(p + ".self_attn", h, layer);
    int x1 = add(p + ".self_attn.residual", {x, a}, layer);  // no bias, no dropout: nothing to fuse
    int h2 = enter_tensor_region(p + ".post_attention_layernorm", rmsnorm(p + ".post_attention_layernorm", x1, layer),
                                 layer);
    int o = swiglu_mlp(p + ".mlp", h2, layer);
    return add(p + ".mlp.residual", {x1, o}, layer);
  }

  int llama_head(int x) {
    const int head = static_cast<int>(m_.num_layers);
    g_.inputs.lm_labels = input("lm_labels", {M_});
    int xf = enter_tensor_region("model.norm", rmsnorm("model.norm", x, head), head);
    int w = m_.tie_word_embeddings ? word_table_ : param("lm_head.weight", {vocab_, H_}, true, head);
    OpAttrs dec;
    dec.gemm.m = M_;
    dec.gemm.n = vocab_;
    dec.gemm.k = H_;
    dec.gemm.trans_b = true;
    int logits = emit1(OpKind::gemm, "lm_head", head, {xf, w}, {M_, vocab_}, dec);
    return cross_entropy("lm_head.loss", logits, g_.inputs.lm_labels, M_, vocab_, tp_ == 1 ? m_.vocab_size : 0, head);
  }

  // On the residual stream's rows: B·S, or this rank's B·S/T under sequence parallelism (R_).
  int rmsnorm(const std::string& name, int x, int layer) {
    int gamma = param(name + ".weight", {H_}, false, layer);
    int y = act(name, {R_, H_}, layer);
    int rstd = ctx_.activation(name + ".rstd", {R_}, layer, DType::f32);
    OpAttrs a;
    a.rows = R_;
    a.cols = H_;
    a.epsilon = m_.layer_norm_eps;
    ctx_.emit(OpKind::rmsnorm, name, Phase::forward, layer, {x, gamma}, {y, rstd}, a);
    return y;
  }

  // gate and up column-parallel (F/T columns each), down row-parallel, as Megatron-LM splits SwiGLU.
  int swiglu_mlp(const std::string& p, int x, int layer) {
    int gate = linear(p + ".gate_proj", x, M_, H_, ffn_, layer, false);
    int up = linear(p + ".up_proj", x, M_, H_, ffn_, layer, false);
    int y = emit1(OpKind::swiglu, p + ".act_fn", layer, {gate, up}, {M_, ffn_});
    int down = linear(p + ".down_proj", y, M_, ffn_, H_, layer, false);
    return leave_tensor_region(p + ".down_proj", down, layer);
  }

  OpAttrs head_attrs(int64_t heads) const {
    OpAttrs a;
    a.batch = B_;
    a.seq = S_;
    a.heads = heads;
    a.head_dim = d_;
    a.rope_theta = m_.rope_theta;
    return a;
  }

  // Grouped-query attention: nh/T query heads and kv/T key/value heads per rank (kv divisible by T, checked),
  // rotary embeddings on q and k; a fused kernel reads each K/V head once for its group (broadcast), an
  // unfused stack copies K and V to every query head first (HF's repeat_kv).
  int llama_attention(const std::string& p, int x, int layer) {
    const int64_t q_width = heads_ * d_, kv_width = kv_heads_ * d_;
    int q = linear(p + ".q_proj", x, M_, H_, q_width, layer, false);
    int k = linear(p + ".k_proj", x, M_, H_, kv_width, layer, false);
    int v = linear(p + ".v_proj", x, M_, H_, kv_width, layer, false);
    const OpAttrs qa = head_attrs(heads_), kva = head_attrs(kv_heads_);
    int qh = emit1(OpKind::split_heads, p + ".q_proj.split", layer, {q}, {B_ * heads_, S_, d_}, qa);
    int kh = emit1(OpKind::split_heads, p + ".k_proj.split", layer, {k}, {B_ * kv_heads_, S_, d_}, kva);
    int vh = emit1(OpKind::split_heads, p + ".v_proj.split", layer, {v}, {B_ * kv_heads_, S_, d_}, kva);
    qh = emit1(OpKind::rotary_embedding, p + ".q_rotary", layer, {qh}, {B_ * heads_, S_, d_}, qa);
    kh = emit1(OpKind::rotary_embedding, p + ".k_rotary", layer, {kh}, {B_ * kv_heads_, S_, d_}, kva);
    if (!r_.fused_attention && kv_heads_ < heads_) {  // an unfused stack copies K/V to every query head
      kh = emit1(OpKind::repeat_kv, p + ".k_proj.repeat_kv", layer, {kh}, {B_ * heads_, S_, d_}, qa);
      vh = emit1(OpKind::repeat_kv, p + ".v_proj.repeat_kv", layer, {vh}, {B_ * heads_, S_, d_}, qa);
    }
    int context = r_.fused_attention ? fused_attention_core(p, qh, kh, vh, qa, layer, true)
                                     : unfused_attention_core(p, qh, kh, vh, qa, layer, true);
    int merged = emit1(OpKind::merge_heads, p + ".context.merge", layer, {context}, {M_, q_width}, qa);
    int out = linear(p + ".o_proj", merged, M_, q_width, H_, layer, false);
    return leave_tensor_region(p + ".o_proj", out, layer);
  }

  BuildContext ctx_;
  TaskGraph& g_;
  const ModelSpec& m_;
  const Recipe& r_;
  int64_t tp_ = 1, B_ = 0, S_ = 0, M_ = 0, H_ = 0, heads_ = 0, kv_heads_ = 0, d_ = 0, ffn_ = 0, vocab_ = 0;
  bool sp_ = false;  // sequence parallel: the residual stream, LayerNorms and dropouts hold R_ = M_/tp_ rows
  int64_t R_ = 0;    // rows outside the tensor-parallel region: M_, or this rank's M_/tp_ under sequence parallel
  int word_table_ = -1;
  uint64_t rng_streams_ = 0;
  std::set<int> tp_grad_reduce_;
  std::map<int, int> fp8_casts_;  // bf16 tensor → its fp8 cast (precision fp8)
  int pending_bias_ = -1;         // an output linear's bias for the next bias_dropout_residual op
};

}  // namespace

void check_recipe_fits_model(const ModelSpec& m, const Recipe& r) {
  validate_recipe(r);
  if (r.seq_len > m.max_position_embeddings)
    throw InputError(fmt::format("seq-len {} exceeds the model's {} position embeddings ({})", r.seq_len,
                                 m.max_position_embeddings, m.name));
  auto divisible = [&](int64_t value, const char* what) {
    if (value % r.tensor_parallel != 0)
      throw InputError(fmt::format("tensor-parallel size {} must divide the model's {} ({})", r.tensor_parallel,
                                   what, value));
  };
  // Stage 1 has no hybrid mode: it keeps whole gradients and reduces them once per step over every
  // data-parallel rank (DeepSpeed, Megatron's distributed optimizer); FSDP's hybrid modes shard gradients.
  if (r.shard_group > 0 && r.zero_stage < 2)
    throw InputError(fmt::format("recipe.shard_group {} applies to zero_stage 2 (FSDP _HYBRID_SHARD_ZERO2) and 3 "
                                 "(HYBRID_SHARD) only; zero_stage is {}{}: remove shard_group or set zero_stage 2 or 3",
                                 r.shard_group, r.zero_stage,
                                 r.zero_stage == 1 ? " (stage 1 shards only the optimizer state, over every "
                                                     "data-parallel rank; neither DeepSpeed nor FSDP has a hybrid stage 1)"
                                                   : ""));
  if (r.shard_group > 0 && (r.shard_group < 2 || r.data_parallel % r.shard_group != 0))
    throw InputError(fmt::format("recipe.shard_group {} must be at least 2 and divide the {} data-parallel ranks "
                                 "(e.g. the ranks of one node)", r.shard_group, r.data_parallel));
  if (r.rank_order != RankOrder::tp_dp_pp && r.pipeline_parallel == 1)
    throw InputError(fmt::format("recipe.rank_order {} differs from tp-dp-pp only with pipeline_parallel > 1: remove it "
                                 "or add pipeline stages", to_string(r.rank_order)));
  // With a pipeline only stage 1 (Megatron-LM's distributed optimizer, sharded over each stage's data-parallel
  // group) is simulated; DeepSpeed, too, combines pipelining with stage 1 only.
  if (r.zero_stage > 1 && r.pipeline_parallel > 1)
    throw InputError(fmt::format("zero_stage {} with pipeline_parallel > 1 is not simulated: with a pipeline use "
                                 "zero_stage 1 (the distributed optimizer) or none", r.zero_stage));
  divisible(m.num_heads, "number of heads");
  if (m.kv_heads() != m.num_heads)  // Megatron-LM's rule: K/V heads are split, never replicated (docs/llama.md)
    divisible(m.kv_heads(), "number of key/value heads (grouped-query attention)");
  divisible(m.intermediate_size, "FFN width");
  divisible(m.padded_vocab_size(), "padded vocabulary");
  if (m.family == ModelFamily::bert && r.max_predictions_per_seq() > r.seq_len)
    throw InputError(fmt::format("max-predictions {} exceeds seq-len {}", r.max_predictions_per_seq(), r.seq_len));
}

namespace {

// Under ZeRO a rank updates (and norms) only its 1/N shard of each bucket.
void shard_cost(Op& op, double shards) {
  op.flops /= shards;
  op.bytes_read /= shards;
  op.bytes_written /= shards;
}

// ZeRO stage 3 / FSDP FULL_SHARD (models/shard_units.hpp): per unit, the all-gather of its parameters before
// its forward and again before its backward, and the reduce-scatter of its gradients after its backward —
// every micro-step (sim/sharded_step.cpp runs them there). Hybrid sharding (recipe.shard_group S < D): the
// gathers and reduce-scatters span a shard group, and each reduce-scatter is followed by the all-reduce of the
// rank's 1/S of the gradients across the D/S replicas (FSDP HYBRID_SHARD). Emitted in that order per kind: forward gathers in
// model order, backward gathers and reduce-scatters in reverse, so a unit's first all-gather is its forward one.
void append_zero3_collectives(BuildContext& ctx, const Recipe& r) {
  TaskGraph& g = ctx.graph;
  const std::vector<ShardUnit> units = shard_units(g);
  auto emit = [&](const ShardUnit& u, OpKind kind, const char* what) {
    OpAttrs a;
    a.comm.group = CommGroup::data_parallel;
    a.comm.group_size = r.zero_shards();
    a.comm.bytes = kind == OpKind::all_gather ? u.weight_bytes : u.gradient_bytes;
    if (kind == OpKind::all_reduce) {  // hybrid: this rank's 1/S of the gradients, across the D/S replicas
      a.comm.group = CommGroup::shard_replicas;
      a.comm.group_size = r.data_parallel / r.zero_shards();
      a.comm.bytes = u.gradient_bytes / static_cast<double>(r.zero_shards());
    }
    a.params = u.params;
    std::vector<int> tensors;
    for (int p : u.params) {
      const Parameter& param = g.params[static_cast<size_t>(p)];
      tensors.push_back(kind == OpKind::all_gather ? param.weight : param.gradient);
    }
    const std::string unit = u.layer < 0 ? "root" : fmt::format("layer{}", u.layer);
    ctx.emit(kind, fmt::format("zero3.{}.{}", unit, what), Phase::communication, u.layer, tensors, tensors, a);
  };
  const bool hybrid = r.zero_shards() < r.data_parallel;
  auto reduce = [&](const ShardUnit& u) {
    emit(u, OpKind::reduce_scatter, "reduce_scatter");
    if (hybrid) emit(u, OpKind::all_reduce, "replica_all_reduce");
  };
  for (const ShardUnit& u : units) emit(u, OpKind::all_gather, "all_gather.forward");
  // Backward order: the root first (the head's backward), then the layers from the last.
  std::vector<const ShardUnit*> backward;
  if (!units.empty() && units.front().layer < 0) backward.push_back(&units.front());
  for (auto it = units.rbegin(); it != units.rend(); ++it)
    if (it->layer >= 0) backward.push_back(&*it);
  for (const ShardUnit* u : backward) emit(*u, OpKind::all_gather, "all_gather.backward");
  for (const ShardUnit* u : backward)
    if (u->layer >= 0) reduce(*u);
  if (!units.empty() && units.front().layer < 0) reduce(units.front());
}

// DDP/Apex-style buckets: parameters join the current bucket in the order their gradients become final
// (their last writer in backward); a bucket closes at `bucket_bytes`. One all-reduce per bucket (dp > 1),
// then the global norm (clipping) and one optimizer update per bucket.
void append_step_tail(BuildContext& ctx, const Recipe& r) {
  TaskGraph& g = ctx.graph;
  std::vector<std::pair<int, int>> ready;  // (last writer op, param index)
  for (size_t p = 0; p < g.params.size(); ++p)
    ready.emplace_back(g.tensor(g.params[p].gradient).producer, static_cast<int>(p));
  std::stable_sort(ready.begin(), ready.end());

  std::vector<std::vector<int>> buckets(1);
  double bucket_bytes = 0;
  for (auto [writer, p] : ready) {
    (void)writer;
    buckets.back().push_back(p);
    bucket_bytes += static_cast<double>(g.tensor(g.params[static_cast<size_t>(p)].gradient).bytes());
    if (bucket_bytes >= r.bucket_bytes) {
      buckets.emplace_back();
      bucket_bytes = 0;
    }
  }
  if (buckets.back().empty()) buckets.pop_back();

  auto grads_of = [&](const std::vector<int>& bucket) {
    std::vector<int> grads;
    for (int p : bucket) grads.push_back(g.params[static_cast<size_t>(p)].gradient);
    return grads;
  };
  // ZeRO (stages 1 and 2): each bucket's gradients are reduce-scattered instead of all-reduced, each rank
  // updates its 1/N shard, and the updated parameters are all-gathered (docs/parallelism.md). Hybrid stage 2
  // (recipe.shard_group S < D, FSDP _HYBRID_SHARD_ZERO2): the reduce-scatter and the all-gather span a shard
  // group, and each reduce-scatter is followed by the all-reduce of the rank's 1/S across the D/S replicas.
  const bool zero = r.zero_stage > 0 && r.data_parallel > 1;
  const bool zero3 = zero && r.zero_stage >= 3;
  const double shards = zero ? static_cast<double>(r.zero_shards()) : 1.0;
  const bool hybrid = zero && r.zero_shards() < r.data_parallel;
  if (zero3) {
    append_zero3_collectives(ctx, r);
  } else if (r.data_parallel > 1) {
    for (size_t b = 0; b < buckets.size(); ++b) {
      std::vector<int> grads = grads_of(buckets[b]);
      OpAttrs a;
      a.comm.group = CommGroup::data_parallel;
      a.comm.group_size = zero ? r.zero_shards() : r.data_parallel;
      a.comm.bucket = static_cast<int>(b);
      for (int t : grads) a.comm.bytes += static_cast<double>(g.tensor(t).bytes());
      a.params = buckets[b];
      ctx.emit(zero ? OpKind::reduce_scatter : OpKind::all_reduce,
               fmt::format("grad_bucket{}.{}", b, zero ? "reduce_scatter" : "all_reduce"), Phase::communication, -1,
               grads, grads, a);
      if (!hybrid) continue;
      a.comm.group = CommGroup::shard_replicas;
      a.comm.group_size = r.data_parallel / r.zero_shards();
      a.comm.bytes /= shards;
      ctx.emit(OpKind::all_reduce, fmt::format("grad_bucket{}.replica_all_reduce", b), Phase::communication, -1, grads,
               grads, a);
    }
  }
  int norm = -1;
  bool needs_global_norm = r.gradient_clipping && r.optimizer != OptimizerKind::sgd;
  if (needs_global_norm) {
    std::vector<int> all;
    for (const auto& p : g.params) all.push_back(p.gradient);
    norm = ctx.new_tensor("grad_global_norm", {1}, DType::f32, TensorRole::workspace, -1);
    shard_cost(g.ops[static_cast<size_t>(ctx.emit(OpKind::grad_norm, "grad_global_norm", Phase::optimizer, -1, all, {norm}))],
               shards);
  }
  // A multi-tensor optimizer (Apex FusedLAMB, torch's foreach/fused) updates a bucket in one kernel; without
  // it every parameter tensor is its own update (one launch each). Under ZeRO each bucket's updated
  // parameters are then all-gathered.
  auto emit_update = [&](const std::vector<int>& params, const std::string& name) {
    std::vector<int> inputs;
    if (norm >= 0) inputs.push_back(norm);
    std::vector<int> outputs;
    for (int p : params) {
      const Parameter& param = g.params[static_cast<size_t>(p)];
      inputs.push_back(param.gradient);
      outputs.push_back(param.weight);
      if (param.master >= 0) outputs.push_back(param.master);
      for (int st : param.optimizer_states) outputs.push_back(st);
    }
    OpAttrs a;
    a.params = params;
    shard_cost(g.ops[static_cast<size_t>(ctx.emit(OpKind::optimizer_update, name, Phase::optimizer, -1, inputs, outputs, a))],
               shards);
  };
  for (size_t b = 0; b < buckets.size(); ++b) {
    if (r.multi_tensor_optimizer) {
      emit_update(buckets[b], fmt::format("grad_bucket{}.{}", b, to_string(r.optimizer)));
    } else {
      for (int p : buckets[b])
        emit_update({p}, fmt::format("{}.{}", g.params[static_cast<size_t>(p)].name, to_string(r.optimizer)));
    }
    if (!zero || zero3) continue;  // stage 3: the parameters stay sharded until the next forward gathers them
    std::vector<int> weights;
    OpAttrs gather;
    gather.comm.group = CommGroup::data_parallel;
    gather.comm.group_size = r.zero_shards();
    gather.comm.bucket = static_cast<int>(b);
    for (int p : buckets[b]) weights.push_back(g.params[static_cast<size_t>(p)].weight);
    for (int t : weights) gather.comm.bytes += static_cast<double>(g.tensor(t).bytes());
    gather.params = buckets[b];
    ctx.emit(OpKind::all_gather, fmt::format("param_bucket{}.all_gather", b), Phase::communication, -1, weights, weights,
             gather);
  }
}

TaskGraph build_chunk(const ModelSpec& model, const Recipe& recipe, const PipelineChunk& chunk) {
  TaskGraph g;
  g.model = model;
  g.recipe = recipe;
  g.micro_steps = recipe.grad_accum;
  g.chunk = chunk;
  ForwardBuilder forward(g, model, recipe);
  BackwardOptions options = forward.build();
  BuildContext ctx{g, activation_dtype(recipe.precision), recipe.precision == Precision::tf32};
  append_fp8_scale_update(ctx, Phase::forward);
  const std::map<int, int> input_grads = append_backward(ctx, options);
  append_fp8_scale_update(ctx, Phase::backward);
  if (auto it = input_grads.find(g.chunk.recv_activation); it != input_grads.end()) g.chunk.send_gradient = it->second;
  append_step_tail(ctx, recipe);
  return g;
}

}  // namespace

std::vector<int64_t> chunk_layers(const ModelSpec& m, const Recipe& r) {
  const int64_t chunks = r.pipeline_parallel * r.virtual_stages;
  if (!r.stage_layers.empty()) {
    int64_t sum = 0;
    for (int64_t n : r.stage_layers) sum += n;
    if (sum != m.num_layers)
      throw InputError(fmt::format("stage_layers add up to {} layers, but {} has {}", sum, m.name, m.num_layers));
    return r.stage_layers;
  }
  if (m.num_layers % chunks != 0) {
    const std::string what = r.virtual_stages > 1
                                 ? fmt::format("pipeline_parallel {} × virtual_stages {} = {} model chunks",
                                               r.pipeline_parallel, r.virtual_stages, chunks)
                                 : fmt::format("pipeline_parallel {}", r.pipeline_parallel);
    throw InputError(fmt::format("{} does not divide the {} layers of {} evenly: choose a divisor or give "
                                 "recipe.stage_layers (layers per chunk, {} entries)",
                                 what, m.num_layers, m.name, chunks));
  }
  return std::vector<int64_t>(static_cast<size_t>(chunks), m.num_layers / chunks);
}

std::vector<TaskGraph> build_pipeline_graphs(const ModelSpec& model, const Recipe& recipe) {
  check_recipe_fits_model(model, recipe);
  const std::vector<int64_t> layers = chunk_layers(model, recipe);
  std::vector<TaskGraph> chunks;
  int64_t first = 0;
  for (size_t c = 0; c < layers.size(); ++c) {
    PipelineChunk chunk;
    chunk.index = static_cast<int>(c);
    chunk.count = static_cast<int>(layers.size());
    chunk.first_layer = first;
    chunk.end_layer = first += layers[c];
    chunks.push_back(build_chunk(model, recipe, chunk));
  }
  return chunks;
}

TaskGraph build_task_graph(const ModelSpec& model, const Recipe& recipe) {
  if (recipe.pipeline_parallel > 1)
    throw InputError(fmt::format("pipeline_parallel {}: a pipeline is one graph per model chunk "
                                 "(build_pipeline_graphs), not one graph", recipe.pipeline_parallel));
  check_recipe_fits_model(model, recipe);
  PipelineChunk whole;
  whole.end_layer = model.num_layers;
  return build_chunk(model, recipe, whole);
}

}  // namespace ptsim::models
