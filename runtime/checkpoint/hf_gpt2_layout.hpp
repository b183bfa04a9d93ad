// runtime/checkpoint/hf_gpt2_layout.hpp — GPT-2 weights between the graph's layout and transformers'
// GPT2LMHeadModel layout, the one a GPT-2 checkpoint's model.safetensors is written in (docs/training.md,
// "GPT-2 (causal LM)", Checkpoints).
//   graph (ptsim's builder)                          GPT2LMHeadModel
//   transformer.h.<i>.attn.{query,key,value}.weight  transformer.h.<i>.attn.c_attn.weight [in, 3·out] = [Wqᵀ|Wkᵀ|Wvᵀ]
//     [out, in] each, and their [out] biases         transformer.h.<i>.attn.c_attn.bias   [3·out]    = [bq|bk|bv]
//   attn.c_proj, mlp.c_fc, mlp.c_proj .weight        the same names, transposed: Conv1D is [in, out]
//     [out, in]
// Every other tensor (wte, wpe, ln_1, ln_2, ln_f, the biases of c_proj/c_fc) keeps its name and bytes. The
// tied lm_head.weight is not a graph parameter and is not written, as transformers' own save_pretrained
// drops it. Both directions walk the same element map (for_each_moved_element), so they are each other's
// inverse by construction; a transpose or concatenation copies floats, it never rounds.
// Not here: GPT-2 variants with a separate (untied) head, grouped-query attention (q/k/v of unequal widths).
#pragma once
#include <span>
#include <string>
#include <vector>

#include "runtime/checkpoint/checkpoint.hpp"  // defines: CheckpointTensor, CheckpointTensorView

namespace ptsim::runtime {

// The graph's GPT-2 tensors (names and [out, in] shapes as the builder makes them, any order) in
// GPT2LMHeadModel's names and Conv1D orientation, in the same order (c_attn where query was). Throws
// core::InputError when a layer lacks one of query/key/value or their shapes differ.
std::vector<CheckpointTensor> gpt2_tensors_to_hf(std::span<const CheckpointTensorView> graph_tensors);

// The inverse: GPT2LMHeadModel's tensors back under the graph's names and shapes. `source` (a file) goes into
// the messages. Throws core::InputError when c_attn's width is not 3 × its bias thirds, a tensor that is not
// a matrix sits where a Conv1D weight should, or a produced name is already present (a file holding both
// layouts).
std::vector<CheckpointTensor> gpt2_tensors_from_hf(std::vector<CheckpointTensor> hf_tensors, const std::string& source);

// Whether the tensors are GPT2LMHeadModel's (some name ends in ".attn.c_attn.weight") rather than the graph's
// (GPT-2 checkpoints ptsim wrote before it wrote transformers' layout).
bool is_hf_gpt2_layout(std::span<const CheckpointTensor> tensors);

}  // namespace ptsim::runtime
