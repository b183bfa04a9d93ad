// runtime/data/vocab_trainer.cpp — WordPiece vocab learning by incremental BPE pair counting.
// Cost: one pass to count words; then per merge, work proportional to the words that contain the
// merged pair (pair counts are updated incrementally, never recounted; a lazy max-heap picks the best).
#include "runtime/data/vocab_trainer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <queue>
#include <unordered_map>
#include <unordered_set>

#include "core/error.hpp"
#include "core/input_file.hpp"
#include "runtime/data/tokenizer.hpp"

namespace ptsim::runtime::data {

namespace {

constexpr const char* kSpecialTokens[] = {kPadToken, kUnkToken, kClsToken, kSepToken, kMaskToken};
constexpr int64_t kNumSpecial = 5;

uint64_t pair_key(int32_t a, int32_t b) { return (static_cast<uint64_t>(a) << 32) | static_cast<uint32_t>(b); }

class Trainer {
 public:
  Trainer(const VocabTrainerOptions& options, std::string source) : options_(options), source_(std::move(source)) {
    if (options.vocab_size < kNumSpecial + 1)
      throw core::InputError(fmt::format("--vocab-size {} is too small: need at least {} (5 special tokens + 1)",
                                         options.vocab_size, kNumSpecial + 1));
    basic_.do_lower_case = options.do_lower_case;
  }

  void add_line(std::string_view line) {
    ++stats_.lines;
    for (auto& w : basic_.tokenize(line)) {
      ++word_counts_[std::move(w)];
      ++stats_.words;
    }
  }

  std::vector<std::string> run(VocabTrainerStats* stats_out) {
    if (word_counts_.empty())
      throw core::InputError(fmt::format("corpus '{}' has no words ({} lines read; expected UTF-8 text, one sentence "
                                         "per line)", source_, stats_.lines));
    stats_.unique_words = static_cast<int64_t>(word_counts_.size());
    build_alphabet();
    learn_merges();
    if (stats_out) *stats_out = stats_;
    return vocab_;
  }

 private:
  int32_t symbol_id(const std::string& s) {
    auto [it, inserted] = symbol_ids_.try_emplace(s, static_cast<int32_t>(symbols_.size()));
    if (inserted) symbols_.push_back(s);
    return it->second;
  }

  static std::vector<std::string> split_chars(const std::string& word) {
    std::vector<std::string> chars;
    for (size_t i = 0; i < word.size();) {
      size_t j = i + 1;
      while (j < word.size() && (static_cast<unsigned char>(word[j]) & 0xC0) == 0x80) ++j;
      chars.push_back((i == 0 ? "" : "##") + word.substr(i, j - i));
      i = j;
    }
    return chars;
  }

  void build_alphabet() {
    // Sorted unique words make symbol ids (and so everything after) independent of hash order.
    std::vector<std::pair<std::string, int64_t>> words(word_counts_.begin(), word_counts_.end());
    std::sort(words.begin(), words.end());
    std::unordered_map<std::string, int64_t> char_counts;
    std::vector<std::vector<std::string>> word_chars;
    word_chars.reserve(words.size());
    for (const auto& [w, c] : words) {
      word_chars.push_back(split_chars(w));
      for (const auto& ch : word_chars.back()) char_counts[ch] += c;
    }
    std::vector<std::pair<std::string, int64_t>> alphabet(char_counts.begin(), char_counts.end());
    const auto budget = static_cast<size_t>(options_.vocab_size - kNumSpecial);
    if (alphabet.size() > budget) {  // keep the most frequent characters
      std::sort(alphabet.begin(), alphabet.end(),
                [](const auto& x, const auto& y) { return x.second != y.second ? x.second > y.second : x.first < y.first; });
      alphabet.resize(budget);
    }
    // Word-initial characters first, then "##" forms; each group sorted by bytes.
    std::sort(alphabet.begin(), alphabet.end(), [](const auto& x, const auto& y) {
      bool xc = x.first.rfind("##", 0) == 0, yc = y.first.rfind("##", 0) == 0;
      return xc != yc ? yc : x.first < y.first;
    });
    for (const char* s : kSpecialTokens) vocab_.emplace_back(s);
    for (const auto& [ch, c] : alphabet) {
      vocab_.push_back(ch);
      symbol_id(ch);
    }
    in_vocab_.insert(vocab_.begin(), vocab_.end());
    stats_.alphabet = static_cast<int64_t>(alphabet.size());
    // Words with a character outside the alphabet would be [UNK] under WordPiece: they teach no merges.
    for (size_t i = 0; i < words.size(); ++i) {
      std::vector<int32_t> syms;
      bool ok = true;
      for (const auto& ch : word_chars[i]) {
        auto it = symbol_ids_.find(ch);
        if (it == symbol_ids_.end()) {
          ok = false;
          break;
        }
        syms.push_back(it->second);
      }
      if (!ok || syms.size() < 2) continue;
      words_.push_back(std::move(syms));
      freqs_.push_back(words[i].second);
    }
  }

  struct HeapEntry {
    int64_t count = 0;
    int32_t a = 0;
    int32_t b = 0;
  };

