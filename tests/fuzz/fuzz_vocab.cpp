// tests/fuzz/fuzz_vocab.cpp — libFuzzer target: a vocab.txt (runtime/data/tokenizer.hpp Vocab::load, from a
// scratch file) and BERT's tokenizer over the same bytes: FullTokenizer with the vocab when it loads,
// BasicTokenizer (cleaning, lower-casing, accents, punctuation, CJK on raw UTF-8) either way.
#include "runtime/data/tokenizer.hpp"
#include "tests/fuzz/fuzz_support.hpp"

PTSIM_FUZZ_TARGET(vocab) {
  const std::string_view text = ptsim::fuzz::as_text(data, size);
  const std::string path = ptsim::fuzz::FuzzScratch::get().write("vocab.txt", text);
  ptsim::fuzz::guarded([&] {
    const auto vocab = ptsim::runtime::data::Vocab::load(path);
    const ptsim::runtime::data::FullTokenizer tokenizer(vocab);
    for (int32_t id : tokenizer.encode(text))
      if (id < 0 || id >= vocab.size()) std::abort();  // an id outside the vocab would index past the embedding
  });
  ptsim::fuzz::guarded([&] {
    ptsim::runtime::data::BasicTokenizer basic;
    basic.do_lower_case = size % 2 == 0;
    (void)basic.tokenize(text);
  });
  return 0;
}
