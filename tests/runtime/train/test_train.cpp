// tests/runtime/train/test_train.cpp — `ptsim train` end to end on a tiny BERT (hidden 32, 2 layers) and the
// small test corpus: the loss falls, --resume is bit-identical to a straight run, checkpoints carry
// HuggingFace names and true-vocab shapes, SIGTERM checkpoints and exits 0, op times follow
// ptsim.op_times.v1, bad flags exit 2. Every run uses --threads 1 (deterministic and fast).
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <map>
#include <set>

#include "runtime/checkpoint/checkpoint.hpp"
#include "runtime/checkpoint/safetensors.hpp"
#include "tests/runtime/golden/hf_bert_layout.hpp"
#include "tests/runtime/train/train_test_support.hpp"

using namespace ptsim::test;
namespace rt = ptsim::runtime;

namespace {

std::string base_flags(const TinySetup& s) {
  return "train --model " + quote(s.model) + " --data " + quote(s.data) + " --threads 1 --quiet";
}

const TinySetup& setup() {
  static const TinySetup s = make_tiny_setup("tiny");
  return s;
}

}  // namespace

TEST_CASE("train: the tiny setup has a vocab that needs padding") {
  // 397 is not a multiple of 8 (ModelSpec::vocab_pad_multiple), so the graph's embedding has 400 rows and
  // the checkpoint must slice them back to 397.
  CHECK(setup().vocab_size == 397);
}

TEST_CASE("train: the loss falls over 30 steps and starts near ln(vocab) + ln(2)") {
  const TinySetup& s = setup();
  const fs::path dir = fresh_dir("falls");
  const auto r = run_ptsim(base_flags(s) + " --steps 30 --micro-batch 8 --lr 5e-2 --metrics " + quote(dir / "m.jsonl"));
  REQUIRE_MESSAGE(r.exit_code == 0, r.output);
  const auto m = read_metrics(dir / "m.jsonl");
  REQUIRE(m.size() == 30);
  for (size_t i = 0; i < m.size(); ++i) CHECK(m[i].step == static_cast<int64_t>(i + 1));
  // At init (normal(0, 0.02) weights) the logits are ~0, so the MLM loss is ~ln(397) = 5.984 and the NSP
  // loss ~ln(2) = 0.693; 0.1 covers the small logits' spread (measured: mlm 5.99, total 6.69).
  CHECK(m[0].mlm_loss == doctest::Approx(std::log(397.0)).epsilon(0.1 / std::log(397.0)));
  CHECK(m[0].loss == doctest::Approx(std::log(397.0) + std::log(2.0)).epsilon(0.1 / 6.68));
  double first = 0, last = 0;
  for (int i = 0; i < 5; ++i) {
    first += m[static_cast<size_t>(i)].loss / 5;
    last += m[m.size() - 1 - static_cast<size_t>(i)].loss / 5;
  }
  // Measured with this seed: first five 6.66, last five 6.07. Require a clear fall of 0.3 nats.
  CHECK_MESSAGE(last < first - 0.3, "first five steps " << first << ", last five " << last);
}

TEST_CASE("train: N steps straight equal N/2 + --resume + N/2, exactly") {
  // Dropout on and gradient accumulation 2, so the RNG (seed, step, micro_step), the data cursor, the
  // optimizer moments and the schedule all have to be restored for the losses to match to the bit.
  const TinySetup& s = setup();
  const fs::path dir = fresh_dir("resume");
  const std::string flags = base_flags(s) + " --steps 20 --micro-batch 4 --grad-accum 2 --lr 5e-2 --optimizer lamb";
  auto r = run_ptsim(flags + " --checkpoint-dir " + quote(dir / "straight") + " --metrics " + quote(dir / "a.jsonl"));
  REQUIRE_MESSAGE(r.exit_code == 0, r.output);
  r = run_ptsim(flags + " --checkpoint-dir " + quote(dir / "split") + " --metrics " + quote(dir / "b.jsonl") +
                " --stop-after 10");
  REQUIRE_MESSAGE(r.exit_code == 0, r.output);
  CHECK(read_file(dir / "split" / "latest") == "step_10\n");
  r = run_ptsim(flags + " --checkpoint-dir " + quote(dir / "split") + " --metrics " + quote(dir / "b.jsonl") + " --resume");
  REQUIRE_MESSAGE(r.exit_code == 0, r.output);

  const auto a = read_metrics(dir / "a.jsonl");
  const auto b = read_metrics(dir / "b.jsonl");  // steps 1..10, then 11..20 appended by the resumed run
  REQUIRE(a.size() == 20);
  REQUIRE(b.size() == 20);
  for (size_t i = 0; i < a.size(); ++i) {
    CHECK(b[i].step == a[i].step);
    CHECK(b[i].loss == a[i].loss);  // exact: same arithmetic in the same order
    CHECK(b[i].lr == a[i].lr);
  }
  // Final weights and optimizer state: byte-identical tensor data.
  check_same_checkpoint_tensors(dir / "straight" / "step_20", dir / "split" / "step_20");
}

