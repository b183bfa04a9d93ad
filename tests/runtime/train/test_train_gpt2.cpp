// tests/runtime/train/test_train_gpt2.cpp — `ptsim train` on a tiny GPT-2 (hidden 32, 2 layers, causal,
// tanh GELU, tied head) over the tiny BERT setup's shards read as next-token blocks (docs/training.md,
// "GPT-2"): the LM loss falls, --resume is bit-identical (also across an epoch boundary, and from a checkpoint
// in ptsim's older GPT-2 layout), checkpoints carry a GPT2Config, the true vocab and GPT2LMHeadModel's
// tensors, bf16/fp16 runs stay finite, bad input exits 2. Every run uses --threads 1 (deterministic and fast).
#include <doctest/doctest.h>

#include <cmath>
#include <map>

#include "runtime/checkpoint/checkpoint.hpp"
#include "runtime/checkpoint/safetensors.hpp"
#include "runtime/data/tokenizer.hpp"
#include "runtime/checkpoint/hf_gpt2_layout.hpp"
#include "tests/runtime/golden/hf_gpt2_layout.hpp"
#include "tests/runtime/train/gpt2_test_support.hpp"

using namespace ptsim::test;
namespace rt = ptsim::runtime;

namespace {

const TinySetup& setup() {
  static const TinySetup s = make_tiny_gpt2_setup("tiny_gpt2");
  return s;
}

std::string base_flags(const TinySetup& s) {
  return "train --model " + quote(s.model) + " --data " + quote(s.data) + " --threads 1 --quiet";
}

double mean_loss(const std::vector<ptsim::core::Json>& m, size_t from, size_t to) {
  double sum = 0;
  for (size_t i = from; i < to; ++i) sum += m[i].at("loss").get<double>();
  return sum / static_cast<double>(to - from);
}

}  // namespace

TEST_CASE("train gpt2: the LM loss falls over 20 steps from ln(vocab); metrics say lm_loss and perplexity") {
  const TinySetup& s = setup();
  const fs::path dir = fresh_dir("gpt2_falls");
  const auto r = run_ptsim(base_flags(s) + " --steps 20 --micro-batch 8 --lr 5e-2 --metrics " + quote(dir / "m.jsonl"));
  REQUIRE_MESSAGE(r.exit_code == 0, r.output);
  const auto m = read_jsonl(dir / "m.jsonl");
  REQUIRE(m.size() == 20);
  for (const auto& line : m) {
    const double loss = line.at("loss").get<double>();
    CHECK(line.at("lm_loss").get<double>() == loss);  // the graph's only loss
    CHECK(line.at("perplexity").get<double>() == doctest::Approx(std::exp(loss)).epsilon(1e-12));
    CHECK_FALSE(line.contains("mlm_loss"));
    CHECK_FALSE(line.contains("nsp_loss"));
  }
  // At init (normal(0, 0.02) weights) the logits are ~0, so the loss is ~ln(397) = 5.984 over the 397 real
  // ids (the 115 padding rows are excluded from the softmax); 0.1 covers the small logits' spread.
  CHECK(m[0].at("loss").get<double>() == doctest::Approx(std::log(397.0)).epsilon(0.1 / std::log(397.0)));
  // Measured with this seed: first five 5.929, last five 5.585 (a fall of 0.34 nats; the schedule decays to 0
  // at step 20). Require 0.2: four times the step-to-step noise of one batch of 8 blocks (±0.05 measured),
  // ~60% of the measured fall, so a model that does not learn fails and rounding changes do not.
  const double first = mean_loss(m, 0, 5), last = mean_loss(m, 15, 20);
  CHECK_MESSAGE(last < first - 0.2, "first five steps " << first << ", last five " << last);
}

TEST_CASE("train gpt2: N steps straight equal N/2 + --resume + N/2, exactly") {
  // Dropout on and gradient accumulation 2: the RNG (seed, step, micro_step), the block cursor, the optimizer
  // moments and the schedule all have to be restored for the losses to match to the bit.
  const TinySetup& s = setup();
  const fs::path dir = fresh_dir("gpt2_resume");
  const std::string flags = base_flags(s) + " --steps 12 --micro-batch 4 --grad-accum 2 --lr 5e-2 --optimizer adamw";
  auto r = run_ptsim(flags + " --checkpoint-dir " + quote(dir / "straight") + " --metrics " + quote(dir / "a.jsonl"));
  REQUIRE_MESSAGE(r.exit_code == 0, r.output);
  r = run_ptsim(flags + " --checkpoint-dir " + quote(dir / "split") + " --metrics " + quote(dir / "b.jsonl") +
                " --stop-after 5");
  REQUIRE_MESSAGE(r.exit_code == 0, r.output);
  r = run_ptsim(flags + " --checkpoint-dir " + quote(dir / "split") + " --metrics " + quote(dir / "b.jsonl") + " --resume");
  REQUIRE_MESSAGE(r.exit_code == 0, r.output);
  const auto a = read_jsonl(dir / "a.jsonl");
  const auto b = read_jsonl(dir / "b.jsonl");
  REQUIRE(a.size() == 12);
  REQUIRE(b.size() == 12);
  for (size_t i = 0; i < a.size(); ++i) {
    CHECK(b[i].at("step") == a[i].at("step"));
    CHECK(b[i].at("loss").get<double>() == a[i].at("loss").get<double>());  // exact
  }
  check_same_checkpoint_tensors(dir / "straight" / "step_12", dir / "split" / "step_12");
}

