// tests/fuzz/fuzz_model.cpp — libFuzzer target: a model file, either format models::parse_model_json takes
// (a ptsim model JSON like models/specs/bert-base.json, or a HuggingFace config.json), then the sizes derived
// from it (padded vocab, head dimension).
#include "models/model_spec.hpp"
#include "tests/fuzz/fuzz_support.hpp"

PTSIM_FUZZ_TARGET(model) {
  ptsim::fuzz::guarded([&] {
    const auto spec = ptsim::models::parse_model_json("fuzz-model.json", std::string(ptsim::fuzz::as_text(data, size)));
    volatile int64_t sink = spec.padded_vocab_size() + spec.head_dim();
    (void)sink;
  });
  return 0;
}
