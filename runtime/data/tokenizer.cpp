// runtime/data/tokenizer.cpp — vocab.txt loading, BERT BasicTokenizer and greedy WordPiece.
// Follows google-research/bert tokenization.py line by line; differences are noted where they occur.
#include "runtime/data/tokenizer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "core/atomic_file.hpp"
#include "core/input_file.hpp"
#include "core/error.hpp"
#include "runtime/data/unicode_text.hpp"

namespace ptsim::runtime::data {

std::string hash_to_hex(uint64_t hash) { return fmt::format("0x{:016x}", hash); }

// ---------------------------------------------------------------------------------------------- Vocab

Vocab Vocab::load(const std::string& path) {
  core::require_regular_file(path, "a vocab file (one token per line)");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw core::InputError(fmt::format("vocab file '{}' cannot be opened (does it exist?)", path));
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string bytes = buffer.str();
  Vocab v;
  v.source_ = path;
  v.hash_ = fnv1a64(bytes.data(), bytes.size());
  size_t start = 0;
  while (start < bytes.size()) {
    size_t end = bytes.find('\n', start);
    if (end == std::string::npos) end = bytes.size();
    std::string line = bytes.substr(start, end - start);
    // BERT's load_vocab: token = line.strip(). Strip ASCII whitespace at both ends.
    size_t b = line.find_first_not_of(" \t\r\f\v");
    size_t e = line.find_last_not_of(" \t\r\f\v");
    v.tokens_.push_back(b == std::string::npos ? std::string() : line.substr(b, e - b + 1));
    start = end + 1;
  }
  if (v.tokens_.empty()) throw core::InputError(fmt::format("vocab file '{}' is empty", path));
  v.index_and_check();
  return v;
}

Vocab Vocab::from_tokens(std::vector<std::string> tokens, std::string source) {
  Vocab v;
  v.tokens_ = std::move(tokens);
  v.source_ = std::move(source);
  uint64_t h = kFnv1aOffset;
  for (const auto& t : v.tokens_) {
    h = fnv1a64(t.data(), t.size(), h);
    h = fnv1a64("\n", 1, h);
  }
  v.hash_ = h;
  v.index_and_check();
  return v;
}

void Vocab::index_and_check() {
  ids_.clear();
  ids_.reserve(tokens_.size() * 2);
  // BERT's load_vocab builds an OrderedDict, so a repeated token maps to its LAST line.
  for (size_t i = 0; i < tokens_.size(); ++i) ids_[tokens_[i]] = static_cast<int32_t>(i);
  std::string missing;
  auto need = [&](const char* tok) {
    int32_t id = find(tok);
    if (id < 0) missing += missing.empty() ? tok : std::string(", ") + tok;
    return id;
  };
  pad_id_ = need(kPadToken);
  unk_id_ = need(kUnkToken);
  cls_id_ = need(kClsToken);
  sep_id_ = need(kSepToken);
  mask_id_ = need(kMaskToken);
  if (!missing.empty())
    throw core::InputError(fmt::format(
        "vocab '{}' lacks the special token(s) {} (a BERT vocab needs [PAD] [UNK] [CLS] [SEP] [MASK], "
        "one per line; 'ptsim data vocab' writes them at ids 0..4)",
        source_, missing));
}

int32_t Vocab::find(std::string_view token) const {
  auto it = ids_.find(std::string(token));
  return it == ids_.end() ? -1 : it->second;
}

void write_vocab_file(const std::string& path, const std::vector<std::string>& tokens) {
  // Atomic: an existing vocab stays as it was until the new one is complete (core/atomic_file.hpp).
  std::string text;
  for (const auto& t : tokens) (text += t) += '\n';
  core::write_file_atomic(path, text, "vocab");
}

// -------------------------------------------------------------------------------------- BasicTokenizer

namespace {

// BERT's _clean_text, _tokenize_chinese_chars and whitespace_tokenize in one pass: NUL, U+FFFD and control
// characters are dropped, whitespace separates, and each CJK ideograph is a token on its own.
std::vector<std::u32string> whitespace_tokens(std::u32string_view text) {
  std::vector<std::u32string> tokens;
  std::u32string current;
  auto flush = [&] {
    if (!current.empty()) tokens.push_back(std::move(current));
    current.clear();
  };
  for (char32_t cp : text) {
    if (cp == 0 || cp == kReplacementChar || is_control(cp)) continue;
    if (is_whitespace(cp)) {
      flush();
    } else if (is_cjk_ideograph(cp)) {
      flush();
      current.push_back(cp);
      flush();
    } else {
      current.push_back(cp);
    }
  }
  flush();
  return tokens;
}

// BERT's _run_split_on_punc: every punctuation character becomes a token on its own.
void split_on_punctuation(std::u32string_view token, std::vector<std::string>& out) {
  std::string current;
  for (char32_t cp : token) {
    if (is_punctuation(cp)) {
      if (!current.empty()) out.push_back(std::move(current));
      current.clear();
      utf8_append(current, cp);
      out.push_back(std::move(current));
      current.clear();
    } else {
      utf8_append(current, cp);
    }
  }
  if (!current.empty()) out.push_back(std::move(current));
}

}  // namespace

std::vector<std::string> BasicTokenizer::tokenize(std::string_view text) const {
  // The passes of BERT's BasicTokenizer.tokenize, in its order: lower-casing (str.lower(), whose final
  // sigma depends on the neighbours) and accent stripping (NFD) act on whole whitespace tokens, before
  // the punctuation split.
  std::vector<std::string> tokens;
  for (std::u32string& token : whitespace_tokens(utf8_decode(text))) {
    const bool ascii = std::all_of(token.begin(), token.end(), [](char32_t cp) { return cp < 0x80; });
    if (do_lower_case && ascii) {  // the common case, same result: NFD changes no ASCII letter
      for (char32_t& cp : token) cp = (cp >= 'A' && cp <= 'Z') ? cp + 32 : cp;
      split_on_punctuation(token, tokens);
    } else if (do_lower_case) {
      split_on_punctuation(strip_accents(python_lower(token)), tokens);
    } else {
      split_on_punctuation(token, tokens);
    }
  }
  return tokens;
}

// ---------------------------------------------------------------------------------- WordpieceTokenizer

void WordpieceTokenizer::tokenize_word(std::string_view word, std::vector<int32_t>& out) const {
  // Code point boundaries (byte offsets), so pieces never split a UTF-8 sequence; length limit is in
  // code points, as BERT's len(chars).
  std::vector<size_t> bounds;
  bounds.reserve(word.size() + 1);
  for (size_t i = 0; i < word.size(); ++i)
    if ((static_cast<unsigned char>(word[i]) & 0xC0) != 0x80) bounds.push_back(i);
  bounds.push_back(word.size());
  const size_t num_chars = bounds.size() - 1;
  if (num_chars == 0) return;
  if (num_chars > static_cast<size_t>(max_input_chars_per_word)) {
    out.push_back(vocab->unk_id());
    return;
  }
  const size_t mark = out.size();
  std::string candidate;
  size_t start = 0;
  while (start < num_chars) {
    size_t end = num_chars;
    int32_t found = -1;
    while (start < end) {
      candidate.clear();
      if (start > 0) candidate = "##";
      candidate.append(word.substr(bounds[start], bounds[end] - bounds[start]));
      found = vocab->find(candidate);
      if (found >= 0) break;
      --end;
    }
    if (found < 0) {
      out.resize(mark);
      out.push_back(vocab->unk_id());
      return;
    }
    out.push_back(found);
    start = end;
  }
}

// ------------------------------------------------------------------------------------- FullTokenizer

FullTokenizer::FullTokenizer(const Vocab& vocab, bool do_lower_case) : vocab_(&vocab) {
  basic_.do_lower_case = do_lower_case;
  wordpiece_.vocab = vocab_;
}

std::vector<int32_t> FullTokenizer::encode(std::string_view text) const {
  std::vector<int32_t> ids;
  for (const auto& word : basic_.tokenize(text)) wordpiece_.tokenize_word(word, ids);
  return ids;
}

std::vector<std::string> FullTokenizer::tokenize(std::string_view text) const {
  std::vector<std::string> out;
  for (int32_t id : encode(text)) out.push_back(vocab_->token(id));
  return out;
}

}  // namespace ptsim::runtime::data