TEST_CASE("train gpt2: checkpoints hold a GPT2Config, the true vocab size and the block cursor") {
  const TinySetup& s = setup();
  const fs::path dir = fresh_dir("gpt2_ckpt");
  const auto r = run_ptsim(base_flags(s) + " --steps 3 --micro-batch 4 --checkpoint-dir " + quote(dir / "ck"));
  REQUIRE_MESSAGE(r.exit_code == 0, r.output);
  const ptsim::core::Json config = ptsim::core::load_json_file((dir / "ck" / "step_3" / "config.json").string());
  CHECK(config.at("model_type") == "gpt2");
  CHECK(config.at("architectures") == ptsim::core::Json::array({"GPT2LMHeadModel"}));
  CHECK(config.at("vocab_size") == 397);  // the dataset's vocab, without the 512 − 397 padding rows
  CHECK(config.at("n_embd") == 32);
  CHECK(config.at("n_layer") == 2);
  CHECK(config.at("n_head") == 2);
  CHECK(config.at("n_inner") == 64);
  CHECK(config.at("n_positions") == 64);
  CHECK(config.at("activation_function") == "gelu_new");
  CHECK_FALSE(config.contains("hidden_size"));  // not a BertConfig
  // bos/eos = [SEP], the token that ends each text of the stream; an id inside the 397-token vocabulary.
  const int32_t sep = ptsim::runtime::data::Vocab::load((fs::path(s.data) / "vocab.txt").string()).find("[SEP]");
  CHECK(sep >= 0);
  CHECK(sep < 397);
  CHECK(config.at("bos_token_id") == sep);
  CHECK(config.at("eos_token_id") == sep);
  // model.safetensors is in GPT2LMHeadModel's layout: exactly its parameters for this config (vocab 397, n_embd
  // 32, n_layer 2, n_inner 64, n_positions 64), as hf_gpt2_layout.hpp writes them out from transformers'
  // module tree; no lm_head.weight (tied to wte), no graph name (attn.query ...) left.
  const auto model = rt::read_safetensors((dir / "ck" / "step_3" / "model.safetensors").string());
  std::map<std::string, std::vector<int64_t>> written;
  for (const auto& t : model.tensors) written[t.name] = t.shape;
  CHECK(written == hf_gpt2_lm_head_model_parameters({397, 32, 2, 64, 64}));
  CHECK(written.size() == model.tensors.size());
  CHECK(model.at("transformer.wte.weight").shape == std::vector<int64_t>{397, 32});
  CHECK(model.at("transformer.h.0.attn.c_attn.weight").shape == std::vector<int64_t>{32, 96});
  const std::optional<rt::Checkpoint> ckpt = rt::load_latest_checkpoint((dir / "ck").string());
  REQUIRE(ckpt);
  CHECK(ckpt->extra.at("run").at("objective") == "causal_lm");
  CHECK(ckpt->extra.at("data").at("offset") == 12);  // 3 steps × 4 blocks, one rank (fewer than an epoch's)
}

