// runtime/data/vocab_trainer.hpp — learn a WordPiece vocabulary from a text corpus.
// Is: BPE-style merge learning over BasicTokenizer words, with "##" marking non-initial pieces (the
// scheme of HuggingFace's WordPieceTrainer): start from single characters, repeatedly merge the most
// frequent adjacent pair, add the merged piece to the vocab, until vocab_size tokens exist.
// Is not: Google's original likelihood-based WordPiece (unreleased) nor SentencePiece.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace ptsim::runtime::data {

struct VocabTrainerOptions {
  int64_t vocab_size = 30522;   // BERT-base uncased vocab size; the result has at most this many tokens
  int64_t min_pair_count = 2;   // stop merging when the best pair occurs fewer times than this
  bool do_lower_case = true;
};

struct VocabTrainerStats {
  int64_t lines = 0;
  int64_t words = 0;          // basic tokens, with repetition
  int64_t unique_words = 0;
  int64_t alphabet = 0;       // single-character tokens kept (word-initial and "##" forms)
  int64_t merges = 0;
};

// Result order: [PAD] [UNK] [CLS] [SEP] [MASK] (ids 0..4), then the alphabet (word-initial characters
// sorted by bytes, then "##" characters sorted), then merged pieces in the order they were learned.
// If vocab_size is smaller than 5 + the alphabet, the most frequent characters are kept.
// Deterministic: ties between equally frequent pairs go to the byte-wise smaller (left, right) pair.
// Throws InputError when the corpus has no words, or vocab_size < 6.
std::vector<std::string> train_wordpiece_vocab(const std::string& corpus_path, const VocabTrainerOptions& options,
                                               VocabTrainerStats* stats = nullptr);
// The same, over in-memory lines (for tests); `source` names the corpus in errors.
std::vector<std::string> train_wordpiece_vocab_from_lines(const std::vector<std::string>& lines,
                                                          const VocabTrainerOptions& options,
                                                          VocabTrainerStats* stats = nullptr,
                                                          const std::string& source = "<memory>");

}  // namespace ptsim::runtime::data