TEST_CASE("train: checkpoints use HuggingFace BertForPreTraining names and the true vocab size") {
  const TinySetup& s = setup();
  const fs::path dir = fresh_dir("layout");
  const auto r = run_ptsim(base_flags(s) + " --steps 4 --micro-batch 4 --checkpoint-dir " + quote(dir / "ck") +
                           " --checkpoint-every 2");
  REQUIRE_MESSAGE(r.exit_code == 0, r.output);
  for (const char* step : {"step_2", "step_4"})
    for (const char* f : {"model.safetensors", "optimizer.safetensors", "state.json", "config.json"})
      CHECK_MESSAGE(fs::exists(dir / "ck" / step / f), step << "/" << f);
  CHECK(read_file(dir / "ck" / "latest") == "step_4\n");

  const auto model = rt::read_safetensors((dir / "ck" / "step_4" / "model.safetensors").string());
  std::set<std::string> names;
  for (const auto& t : model.tensors) names.insert(t.name);
  // The names transformers' BertForPreTraining.state_dict() has (decoder weight tied to the embeddings).
  for (const char* n :
       {"bert.embeddings.word_embeddings.weight", "bert.embeddings.position_embeddings.weight",
        "bert.embeddings.token_type_embeddings.weight", "bert.embeddings.LayerNorm.weight", "bert.embeddings.LayerNorm.bias",
        "bert.encoder.layer.0.attention.self.query.weight", "bert.encoder.layer.0.attention.self.key.bias",
        "bert.encoder.layer.0.attention.self.value.weight", "bert.encoder.layer.0.attention.output.dense.weight",
        "bert.encoder.layer.0.attention.output.LayerNorm.weight", "bert.encoder.layer.1.intermediate.dense.weight",
        "bert.encoder.layer.1.output.dense.bias", "bert.encoder.layer.1.output.LayerNorm.bias", "bert.pooler.dense.weight",
        "cls.predictions.transform.dense.weight", "cls.predictions.transform.LayerNorm.weight", "cls.predictions.bias",
        "cls.seq_relationship.weight", "cls.seq_relationship.bias"})
    CHECK_MESSAGE(names.count(n) == 1, n);
  // Strictly: exactly the parameters of transformers' BertForPreTraining for this config (hf_bert_layout.hpp,
  // written from modeling_bert's module tree), every shape equal, nothing missing and nothing extra.
  std::map<std::string, std::vector<int64_t>> saved;
  for (const auto& t : model.tensors) saved[t.name] = t.shape;
  const auto expected = ptsim::test::hf_bert_for_pretraining_parameters({397, 32, 2, 64, 64, 2});
  for (const auto& e : expected) CHECK_MESSAGE(saved.count(e.first) == 1, "missing " << e.first);
  for (const auto& e : saved) CHECK_MESSAGE(expected.count(e.first) == 1, "unexpected " << e.first);
  CHECK(saved == expected);
  CHECK(model.at("bert.embeddings.word_embeddings.weight").shape == std::vector<int64_t>{397, 32});
  CHECK(model.at("cls.predictions.bias").shape == std::vector<int64_t>{397});
  CHECK(model.at("bert.encoder.layer.0.intermediate.dense.weight").shape == std::vector<int64_t>{64, 32});  // [out, in]
  CHECK(model.at("cls.seq_relationship.weight").shape == std::vector<int64_t>{2, 32});
  // transformers' safetensors loader accepts only format pt/tf/flax/mlx in the metadata.
  CHECK(model.metadata.at("format") == "pt");

  const auto config = ptsim::core::load_json_file((dir / "ck" / "step_4" / "config.json").string());
  CHECK(config.at("model_type") == "bert");
  CHECK(config.at("vocab_size") == 397);
  CHECK(config.at("hidden_size") == 32);
  CHECK(config.at("num_hidden_layers") == 2);

  const auto ckpt = rt::load_latest_checkpoint((dir / "ck").string());
  REQUIRE(ckpt.has_value());
  CHECK(ckpt->step == 4);
  CHECK(ckpt->optimizer.kind == "lamb");
  CHECK(ckpt->optimizer.step == 4);
  CHECK(ckpt->extra.at("data").at("offset") == 16);  // 4 steps × 4 sequences, one rank
  CHECK(ckpt->extra.at("run").at("micro_batch") == 4);
  CHECK(ckpt->extra.at("lr_schedule").at("total_steps") == 4);
}