TEST_CASE("train gpt2: a run across an epoch boundary: the cursor wraps, the loss falls, resume over it is exact") {
  // The tiny setup's stream is 8,222 tokens (docs/training.md, "GPT-2"): floor(8222 / 33) = 249 blocks of
  // seq_len + 1 = 33 per epoch, one rank. 20 steps × 16 blocks = 320 take the whole of epoch 0 and 71
  // blocks of epoch 1 (reshuffled: permute_index(·, 249, seed + 1), docs/data-pipeline.md); step 16 is the
  // one that crosses (blocks 240..255). The split run stops at step 15, before the boundary, and resumes.
  const TinySetup& s = setup();
  const fs::path dir = fresh_dir("gpt2_epochs");
  const std::string flags = base_flags(s) + " --steps 20 --micro-batch 16 --lr 5e-2";
  const StraightAndSplit runs = run_straight_and_split(flags, dir, 15);
  const rt::Checkpoint before = rt::load_checkpoint((dir / "split" / "step_15").string());
  CHECK(before.extra.at("data").at("epoch") == 0);
  CHECK(before.extra.at("data").at("offset") == 240);  // 15 × 16
  const rt::Checkpoint after = rt::load_checkpoint((dir / "straight" / "step_20").string());
  CHECK(after.extra.at("data").at("epoch") == 1);
  CHECK(after.extra.at("data").at("offset") == 320 - 249);

  const std::vector<ptsim::core::Json>& a = runs.straight;
  const std::vector<ptsim::core::Json>& b = runs.split;
  REQUIRE(a.size() == 20);
  REQUIRE(b.size() == 20);
  for (size_t i = 0; i < a.size(); ++i) {
    CHECK_MESSAGE(std::isfinite(a[i].at("loss").get<double>()), a[i].dump());
    CHECK(b[i].at("loss").get<double>() == a[i].at("loss").get<double>());  // exact, across the boundary too
  }
  check_same_checkpoint_tensors(dir / "straight" / "step_20", dir / "split" / "step_20");
  // Measured with this seed: first five 5.925, last five (steps 16..20, the crossing step and epoch 1's
  // blocks) 5.509, a fall of 0.42 nats. Require 0.2, as the 20-step test above: half the measured fall and
  // four times one batch's step-to-step noise, so a model that stops learning at the boundary fails.
  const double first = mean_loss(a, 0, 5), last = mean_loss(a, 15, 20);
  CHECK_MESSAGE(last < first - 0.2, "first five steps " << first << ", last five " << last);
}

TEST_CASE("train gpt2: a checkpoint in ptsim's older GPT-2 layout (attn.query/key/value) resumes, bit-exact") {
  // The older layout is what ptsim wrote before GPT2LMHeadModel's: the graph's tensors, through the same
  // save_checkpoint. Rewrite a step-3 checkpoint that way (same optimizer state, trainer state, config.json)
  // and resume it and the original: the same losses and the same step-6 files, to the bit.
  const TinySetup& s = setup();
  const fs::path dir = fresh_dir("gpt2_old_layout");
  const std::string flags = base_flags(s) + " --steps 6 --micro-batch 4 --lr 5e-2";
  auto r = run_ptsim(flags + " --checkpoint-dir " + quote(dir / "new") + " --stop-after 3");
  REQUIRE_MESSAGE(r.exit_code == 0, r.output);
  const rt::Checkpoint saved = rt::load_checkpoint((dir / "new" / "step_3").string());
  REQUIRE(rt::is_hf_gpt2_layout(saved.tensors));
  const std::vector<rt::CheckpointTensor> graph = rt::gpt2_tensors_from_hf(saved.tensors, saved.dir);
  std::vector<rt::CheckpointTensorView> views;
  for (const rt::CheckpointTensor& t : graph) views.push_back({t.name, t.values, t.shape});
  const rt::CheckpointExtraFile config[] = {{"config.json", read_file(dir / "new" / "step_3" / "config.json")}};
  rt::save_checkpoint((dir / "old").string(), 3, views, saved.optimizer, saved.extra, config);
  REQUIRE(rt::read_safetensors((dir / "old" / "step_3" / "model.safetensors").string()).find("transformer.h.1.attn.key.weight"));

  std::string flags_with_progress = flags;
  flags_with_progress.erase(flags_with_progress.find(" --quiet"), 8);
  r = run_ptsim(flags_with_progress + " --checkpoint-dir " + quote(dir / "old") + " --resume --metrics " + quote(dir / "old.jsonl"));
  REQUIRE_MESSAGE(r.exit_code == 0, r.output);
  CHECK_MESSAGE(r.output.find("model.safetensors is in ptsim's older GPT-2 layout") != std::string::npos, r.output);
  r = run_ptsim(flags + " --checkpoint-dir " + quote(dir / "new") + " --resume --metrics " + quote(dir / "new.jsonl"));
  REQUIRE_MESSAGE(r.exit_code == 0, r.output);
  const auto a = read_jsonl(dir / "new.jsonl");
  const auto b = read_jsonl(dir / "old.jsonl");
  REQUIRE(a.size() == 3);  // steps 4..6
  REQUIRE(b.size() == 3);
  for (size_t i = 0; i < a.size(); ++i) CHECK(b[i].at("loss").get<double>() == a[i].at("loss").get<double>());  // exact
  // The resumed old-layout run writes GPT2LMHeadModel's layout, the same bytes as the other.
  check_same_checkpoint_tensors(dir / "new" / "step_6", dir / "old" / "step_6");
}

