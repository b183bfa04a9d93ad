// runtime/data/causal_lm_blocks.hpp — GPT-2 (causal LM) batches from the BERT pretraining shards that
// `ptsim data prepare` writes: one token stream read through PretrainingDataset (the shard reader, not a
// second format), cut into contiguous blocks of seq_len + 1 tokens; inputs = a block's first seq_len
// tokens, labels = the same block shifted by one. No masking, no NSP. Design: docs/training.md, "GPT-2".
// Is: CausalLmBlocks (the stream as an index over the instances, O(8 bytes) per instance) and
// CausalLmLoader (one rank's view of the blocks: the BatchLoader's per-epoch permutation and rank stride,
// the same saveable LoaderCursor). Is not: a tokenizer or a shard writer.
#pragma once
#include <cstdint>
#include <vector>

#include "runtime/data/pretraining_dataset.hpp"

namespace ptsim::runtime::data {

// The token stream: instances in dataset order; each contributes its unmasked tokens (every [MASK] or
// replaced token put back from masked_label_ids) after its [CLS]: segment A with its [SEP], then segment B
// with its [SEP] when B is A's true continuation (nsp_label 0). A random B (nsp_label 1) is another
// document's text and is left out. [SEP] thus separates texts, as GPT-2's <|endoftext|> does.
class CausalLmBlocks {
 public:
  CausalLmBlocks(const PretrainingDataset& dataset, int32_t seq_len);

  int32_t seq_len() const { return seq_len_; }
  int32_t block_tokens() const { return seq_len_ + 1; }
  uint64_t stream_tokens() const { return offsets_.back(); }
  uint64_t num_blocks() const { return stream_tokens() / static_cast<uint64_t>(block_tokens()); }
  // Block b = stream tokens [b·(S+1), (b+1)·(S+1)) into out[0 .. S] (std::out_of_range past num_blocks()).
  void block(uint64_t index, int32_t* out) const;
  // The stream tokens instance `index` contributes (its unmasked A [SEP] (B [SEP])).
  std::vector<int32_t> instance_tokens(uint64_t index) const;

 private:
  const PretrainingDataset* dataset_;
  int32_t seq_len_;
  std::vector<uint64_t> offsets_;  // offsets_[i] = stream position of instance i's first token; back() = total
};

// One micro-batch of B blocks, row-major. S = seq_len.
struct CausalLmBatch {
  int32_t batch_size = 0;
  int32_t seq_len = 0;
  std::vector<int32_t> input_ids;        // (B, S) block tokens 0 .. S-1
  std::vector<int32_t> lm_labels;        // (B, S) block tokens 1 .. S (the next token at every position)
  std::vector<uint64_t> block_indices;   // (B)    which block each row is (for tests)
};

// Rank r of w gets positions r, r+w, ... of each epoch's permutation of the N blocks (permute_index keyed
// by seed + epoch, as BatchLoader), floor(N / w) per epoch; shuffle off: blocks in stream order.
class CausalLmLoader {
 public:
  CausalLmLoader(const CausalLmBlocks& blocks, const BatchLoaderOptions& options);

  uint64_t blocks_per_epoch() const { return per_rank_; }  // for this rank
  uint64_t block_at(uint64_t epoch, uint64_t offset) const;
  void next_batch(int32_t batch_size, CausalLmBatch& batch);
  LoaderCursor position() const { return cursor_; }
  void seek(const LoaderCursor& cursor);  // InputError if offset >= blocks_per_epoch()

 private:
  const CausalLmBlocks* blocks_;
  BatchLoaderOptions options_;
  uint64_t per_rank_ = 0;
  LoaderCursor cursor_;
};

}  // namespace ptsim::runtime::data