TEST_CASE("train: SIGTERM writes a checkpoint and exits 0; --resume continues from it") {
  const TinySetup& s = setup();
  const fs::path dir = fresh_dir("sigterm");
  const fs::path metrics = dir / "m.jsonl";
  ChildProcess child({"train", "--model", s.model, "--data", s.data, "--threads", "1", "--steps", "1000000",
                      "--micro-batch", "4", "--checkpoint-dir", (dir / "ck").string(), "--metrics", metrics.string()},
                     dir / "log.txt");
  // Wait until a few steps have been logged, then ask it to stop.
  const bool running = wait_until([&] { return read_metrics(metrics).size() >= 3; }, std::chrono::seconds(60));
  REQUIRE_MESSAGE(running, read_file(dir / "log.txt"));
  ::kill(child.pid(), SIGTERM);
  const int code = child.wait();
  const std::string log = read_file(dir / "log.txt");
  CHECK_MESSAGE(code == 0, log);
  CHECK_MESSAGE(log.find("stopped by SIGTERM after step") != std::string::npos, log);
  const auto ckpt = rt::load_latest_checkpoint((dir / "ck").string());
  REQUIRE(ckpt.has_value());
  const auto m = read_metrics(metrics);
  REQUIRE(!m.empty());
  CHECK(ckpt->step == m.back().step);  // the checkpoint is of the last finished step

  const auto r = run_ptsim(base_flags(s) + " --steps 1000000 --micro-batch 4 --checkpoint-dir " + quote(dir / "ck") +
                           " --metrics " + quote(metrics) + " --resume --stop-after " + std::to_string(ckpt->step + 2));
  REQUIRE_MESSAGE(r.exit_code == 0, r.output);
  const auto m2 = read_metrics(metrics);
  REQUIRE(m2.size() == m.size() + 2);
  CHECK(m2.back().step == ckpt->step + 2);
}

TEST_CASE("train: --op-times writes ptsim.op_times.v1 with one entry per graph op") {
  const TinySetup& s = setup();
  const fs::path dir = fresh_dir("optimes");
  const auto r = run_ptsim(base_flags(s) + " --steps 4 --micro-batch 4 --grad-accum 2 --op-times " + quote(dir / "ops.json"));
  REQUIRE_MESSAGE(r.exit_code == 0, r.output);
  const auto j = ptsim::core::load_json_file((dir / "ops.json").string());
  CHECK(j.at("schema") == "ptsim.op_times.v1");
  CHECK(j.at("source") == "measured");
  CHECK(j.at("steps") == 3);  // step 1 is warm-up
  CHECK(j.at("recipe").at("grad_accum") == 2);
  CHECK(j.at("recipe").at("precision") == "fp32");
  const double step_seconds = j.at("step_seconds").get<double>();
  CHECK(step_seconds > 0);
  const auto& ops = j.at("ops");
  REQUIRE(ops.size() > 50);
  double sum = 0;
  std::set<std::string> phases;
  for (size_t i = 0; i < ops.size(); ++i) {
    CHECK(ops[i].at("id") == static_cast<int>(i));
    CHECK(ops[i].at("seconds").get<double>() >= 0);
    for (const char* k : {"name", "kind", "phase", "layer"}) CHECK(ops[i].contains(k));
    sum += ops[i].at("seconds").get<double>();
    phases.insert(ops[i].at("phase").get<std::string>());
  }
  CHECK(phases.count("forward") == 1);
  CHECK(phases.count("backward") == 1);
  CHECK(phases.count("optimizer") == 1);
  // The ops run inside the step: their sum cannot exceed the step's wall time (plus timer overhead slack).
  CHECK(sum <= step_seconds * 1.05 + 1e-4);
  CHECK(sum > 0);
}

