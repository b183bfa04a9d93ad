// runtime/data/tokenizer.hpp — BERT's tokenizer: vocab.txt, BasicTokenizer, greedy WordPiece.
// Is: a C++ port of google-research/bert tokenization.py (FullTokenizer = BasicTokenizer then
// WordpieceTokenizer) for the uncased models, plus the FNV-1a hash that ties shards to a vocab.
// Unicode (categories, str.lower(), NFD) comes from utf8proc via runtime/data/unicode_text.hpp.
// Is not: HuggingFace's fast tokenizer (no offsets, no normalisers beyond BERT's).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/hash.hpp"

namespace ptsim::runtime::data {

// FNV-1a 64-bit over bytes (core/hash.hpp), as the data pipeline's checksums use it.
using core::fnv1a64;
using core::kFnv1aOffset;
std::string hash_to_hex(uint64_t hash);  // "0x0123456789abcdef"

inline constexpr const char* kPadToken = "[PAD]";
inline constexpr const char* kUnkToken = "[UNK]";
inline constexpr const char* kClsToken = "[CLS]";
inline constexpr const char* kSepToken = "[SEP]";
inline constexpr const char* kMaskToken = "[MASK]";

// A WordPiece vocabulary: token <-> id, id = 0-based line number in vocab.txt.
// Special ids are looked up by token, never assumed (Google's vocab has [PAD]=0, [UNK]=100,
// [CLS]=101, [SEP]=102, [MASK]=103; ptsim's trained vocab has them at 0..4).
class Vocab {
 public:
  // Loads vocab.txt: one token per line, trailing whitespace and "\r" stripped (as BERT's
  // load_vocab strips each line). Throws InputError if the file is missing or lacks a special token.
  static Vocab load(const std::string& path);
  // From a token list (id = index); `source` names it in errors. Requires the five special tokens.
  static Vocab from_tokens(std::vector<std::string> tokens, std::string source = "<memory>");

  int32_t size() const { return static_cast<int32_t>(tokens_.size()); }
  // -1 when absent.
  int32_t find(std::string_view token) const;
  const std::string& token(int32_t id) const { return tokens_.at(static_cast<size_t>(id)); }
  const std::vector<std::string>& tokens() const { return tokens_; }

  int32_t pad_id() const { return pad_id_; }
  int32_t unk_id() const { return unk_id_; }
  int32_t cls_id() const { return cls_id_; }
  int32_t sep_id() const { return sep_id_; }
  int32_t mask_id() const { return mask_id_; }

  // FNV-1a 64 over the vocab.txt bytes as read (for from_tokens: over the tokens joined by "\n",
  // each followed by "\n" — exactly the bytes write_vocab_file writes).
  uint64_t hash() const { return hash_; }
  const std::string& source() const { return source_; }

 private:
  void index_and_check();
  std::vector<std::string> tokens_;
  std::unordered_map<std::string, int32_t> ids_;
  std::string source_;
  uint64_t hash_ = 0;
  int32_t pad_id_ = -1;
  int32_t unk_id_ = -1;
  int32_t cls_id_ = -1;
  int32_t sep_id_ = -1;
  int32_t mask_id_ = -1;
};

// Writes tokens one per line ("\n" after each); throws InputError if the file cannot be written.
void write_vocab_file(const std::string& path, const std::vector<std::string>& tokens);

// BERT's BasicTokenizer: clean (drop NUL, U+FFFD, Cc/Cf; whitespace -> ' '), space out CJK ideographs,
// split on whitespace, lower-case + strip accents (when do_lower_case), split off punctuation.
// Input is raw UTF-8 bytes; invalid UTF-8 decodes to U+FFFD and is therefore dropped.
struct BasicTokenizer {
  bool do_lower_case = true;
  std::vector<std::string> tokenize(std::string_view text) const;
};

// Greedy longest-match-first WordPiece; continuation pieces carry "##". A word longer than
// max_input_chars_per_word code points, or one with any unmatched remainder, becomes [UNK] as a whole.
struct WordpieceTokenizer {
  const Vocab* vocab = nullptr;
  int max_input_chars_per_word = 100;
  // Appends ids for one basic token to `out`.
  void tokenize_word(std::string_view word, std::vector<int32_t>& out) const;
};

// BasicTokenizer + WordpieceTokenizer, as BERT's FullTokenizer.
class FullTokenizer {
 public:
  explicit FullTokenizer(const Vocab& vocab, bool do_lower_case = true);
  std::vector<int32_t> encode(std::string_view text) const;
  std::vector<std::string> tokenize(std::string_view text) const;  // the same, as token strings
  const Vocab& vocab() const { return *vocab_; }

 private:
  const Vocab* vocab_;
  BasicTokenizer basic_;
  WordpieceTokenizer wordpiece_;
};

}  // namespace ptsim::runtime::data
