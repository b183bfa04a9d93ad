// runtime/train/train_batches.cpp — BERT instances or GPT-2 next-token blocks into the graph's inputs.
#include "runtime/train/train_batches.hpp"

#include <fmt/format.h>

#include <stdexcept>
#include <vector>

#include "core/error.hpp"
#include "runtime/exec/executor.hpp"

namespace ptsim::runtime {

namespace {

// Copies one input; a graph whose input is absent (-1) takes nothing; a size mismatch is a bug.
void copy_input(Executor& ex, const models::TaskGraph& g, int tensor, const std::vector<int32_t>& values, const char* what) {
  if (tensor < 0) return;
  const auto want = static_cast<size_t>(g.tensor(tensor).elements());
  if (want != values.size())
    throw std::logic_error(fmt::format("input {}: graph holds {} values, the batch has {}", what, want, values.size()));
  ex.write_tensor<int32_t>(tensor, values);
}

// Position s of every row (rows of seq_len tokens).
std::vector<int32_t> row_positions(int32_t batch, int32_t seq_len) {
  std::vector<int32_t> pos(static_cast<size_t>(batch) * static_cast<size_t>(seq_len));
  for (int32_t r = 0; r < batch; ++r)
    for (int32_t s = 0; s < seq_len; ++s) pos[static_cast<size_t>(r) * static_cast<size_t>(seq_len) + static_cast<size_t>(s)] = s;
  return pos;
}

}  // namespace

TrainBatches::TrainBatches(const data::PretrainingDataset& dataset, bool causal_lm, const data::BatchLoaderOptions& options)
    : dataset_(&dataset) {
  if (causal_lm) {
    blocks_ = std::make_unique<data::CausalLmBlocks>(dataset, dataset.seq_len());
    block_loader_ = std::make_unique<data::CausalLmLoader>(*blocks_, options);
    if (block_loader_->blocks_per_epoch() == 0)
      throw core::InputError(fmt::format(
          "ptsim train: dataset '{}' holds {} tokens for GPT-2, {} blocks of {} (seq_len + 1), fewer than the {} ranks "
          "(prepare more text or a shorter --seq-len)",
          dataset.dir(), blocks_->stream_tokens(), blocks_->num_blocks(), blocks_->block_tokens(), options.world_size));
  } else {
    instances_ = std::make_unique<data::BatchLoader>(dataset, options);
  }
}

uint64_t TrainBatches::per_epoch() const {
  return causal_lm() ? block_loader_->blocks_per_epoch() : instances_->instances_per_epoch();
}

data::LoaderCursor TrainBatches::position() const {
  return causal_lm() ? block_loader_->position() : instances_->position();
}

void TrainBatches::seek(const data::LoaderCursor& cursor) {
  if (causal_lm()) block_loader_->seek(cursor);
  else instances_->seek(cursor);
}

void TrainBatches::fill_next(int32_t micro_batch, const models::TaskGraph& graph, Executor& executor) {
  if (causal_lm()) fill_causal_lm(micro_batch, graph, executor);
  else fill_bert(micro_batch, graph, executor);
}

void TrainBatches::fill_bert(int32_t micro_batch, const models::TaskGraph& g, Executor& ex) {
  const data::PretrainingBatch& b = bert_batch_;
  instances_->next_batch(micro_batch, bert_batch_);
  const auto& in = g.inputs;
  copy_input(ex, g, in.input_ids, b.input_ids, "input_ids");
  copy_input(ex, g, in.token_type_ids, b.token_type_ids, "token_type_ids");
  copy_input(ex, g, in.attention_mask, b.attention_mask, "attention_mask");
  copy_input(ex, g, in.masked_positions, b.masked_positions, "masked_positions");
  copy_input(ex, g, in.masked_labels, b.masked_labels, "masked_labels");
  copy_input(ex, g, in.nsp_labels, b.nsp_labels, "nsp_labels");
  std::vector<int32_t> cls(static_cast<size_t>(b.batch_size));
  for (int32_t r = 0; r < b.batch_size; ++r) cls[static_cast<size_t>(r)] = r * b.seq_len;  // [CLS]: each row's first token
  copy_input(ex, g, in.position_ids, row_positions(b.batch_size, b.seq_len), "position_ids");
  copy_input(ex, g, in.cls_positions, cls, "cls_positions");
}

void TrainBatches::fill_causal_lm(int32_t micro_batch, const models::TaskGraph& g, Executor& ex) {
  const data::CausalLmBatch& b = lm_batch_;
  block_loader_->next_batch(micro_batch, lm_batch_);
  const auto& in = g.inputs;
  copy_input(ex, g, in.input_ids, b.input_ids, "input_ids");
  copy_input(ex, g, in.lm_labels, b.lm_labels, "lm_labels");
  copy_input(ex, g, in.position_ids, row_positions(b.batch_size, b.seq_len), "position_ids");
}

std::string TrainBatches::describe() const {
  if (!causal_lm())
    return fmt::format("({} instances, seq {}, {} predictions/seq)", dataset_->num_instances(), dataset_->seq_len(),
                       dataset_->max_predictions());
  return fmt::format("({} instances → {} tokens → {} blocks of {}, seq {}, next-token labels)", dataset_->num_instances(),
                     blocks_->stream_tokens(), blocks_->num_blocks(), blocks_->block_tokens(), blocks_->seq_len());
}

}  // namespace ptsim::runtime