// The header names the backend and the device it computes on, the op-times file's device (a GPU run:
// "backend cuda: GPU 0 (<name>)", tests/cuda_emu/test_ptsim_emulated_train.cpp), so a user sees what ran.
TEST_CASE("train: the progress header names the backend and the op-times file's device") {
  const TinySetup& s = setup();
  const fs::path dir = fresh_dir("header_device");
  const auto r = run_ptsim("train --model " + quote(s.model) + " --data " + quote(s.data) +
                           " --threads 1 --steps 1 --micro-batch 2 --op-times " + quote(dir / "ops.json"));
  REQUIRE_MESSAGE(r.exit_code == 0, r.output);
  const std::string device = ptsim::core::load_json_file((dir / "ops.json").string()).at("device").get<std::string>();
  CHECK(device.rfind("cpu", 0) == 0);
  CHECK_MESSAGE(r.output.find("\n  backend cpu: " + device + "\n") != std::string::npos, r.output);
}

TEST_CASE("train: bad input exits 2 with a message naming the problem") {
  const TinySetup& s = setup();
  const fs::path dir = fresh_dir("bad");
  struct Case {
    std::string args;
    std::string expect;
  };
  const std::string ok = "--model " + quote(s.model) + " --data " + quote(s.data) + " --threads 1 --quiet --steps 2";
  // A checkpoint of a micro-batch-4 run, to resume with different flags.
  REQUIRE(run_ptsim("train " + ok + " --micro-batch 4 --checkpoint-dir " + quote(dir / "ck")).exit_code == 0);
  const auto huge_model = dir / "huge.json";
  std::ofstream(huge_model) << R"({"name": "huge", "family": "bert", "num_layers": 2, "hidden_size": 128,
                                   "num_heads": 2, "vocab_size": 400, "intermediate_size": 9223372036854775807})";
  const std::vector<Case> cases = {
      {"train --steps 2", "--data"},
      {"train --data " + quote(dir / "missing"), "does not exist"},
      {"train " + ok + " --backend cuda", "--backend cuda"},
      {"train " + ok + " --backend tpu", "--backend 'tpu' is unknown"},
      {"train " + ok + " --optimizer adam", "--optimizer"},
      {"train " + ok + " --schedule cosine", "--schedule 'cosine'"},
      {"train --model " + quote(s.model) + " --data " + quote(s.data) + " --steps 0",
       "--steps is 0, expected an integer in [1, 1099511627776]"},
      {"train " + ok + " --micro-batch 9223372036854775807", "--micro-batch is 9223372036854775807"},
      {"train " + ok + " --grad-accum 0", "--grad-accum is 0"},
      // Issue #9: this model once crashed `train` (its FFN activation bytes wrapped).
      {"train --model " + quote(huge_model) + " --data " + quote(s.data) + " --steps 2",
       "field 'intermediate_size': expected an integer in [1, 4194304]"},
      {"train " + ok + " --warmup 2", "--warmup"},
      {"train " + ok + " --resume", "--resume needs --checkpoint-dir"},
      {"train " + ok + " --resume --checkpoint-dir " + quote(dir / "empty"), "no checkpoint"},
      {"train " + ok + " --micro-batch 8 --resume --checkpoint-dir " + quote(dir / "ck"), "micro_batch = 4"},
      {"train --model no-such-model --data " + quote(s.data), "no-such-model"},
      // The runtime has no kernels for Llama's ops (docs/llama.md): refused before any work, not a crash.
      {"train --model llama-2-7b --data " + quote(s.data) + " --steps 2",
       "model 'llama-2-7b' is llama; ptsim train runs BERT (MLM + NSP) and GPT-2 (causal LM) pretraining"},
      {"train " + ok + " --bogus-flag", "bogus"},
      // Data-parallel flags with one rank: nothing to apply them to.
      {"train " + ok + " --no-comm-overlap", "--no-comm-overlap applies to data-parallel runs"},
      {"train " + ok + " --bucket-mib 1", "--bucket-mib applies to data-parallel runs"},
      // The communicator (runtime/comm/comm_choice.hpp; every combination is in tests/runtime/comm).
      {"train " + ok + " --comm nccl", "--comm nccl all-reduces CUDA device memory and needs --backend cuda"},
      {"train " + ok + " --comm gloo", "--comm 'gloo' is unknown (expected auto | mpi | nccl)"},
#ifdef PTSIM_HAVE_MPI
      {"train " + ok + " --comm mpi", "--comm mpi needs an MPI launcher"},
#else
      {"train " + ok + " --comm mpi", "built without MPI"},
#endif
  };
  for (const Case& c : cases) {
    const auto r = run_ptsim(c.args);
    CHECK_MESSAGE(r.exit_code == 2, c.args << "\n" << r.output);
    CHECK_MESSAGE(r.output.find(c.expect) != std::string::npos, c.args << "\nexpected '" << c.expect << "' in:\n" << r.output);
  }
  const auto help = run_ptsim("train --help");
  CHECK(help.exit_code == 0);
  CHECK(help.output.find("--checkpoint-every") != std::string::npos);
}

