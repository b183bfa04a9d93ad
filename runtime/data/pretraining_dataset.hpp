// runtime/data/pretraining_dataset.hpp — read prepared shards (mmap) and serve BERT micro-batches.
// Is: PretrainingDataset (opens DIR/manifest.json and every shard, verifies header, size, payload
// checksum and vocab hash, gives random access to instances) and BatchLoader (one rank's view: a
// deterministic per-epoch permutation, rank sharding by stride, a saveable cursor, int32 batches).
// Is not: asynchronous or prefetching — filling a batch is a few memcpy's from the page cache.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/data/shard_format.hpp"

namespace ptsim::runtime::data {

// One instance, pointing into the mapped shard (valid while its PretrainingDataset lives).
struct InstanceView {
  int32_t length = 0;                           // real tokens; attention mask is 1 below this
  int32_t num_masked = 0;
  int32_t nsp_label = 0;                        // 1 = random next
  const int32_t* input_ids = nullptr;           // (S)
  const int32_t* masked_positions = nullptr;    // (P) position within the sequence; slots >= num_masked are 0
  const int32_t* masked_label_ids = nullptr;    // (P) slots >= num_masked are -1
  const uint8_t* segment_ids = nullptr;         // (S)
};

struct DatasetOpenOptions {
  // Recompute every shard's payload checksum on open (FNV-1a 64, ~1 GB/s; turn off for huge sets
  // whose shards were verified once).
  bool verify_checksum = true;
  // If non-empty, the vocab the caller will decode/train with: its FNV-1a 64 must equal the shards'.
  std::string vocab_path;
};

class PretrainingDataset {
 public:
  // Throws InputError naming the directory/shard file and what was expected vs found.
  static std::unique_ptr<PretrainingDataset> open(const std::string& dir, const DatasetOpenOptions& options = {});
  ~PretrainingDataset();
  PretrainingDataset(const PretrainingDataset&) = delete;
  PretrainingDataset& operator=(const PretrainingDataset&) = delete;

  uint64_t num_instances() const { return num_instances_; }
  int32_t seq_len() const { return static_cast<int32_t>(layout_.seq_len); }
  int32_t max_predictions() const { return static_cast<int32_t>(layout_.max_predictions); }
  uint64_t vocab_hash() const { return vocab_hash_; }
  int32_t vocab_size() const { return vocab_size_; }
  const std::string& dir() const { return dir_; }
  // DIR/vocab.txt, the copy `ptsim data prepare` writes.
  std::string vocab_path() const;
  std::vector<std::string> shard_paths() const;

  InstanceView instance(uint64_t index) const;  // 0 <= index < num_instances() (else std::out_of_range)

 private:
  struct Shard;
  PretrainingDataset() = default;
  std::string dir_;
  std::vector<std::unique_ptr<Shard>> shards_;
  std::vector<uint64_t> first_index_;  // global index of each shard's first instance
  RecordLayout layout_;
  uint64_t num_instances_ = 0;
  uint64_t vocab_hash_ = 0;
  int32_t vocab_size_ = 0;
};

// Where a rank is in its stream; save both numbers in a checkpoint and restore with BatchLoader::seek.
struct LoaderCursor {
  uint64_t epoch = 0;
  uint64_t offset = 0;  // instances of this epoch already served to this rank
  bool operator==(const LoaderCursor&) const = default;
};

struct BatchLoaderOptions {
  int32_t rank = 0;
  int32_t world_size = 1;
  uint64_t seed = 12345;
  bool shuffle = true;  // false: epoch order is 0, 1, 2, ... (the shards are already shuffled once)
};

// One micro-batch of B instances, row-major, ready to copy to a device. S = seq_len, P = max_predictions.
struct PretrainingBatch {
  int32_t batch_size = 0;
  int32_t seq_len = 0;
  int32_t max_predictions = 0;
  std::vector<int32_t> input_ids;         // (B, S) token ids, [PAD] beyond each length
  std::vector<int32_t> token_type_ids;    // (B, S) 0 = segment A (and padding), 1 = segment B
  std::vector<int32_t> attention_mask;    // (B, S) 1 = real token, 0 = padding
  std::vector<int32_t> masked_positions;  // (B, P) FLAT row index b*S + pos; unused slots = b*S (own [CLS])
  std::vector<int32_t> masked_labels;     // (B, P) original token id, -1 = unused slot (ignore in the loss)
  std::vector<int32_t> nsp_labels;        // (B)    1 = B is random, 0 = B follows A
  std::vector<uint64_t> instance_indices; // (B)    global dataset index of each row (for debugging/tests)
  int64_t num_masked = 0;                 // total used masked slots in the batch (the MLM loss divisor)
};

// Rank r of w gets positions r, r+w, r+2w, ... of each epoch's permutation of all N instances, so
// ranks are disjoint within an epoch; each rank gets floor(N / w) per epoch and the N % w left over
// at the end of the permutation are skipped that epoch (all ranks then take the same number of steps).
// The permutation of epoch e is a keyed bijection (4-round Feistel with cycle walking) of [0, N),
// keyed by seed + e: O(1) memory, any position computable directly, so seek() is free.
class BatchLoader {
 public:
  BatchLoader(const PretrainingDataset& dataset, const BatchLoaderOptions& options);

  uint64_t instances_per_epoch() const { return per_rank_; }  // for this rank
  // Global index of the instance at (epoch, offset) of this rank's stream.
  uint64_t instance_at(uint64_t epoch, uint64_t offset) const;
  // Fills `batch` with the next B instances (crossing into the next epoch when one ends).
  void next_batch(int32_t batch_size, PretrainingBatch& batch);
  LoaderCursor position() const { return cursor_; }
  void seek(const LoaderCursor& cursor);  // InputError if offset >= instances_per_epoch()

 private:
  const PretrainingDataset* dataset_;
  BatchLoaderOptions options_;
  uint64_t per_rank_ = 0;
  LoaderCursor cursor_;
};

// The epoch permutation used by BatchLoader, exposed for tests: a bijection of [0, n).
uint64_t permute_index(uint64_t index, uint64_t n, uint64_t key);

}  // namespace ptsim::runtime::data
