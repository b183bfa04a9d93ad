// tests/runtime/train/gpt2_test_support.hpp — the tiny GPT-2 the `ptsim train` GPT-2 tests run (the tiny
// BERT's sizes with GPT-2's structure), its metrics lines (lm_loss, perplexity instead of mlm/nsp), and a
// run made twice, straight and stopped-then-resumed.
#pragma once
#include <fstream>
#include <string>
#include <vector>

#include "core/json_reader.hpp"
#include "tests/runtime/train/train_test_support.hpp"

namespace ptsim::test {

// 2 layers, hidden 32, 2 heads, FFN 64 (kTinyBertJson's sizes), 64 positions (the data's seq 32 fits); the
// vocab is padded to a multiple of 128 as models/specs/gpt2-124m.json's is (397 → 512 rows: padding to slice).
inline const char* kTinyGpt2Json = R"({"name": "gpt2-test-tiny", "family": "gpt2", "num_layers": 2,
  "hidden_size": 32, "num_heads": 2, "intermediate_size": 64, "vocab_size": 50257, "vocab_pad_multiple": 128,
  "max_position_embeddings": 64, "type_vocab_size": 0, "layer_norm_eps": 1e-5, "source": "tests"})";

// The tiny setup's dataset with the tiny GPT-2 next to it (model = its JSON path).
inline TinySetup make_tiny_gpt2_setup(const std::string& name) {
  TinySetup s = make_tiny_setup(name);
  s.model = (s.dir / "gpt2-tiny.json").string();
  std::ofstream(s.model) << kTinyGpt2Json;
  return s;
}

inline std::vector<core::Json> read_jsonl(const fs::path& path) {
  std::vector<core::Json> out;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) out.push_back(core::Json::parse(line));
  return out;
}

// The same run twice under `dir`: straight through (checkpoints in dir/straight, metrics dir/a.jsonl), and
// stopped after step `stop_after` then resumed (dir/split, dir/b.jsonl). REQUIREs every run to exit 0.
struct StraightAndSplit {
  std::vector<core::Json> straight, split;  // the metrics lines
};
// The same with the runs made by `run(extra_flags)` (which REQUIREs its own exit 0): another binary, or mpirun.
template <class Run>
StraightAndSplit run_straight_and_split_with(Run&& run, const fs::path& dir, int stop_after) {
  run(" --checkpoint-dir " + quote(dir / "straight") + " --metrics " + quote(dir / "a.jsonl"));
  const std::string split = " --checkpoint-dir " + quote(dir / "split") + " --metrics " + quote(dir / "b.jsonl");
  run(split + " --stop-after " + std::to_string(stop_after));
  run(split + " --resume");
  return {read_jsonl(dir / "a.jsonl"), read_jsonl(dir / "b.jsonl")};
}
inline StraightAndSplit run_straight_and_split(const std::string& flags, const fs::path& dir, int stop_after) {
  return run_straight_and_split_with(
      [&](const std::string& extra) {
        const auto r = run_ptsim(flags + extra);
        REQUIRE_MESSAGE(r.exit_code == 0, r.output);
      },
      dir, stop_after);
}

}  // namespace ptsim::test
