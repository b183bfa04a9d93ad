// runtime/train/train_batches.hpp — where `ptsim train`'s micro-batches come from, by model family: BERT
// reads the prepared instances as they are (MLM + NSP: data::BatchLoader); GPT-2 reads the same shards as
// contiguous next-token blocks (data::CausalLmLoader). Both keep one saveable cursor (checkpoints' extra.data)
// and fill the graph's data inputs each micro-step. Is not: the loss gradient input (the trainer's).
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "models/task_graph.hpp"
#include "runtime/data/causal_lm_blocks.hpp"
#include "runtime/data/pretraining_dataset.hpp"

namespace ptsim::runtime {

class Executor;  // runtime/exec/executor.hpp

class TrainBatches {
 public:
  // causal_lm: GPT-2 blocks of seq_len + 1 tokens; else BERT instances. InputError when a rank gets none.
  TrainBatches(const data::PretrainingDataset& dataset, bool causal_lm, const data::BatchLoaderOptions& options);

  bool causal_lm() const { return blocks_ != nullptr; }
  uint64_t per_epoch() const;             // instances (BERT) or blocks (GPT-2) per rank and epoch
  const char* unit() const { return causal_lm() ? "blocks" : "instances"; }
  data::LoaderCursor position() const;
  void seek(const data::LoaderCursor& cursor);
  // Reads the next micro-batch and writes the graph's data inputs (token ids, positions, labels, masks).
  void fill_next(int32_t micro_batch, const models::TaskGraph& graph, Executor& executor);
  // The header's data line after the directory: "(437 instances, seq 32, 5 predictions/seq)" or
  // "(437 instances → 320 blocks of 33 tokens, seq 32, next-token labels)".
  std::string describe() const;

 private:
  void fill_bert(int32_t micro_batch, const models::TaskGraph& graph, Executor& executor);
  void fill_causal_lm(int32_t micro_batch, const models::TaskGraph& graph, Executor& executor);

  const data::PretrainingDataset* dataset_;
  std::unique_ptr<data::BatchLoader> instances_;     // BERT
  std::unique_ptr<data::CausalLmBlocks> blocks_;     // GPT-2
  std::unique_ptr<data::CausalLmLoader> block_loader_;
  data::PretrainingBatch bert_batch_;
  data::CausalLmBatch lm_batch_;
};

}  // namespace ptsim::runtime