TEST_CASE("train: SIGTERM during a long step stops within an op; the resumed run is bit-identical") {
  // grad-accum 1000 × micro-batch 4 makes each step 1000 micro-steps (about 2 s on the test machine; 0.8 s
  // measured at 400), so a signal sent once step 1 is logged (polled every 20 ms) lands inside step 2. The
  // stop abandons step 2, checkpoints step 1, and --resume repeats step 2 from the same state: its loss
  // equals the straight run's to the bit.
  const TinySetup& s = setup();
  const fs::path dir = fresh_dir("sigterm_midstep");
  const std::vector<std::string> flags = {"--model", s.model, "--data", s.data, "--threads", "1", "--steps", "2",
                                          "--micro-batch", "4", "--grad-accum", "1000", "--lr", "5e-2"};
  const std::string cli = base_flags(s) + " --steps 2 --micro-batch 4 --grad-accum 1000 --lr 5e-2";
  auto r = run_ptsim(cli + " --metrics " + quote(dir / "straight.jsonl"));
  REQUIRE_MESSAGE(r.exit_code == 0, r.output);

  std::vector<std::string> args = {"train"};
  args.insert(args.end(), flags.begin(), flags.end());
  for (const char* a : {"--checkpoint-dir", "", "--metrics", ""}) args.emplace_back(a);
  args[args.size() - 3] = (dir / "ck").string();
  args[args.size() - 1] = (dir / "split.jsonl").string();
  ChildProcess child(args, dir / "log.txt");
  const bool started = wait_until([&] { return read_metrics(dir / "split.jsonl").size() >= 1; }, std::chrono::seconds(120));
  REQUIRE_MESSAGE(started, read_file(dir / "log.txt"));
  const auto t0 = std::chrono::steady_clock::now();
  ::kill(child.pid(), SIGTERM);
  const int code = child.wait();
  const double stop_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const std::string log = read_file(dir / "log.txt");
  REQUIRE_MESSAGE(code == 0, log);
  CHECK_MESSAGE(log.find("stop requested during step 2: its partial work is discarded") != std::string::npos, log);
  CHECK_MESSAGE(log.find("stopped by SIGTERM after step 1") != std::string::npos, log);
  CHECK(read_file(dir / "ck" / "latest") == "step_1\n");
  MESSAGE("stopped " << stop_seconds << " s after SIGTERM");

  r = run_ptsim(cli + " --checkpoint-dir " + quote(dir / "ck") + " --metrics " + quote(dir / "split.jsonl") + " --resume");
  REQUIRE_MESSAGE(r.exit_code == 0, r.output);
  const auto a = read_metrics(dir / "straight.jsonl");
  const auto b = read_metrics(dir / "split.jsonl");
  REQUIRE(a.size() == 2);
  REQUIRE(b.size() == 2);
  CHECK(b[0].loss == a[0].loss);
  CHECK(b[1].step == 2);
  CHECK(b[1].loss == a[1].loss);  // exact: the abandoned attempt left nothing behind
}

