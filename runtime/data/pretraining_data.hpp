// runtime/data/pretraining_data.hpp — corpus -> BERT pretraining instances -> binary shards.
// Is: a port of google-research/bert create_pretraining_data.py (target lengths with short-sequence
// probability, A/B segments from sentence chunks, 50% random-document NSP with unused segments put
// back, truncate_seq_pair, masked LM with 80/10/10, optional whole-word masking, duplication factor)
// writing shard_NNNNN.bin files (layout: runtime/data/shard_format.hpp) and manifest.json.
// Is not: bit-identical to the Python script — same algorithm and same sequence of random decisions,
// but a different random generator (runtime/data/rng.hpp), so the same seed gives other instances.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/data/rng.hpp"
#include "runtime/data/tokenizer.hpp"

namespace ptsim::runtime::data {

struct PrepareOptions {
  int32_t seq_len = 128;            // max_seq_length
  int32_t max_predictions = 0;      // 0 = default_max_predictions(seq_len, masked_lm_prob)
  int32_t dup_factor = 5;           // NVIDIA's BERT recipe; Google's script defaults to 10
  double short_seq_prob = 0.1;
  double masked_lm_prob = 0.15;
  uint64_t seed = 12345;
  bool whole_word_mask = false;
  bool do_lower_case = true;
  int64_t shard_size = 100000;      // instances per shard file (the last one may hold fewer)
};

// BERT's recipe values: 20 at seq 128, 80 at seq 512 = ceil(seq_len * masked_lm_prob) rounded up to a
// multiple of 4 (19.2 -> 20, 76.8 -> 80). At least 1.
int32_t default_max_predictions(int32_t seq_len, double masked_lm_prob);

// Documents: each a list of sentences, each sentence a list of token ids (no empty ones).
using Document = std::vector<std::vector<int32_t>>;

struct TrainingInstance {
  std::vector<int32_t> input_ids;         // [CLS] A [SEP] B [SEP] after masking, unpadded
  std::vector<uint8_t> segment_ids;       // same length as input_ids
  std::vector<int32_t> masked_positions;  // ascending
  std::vector<int32_t> masked_label_ids;  // original ids at masked_positions
  bool is_random_next = false;            // NSP label 1
};

// Reads the corpus (one sentence per line, blank line between documents), tokenizes each line, drops
// empty documents. InputError if the file is missing or yields no tokens.
std::vector<Document> read_documents(const std::string& corpus_path, const FullTokenizer& tokenizer);

// create_training_instances minus the file reading: shuffles `documents` (as the script does), makes
// dup_factor passes, shuffles the instances. Deterministic in options.seed.
std::vector<TrainingInstance> create_training_instances(std::vector<Document> documents, const Vocab& vocab,
                                                        const PrepareOptions& options);

// Masked LM over one [CLS] A [SEP] B [SEP] sequence (in place): create_masked_lm_predictions.
void create_masked_lm_predictions(TrainingInstance& instance, const Vocab& vocab, const PrepareOptions& options,
                                  DataRng& rng);

struct PrepareStats {
  int64_t documents = 0;
  int64_t sentences = 0;
  int64_t tokens = 0;
  int64_t instances = 0;
  int64_t shards = 0;
  int64_t masked_tokens = 0;
  int64_t random_next = 0;
};

// The whole `ptsim data prepare`: writes out_dir/shard_00000.bin..., out_dir/manifest.json and a copy
// of the vocab as out_dir/vocab.txt (so a dataset directory is self-contained).
PrepareStats prepare_pretraining_data(const std::string& corpus_path, const std::string& vocab_path,
                                      const std::string& out_dir, const PrepareOptions& options);

// Writes one shard file (header + fixed-size records). Returns the payload checksum.
uint64_t write_shard(const std::string& path, const std::vector<TrainingInstance>& instances, size_t begin,
                     size_t end, const Vocab& vocab, int32_t seq_len, int32_t max_predictions, uint32_t flags);

}  // namespace ptsim::runtime::data