  void learn_merges() {
    for (size_t w = 0; w < words_.size(); ++w) {
      const auto& s = words_[w];
      for (size_t i = 0; i + 1 < s.size(); ++i) {
        uint64_t k = pair_key(s[i], s[i + 1]);
        pair_counts_[k] += freqs_[w];
        where_[k].push_back(static_cast<int32_t>(w));
      }
    }
    auto worse = [this](const HeapEntry& x, const HeapEntry& y) {  // true if x ranks below y
      if (x.count != y.count) return x.count < y.count;
      const std::string& xa = symbols_[x.a];
      const std::string& ya = symbols_[y.a];
      if (xa != ya) return xa > ya;
      return symbols_[x.b] > symbols_[y.b];
    };
    std::priority_queue<HeapEntry, std::vector<HeapEntry>, decltype(worse)> heap(worse);
    for (const auto& [k, c] : pair_counts_)
      heap.push({c, static_cast<int32_t>(k >> 32), static_cast<int32_t>(k & 0xffffffffu)});

    std::vector<uint64_t> touched;
    while (static_cast<int64_t>(vocab_.size()) < options_.vocab_size && !heap.empty()) {
      HeapEntry top = heap.top();
      heap.pop();
      const uint64_t key = pair_key(top.a, top.b);
      auto pc = pair_counts_.find(key);
      if (pc == pair_counts_.end() || pc->second != top.count) continue;  // stale entry
      if (top.count < options_.min_pair_count) break;
      const std::string& right = symbols_[top.b];
      std::string merged = symbols_[top.a] + (right.rfind("##", 0) == 0 ? right.substr(2) : right);
      const int32_t m = symbol_id(merged);
      if (in_vocab_.insert(merged).second) vocab_.push_back(merged);
      ++stats_.merges;

      std::vector<int32_t> list = std::move(where_[key]);
      where_[key].clear();
      std::sort(list.begin(), list.end());
      list.erase(std::unique(list.begin(), list.end()), list.end());
      touched.clear();
      for (int32_t w : list) merge_in_word(w, top.a, top.b, m, touched);
      std::sort(touched.begin(), touched.end());
      touched.erase(std::unique(touched.begin(), touched.end()), touched.end());
      for (uint64_t k : touched) {
        auto it = pair_counts_.find(k);
        if (it == pair_counts_.end()) continue;
        if (it->second <= 0) {
          pair_counts_.erase(it);
          continue;
        }
        heap.push({it->second, static_cast<int32_t>(k >> 32), static_cast<int32_t>(k & 0xffffffffu)});
      }
    }
  }

  void merge_in_word(int32_t w, int32_t a, int32_t b, int32_t m, std::vector<uint64_t>& touched) {
    auto& s = words_[w];
    bool present = false;
    for (size_t i = 0; i + 1 < s.size(); ++i)
      if (s[i] == a && s[i + 1] == b) present = true;
    if (!present) return;
    const int64_t f = freqs_[w];
    for (size_t i = 0; i + 1 < s.size(); ++i) {
      uint64_t k = pair_key(s[i], s[i + 1]);
      pair_counts_[k] -= f;
      touched.push_back(k);
    }
    std::vector<int32_t> out;
    out.reserve(s.size());
    for (size_t i = 0; i < s.size();) {
      if (i + 1 < s.size() && s[i] == a && s[i + 1] == b) {
        out.push_back(m);
        i += 2;
      } else {
        out.push_back(s[i]);
        ++i;
      }
    }
    s = std::move(out);
    for (size_t i = 0; i + 1 < s.size(); ++i) {
      uint64_t k = pair_key(s[i], s[i + 1]);
      pair_counts_[k] += f;
      touched.push_back(k);
      // Pairs without the new symbol already list this word; only new pairs need it added.
      if (s[i] == m || s[i + 1] == m) where_[k].push_back(w);
    }
  }

  VocabTrainerOptions options_;
  std::string source_;
  BasicTokenizer basic_;
  VocabTrainerStats stats_;
  std::unordered_map<std::string, int64_t> word_counts_;
  std::vector<std::string> symbols_;                    // symbol id -> piece ("ab" or "##ab")
  std::unordered_map<std::string, int32_t> symbol_ids_;
  std::vector<std::vector<int32_t>> words_;             // each trainable word as symbol ids
  std::vector<int64_t> freqs_;                          // its corpus count
  std::unordered_map<uint64_t, int64_t> pair_counts_;   // (left, right) -> weighted count
  std::unordered_map<uint64_t, std::vector<int32_t>> where_;  // (left, right) -> words (may repeat)
  std::vector<std::string> vocab_;
  std::unordered_set<std::string> in_vocab_;
};

}  // namespace

std::vector<std::string> train_wordpiece_vocab_from_lines(const std::vector<std::string>& lines,
                                                          const VocabTrainerOptions& options,
                                                          VocabTrainerStats* stats, const std::string& source) {
  Trainer t(options, source);
  for (const auto& l : lines) t.add_line(l);
  return t.run(stats);
}

std::vector<std::string> train_wordpiece_vocab(const std::string& corpus_path, const VocabTrainerOptions& options,
                                               VocabTrainerStats* stats) {
  core::require_regular_file(corpus_path, "a corpus file (UTF-8 text, one sentence per line)");
  std::ifstream in(corpus_path, std::ios::binary);
  if (!in) throw core::InputError(fmt::format("corpus file '{}' cannot be opened (does it exist?)", corpus_path));
  Trainer t(options, corpus_path);
  std::string line;
  while (std::getline(in, line)) t.add_line(line);
  return t.run(stats);
}

}  // namespace ptsim::runtime::data
