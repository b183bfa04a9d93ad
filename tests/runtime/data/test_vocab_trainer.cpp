// tests/runtime/data/test_vocab_trainer.cpp — WordPiece vocab learning: specials first, size respected,
// deterministic, merges follow pair frequency, and the result tokenizes its own corpus without [UNK].
#include <doctest/doctest.h>

#include <fstream>
#include <set>

#include "core/error.hpp"
#include "data_test_support.hpp"
#include "runtime/data/tokenizer.hpp"
#include "runtime/data/vocab_trainer.hpp"

using namespace ptsim::runtime::data;

TEST_CASE("trained vocab: [PAD] [UNK] [CLS] [SEP] [MASK] at 0..4, exact size, unique tokens, deterministic") {
  VocabTrainerOptions o;
  o.vocab_size = 300;
  VocabTrainerStats stats;
  const auto a = train_wordpiece_vocab(ptsim::test::small_corpus_path(), o, &stats);
  const auto b = train_wordpiece_vocab(ptsim::test::small_corpus_path(), o);
  REQUIRE(a.size() == 300);  // the 4 KB corpus has far more than 300 - 5 - alphabet pairs occurring twice
  CHECK(a == b);
  CHECK(std::vector<std::string>(a.begin(), a.begin() + 5) ==
        std::vector<std::string>{"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"});
  CHECK(std::set<std::string>(a.begin(), a.end()).size() == a.size());
  CHECK(stats.lines == 76);  // tests/data/small_corpus.txt: 65 sentences + 11 blank lines
  CHECK(stats.alphabet + stats.merges >= 295);
  const Vocab v = Vocab::from_tokens(a);
  CHECK(v.mask_id() == 4);
  // Every character of the corpus is in the alphabet, so no word of the corpus becomes [UNK].
  const FullTokenizer tok(v);
  std::ifstream in(ptsim::test::small_corpus_path());
  std::string line;
  int64_t tokens = 0;
  while (std::getline(in, line)) {
    for (int32_t id : tok.encode(line)) {
      CHECK(id != v.unk_id());
      ++tokens;
    }
  }
  CHECK(tokens > 800);
  // Frequent whole words were learned (each occurs >= 30 times in the corpus).
  CHECK(v.find("the") >= 0);
  CHECK(v.find("and") >= 0);
}

TEST_CASE("merges pick the most frequent pair; ## marks non-initial pieces") {
  // "low" x5, "lower" x2, "newest" x6, "widest" x3 (the classic BPE example).
  std::vector<std::string> lines;
  for (int i = 0; i < 5; ++i) lines.push_back("low");
  for (int i = 0; i < 2; ++i) lines.push_back("lower");
  for (int i = 0; i < 6; ++i) lines.push_back("newest");
  for (int i = 0; i < 3; ++i) lines.push_back("widest");
  VocabTrainerOptions o;
  o.vocab_size = 5 + 11 + 1;  // specials + alphabet + exactly one merge
  VocabTrainerStats stats;
  auto v = train_wordpiece_vocab_from_lines(lines, o, &stats);
  // Alphabet: initial l n w + non-initial ##o ##w ##e ##r ##s ##t ##i ##d = 11.
  REQUIRE(stats.alphabet == 11);
  // Pair counts: (##e,##s) = 6+3 = 9, (##s,##t) = 9, (l,##o) = 7, (##o,##w) = 7 ... ties at 9 go to the
  // byte-wise smaller pair: "##e" < "##s", so the first merge is ##e + ##s -> "##es".
  CHECK(v.back() == "##es");
  o.vocab_size = 5 + 11 + 2;
  v = train_wordpiece_vocab_from_lines(lines, o);
  CHECK(v.back() == "##est");  // then (##es, ##t) = 9
}

TEST_CASE("a vocab smaller than the alphabet keeps the most frequent characters") {
  VocabTrainerOptions o;
  o.vocab_size = 20;
  VocabTrainerStats stats;
  const auto v = train_wordpiece_vocab(ptsim::test::small_corpus_path(), o, &stats);
  CHECK(v.size() == 20);
  CHECK(stats.alphabet == 15);
  CHECK(stats.merges == 0);
  // 'e' is the most frequent letter of English text and of this corpus.
  const Vocab vv = Vocab::from_tokens(v);
  CHECK(vv.find("##e") >= 0);
}

TEST_CASE("vocab trainer errors: empty corpus, missing corpus, vocab size below 6") {
  auto dir = ptsim::test::fresh_temp_dir("trainer_errors");
  ptsim::test::write_text(dir / "empty.txt", "\n\n  \n\x01\x02\n");
  VocabTrainerOptions o;
  CHECK_THROWS_WITH_AS(train_wordpiece_vocab((dir / "empty.txt").string(), o), doctest::Contains("has no words"),
                       ptsim::core::InputError);
  CHECK_THROWS_WITH_AS(train_wordpiece_vocab((dir / "missing.txt").string(), o),
                       doctest::Contains("missing.txt' cannot be opened"), ptsim::core::InputError);
  o.vocab_size = 5;
  CHECK_THROWS_WITH_AS(train_wordpiece_vocab(ptsim::test::small_corpus_path(), o), doctest::Contains("--vocab-size 5 is too small"),
                       ptsim::core::InputError);
}