TEST_CASE("train --resume: a trainer state out of range is exit 2 naming the field") {
  const TinySetup& s = setup();
  const fs::path dir = fresh_dir("resume_state");
  const std::string flags = base_flags(s) + " --steps 4 --micro-batch 4 --checkpoint-dir " + quote(dir / "ck");
  REQUIRE(run_ptsim(flags + " --stop-after 2").exit_code == 0);
  const fs::path state = dir / "ck" / "step_2" / "state.json";
  const std::string original = read_file(state);
  struct Case {
    const char* name;
    std::function<void(ptsim::core::Json&)> edit;
    std::string expect;
  };
  const std::vector<Case> cases = {
      // After step 2 of micro-batch 4 the cursor is (0, 8): any other value cannot come from this run.
      {"cursor offset", [](ptsim::core::Json& j) { j["extra"]["data"]["offset"] = 9; }, "extra.data is epoch 0 offset 9"},
      {"negative epoch", [](ptsim::core::Json& j) { j["extra"]["data"]["epoch"] = -1; }, "epoch"},
      {"cursor as a string", [](ptsim::core::Json& j) { j["extra"]["data"]["offset"] = "8"; }, "offset"},
      {"negative elapsed time", [](ptsim::core::Json& j) { j["extra"]["elapsed_seconds"] = -5.0; }, "elapsed_seconds"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.name);
    ptsim::core::Json j = ptsim::core::Json::parse(original);
    c.edit(j);
    std::ofstream(state, std::ios::trunc) << j.dump(2);
    const auto r = run_ptsim(flags + " --resume");
    CHECK_MESSAGE(r.exit_code == 2, r.output);
    CHECK_MESSAGE(r.output.find(c.expect) != std::string::npos, r.output);
  }
  // A checkpoint from before --precision (no extra.precision, run.precision, loss_scaler) was fp32: it resumes.
  ptsim::core::Json old = ptsim::core::Json::parse(original);
  REQUIRE(old["extra"]["run"].at("precision") == "fp32");
  old["extra"]["run"].erase("precision");
  old["extra"].erase("precision");
  old["extra"].erase("weights_dtype");
  old["extra"].erase("loss_scaler");
  std::ofstream(state, std::ios::trunc) << old.dump(2);
  const auto r = run_ptsim(flags + " --resume");
  CHECK_MESSAGE(r.exit_code == 0, r.output);
}

TEST_CASE("train --resume: metrics lines past the checkpoint and a torn last line are dropped, so each step appears once") {
  const TinySetup& s = setup();
  const fs::path dir = fresh_dir("resume_metrics");
  const std::string flags = base_flags(s) + " --steps 4 --micro-batch 4 --checkpoint-dir " + quote(dir / "ck") +
                            " --metrics " + quote(dir / "m.jsonl");
  REQUIRE(run_ptsim(flags + " --stop-after 2").exit_code == 0);
  // As if the first run had gone on to step 3 and died writing step 4, after its checkpoint of step 2.
  { std::ofstream(dir / "m.jsonl", std::ios::app) << "{\"step\": 3, \"loss\": 99.0, \"mlm_loss\": null, \"lr\": 0.1}\n{\"step\": 4, \"lo"; }
  const auto r = run_ptsim(flags + " --resume");
  REQUIRE_MESSAGE(r.exit_code == 0, r.output);
  const auto m = read_metrics(dir / "m.jsonl");
  REQUIRE(m.size() == 4);
  for (size_t i = 0; i < m.size(); ++i) CHECK(m[i].step == static_cast<int64_t>(i) + 1);
  CHECK(m[2].loss != 99.0);  // the resumed run's step 3, not the dead run's
}