TEST_CASE("train gpt2: bf16 and fp16 runs stay finite and start at ln(vocab)") {
  const TinySetup& s = setup();
  const fs::path dir = fresh_dir("gpt2_16bit");
  for (const char* precision : {"bf16", "fp16"}) {
    const fs::path metrics = dir / (std::string(precision) + ".jsonl");
    const auto r = run_ptsim(base_flags(s) + " --steps 8 --micro-batch 8 --lr 5e-2 --precision " + precision +
                             " --metrics " + quote(metrics));
    REQUIRE_MESSAGE(r.exit_code == 0, r.output);
    const auto m = read_jsonl(metrics);
    REQUIRE(m.size() == 8);
    for (const auto& line : m) CHECK_MESSAGE(std::isfinite(line.at("loss").get<double>()), precision << ": " << line.dump());
    // 16-bit rounding of ~0 logits moves the first loss by far less than the 0.1 of the fp32 case.
    CHECK_MESSAGE(m[0].at("loss").get<double>() == doctest::Approx(std::log(397.0)).epsilon(0.1 / std::log(397.0)),
                  precision);
    CHECK_MESSAGE(mean_loss(m, 4, 8) < mean_loss(m, 0, 4), precision << ": the loss must fall");
  }
}

TEST_CASE("train gpt2: bad input exits 2 naming what was wrong") {
  const TinySetup& s = setup();
  const fs::path dir = fresh_dir("gpt2_errors");
  SUBCASE("sequences longer than the model's positions") {
    const fs::path model = dir / "short.json";
    std::string json = kTinyGpt2Json;
    json.replace(json.find("\"max_position_embeddings\": 64"), 29, "\"max_position_embeddings\": 16");
    std::ofstream(model) << json;
    const auto r = run_ptsim("train --model " + quote(model) + " --data " + quote(s.data) + " --threads 1 --quiet --steps 1");
    CHECK(r.exit_code == 2);
    CHECK_MESSAGE(r.output.find("seq_len 32") != std::string::npos, r.output);
    CHECK_MESSAGE(r.output.find("--seq-len") != std::string::npos, r.output);
  }
  SUBCASE("a family ptsim train does not run") {
    const auto r = run_ptsim("train --model llama-2-7b --data " + quote(s.data) + " --threads 1 --quiet --steps 1");
    CHECK(r.exit_code == 2);
    CHECK_MESSAGE(r.output.find("is llama") != std::string::npos, r.output);
  }
  SUBCASE("a BERT checkpoint directory is not resumed as GPT-2") {
    const std::string bert = (dir / "bert.json").string();
    std::ofstream(bert) << kTinyBertJson;
    auto r = run_ptsim("train --model " + quote(bert) + " --data " + quote(s.data) +
                       " --threads 1 --quiet --steps 2 --micro-batch 2 --checkpoint-dir " + quote(dir / "ck"));
    REQUIRE_MESSAGE(r.exit_code == 0, r.output);
    r = run_ptsim(base_flags(s) + " --steps 2 --micro-batch 2 --resume --checkpoint-dir " + quote(dir / "ck"));
    CHECK(r.exit_code == 2);
    CHECK_MESSAGE(r.output.find("objective = \"mlm_nsp\", this run has \"causal_lm\"") != std::string::npos, r.output);
  }
  SUBCASE("a GPT-2 checkpoint is not resumed as BERT, even under the same model name and sizes") {
    // The identity check compares this run's fields with the checkpoint's: objective mlm_nsp against causal_lm.
    auto r = run_ptsim(base_flags(s) + " --steps 2 --micro-batch 2 --checkpoint-dir " + quote(dir / "ck2"));
    REQUIRE_MESSAGE(r.exit_code == 0, r.output);
    std::string json = kTinyBertJson;  // the tiny GPT-2's sizes and positions; only the name differs
    json.replace(json.find("bert-test-tiny"), 14, "gpt2-test-tiny");
    const std::string bert = (dir / "bert-named-gpt2.json").string();
    std::ofstream(bert) << json;
    const std::string ck = (dir / "ck2").string();
    r = run_ptsim("train --model " + quote(bert) + " --data " + quote(s.data) +
                  " --threads 1 --quiet --steps 2 --micro-batch 2 --resume --checkpoint-dir " + quote(ck));
    CHECK(r.exit_code == 2);
    CHECK_MESSAGE(r.output.find("objective = \"causal_lm\", this run has \"mlm_nsp\"") != std::string::npos, r.output);
  }
}
