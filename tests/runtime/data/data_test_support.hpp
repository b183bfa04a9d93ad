// tests/runtime/data/data_test_support.hpp — temp directories and a small prepared dataset for the data tests.
#pragma once
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "runtime/data/pretraining_data.hpp"
#include "runtime/data/tokenizer.hpp"
#include "runtime/data/vocab_trainer.hpp"
#include "tests/support/temp_dir.hpp"

namespace ptsim::test {

namespace fs = std::filesystem;

// The hand-written test corpus: 12 documents, 65 sentences, 76 lines, ~4 KB of original English (tests/data/).
inline std::string small_corpus_path() { return std::string(PTSIM_SOURCE_DIR) + "/tests/data/small_corpus.txt"; }

// A fresh, empty directory under this process's scratch root (removed at exit).
inline fs::path fresh_temp_dir(const std::string& name) { return ptsim::test::process_temp_dir(name); }

inline void write_text(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

inline std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Trains a 400-token vocab on the small corpus and prepares it (seq 32, dup 8, 150 instances per
// shard, so several shards) into `dir`. Returns the vocab path.
inline std::string prepare_small_dataset(const fs::path& dir, runtime::data::PrepareOptions options = {}) {
  using namespace runtime::data;
  const fs::path vocab = dir / "trained_vocab.txt";
  VocabTrainerOptions vo;
  vo.vocab_size = 400;
  write_vocab_file(vocab.string(), train_wordpiece_vocab(small_corpus_path(), vo));
  if (options.seq_len == PrepareOptions{}.seq_len) {
    options.seq_len = 32;
    options.dup_factor = 8;
    options.shard_size = 150;
  }
  prepare_pretraining_data(small_corpus_path(), vocab.string(), (dir / "ds").string(), options);
  return vocab.string();
}

}  // namespace ptsim::test
