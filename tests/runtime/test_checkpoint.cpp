// tests/runtime/test_checkpoint.cpp — checkpoint save/load is bit-exact; crash leftovers are ignored.
#include <doctest/doctest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "tests/support/temp_dir.hpp"
#include "core/atomic_file.hpp"
#include "runtime/checkpoint/checkpoint.hpp"
#include "runtime/optim/lr_schedule.hpp"
#include "runtime/optim/optimizer.hpp"
#include "tests/runtime/host_optimizer.hpp"

using ptsim::core::InputError;
using ptsim::core::Json;
using ptsim::models::OptimizerKind;
using namespace ptsim::runtime;
using namespace ptsim::core;
namespace fs = std::filesystem;

namespace {

struct TempDir : ptsim::test::TempDir {
  TempDir() : ptsim::test::TempDir("ck") {}
};

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// A tiny "model": two weight tensors, their gradients, and a LAMB optimizer over them.
struct TinyModel {
  std::vector<float> w = {0.5f, -1.5f, 2.0f, 1e-40f /* denormal */, -0.0f, 3.25f};  // [2, 3]
  std::vector<float> b = {0.1f, std::numeric_limits<float>::infinity()};
  std::vector<float> gw = {0.1f, 0.2f, -0.3f, 0.4f, 0.0f, -0.6f};
  std::vector<float> gb = {0.01f, 0.0f};
  std::vector<ptsim::test::HostTensor> slots() { return {{"enc.w", &w, &gw, true}, {"enc.b", &b, &gb, false}}; }
  std::vector<CheckpointTensorView> views() const {
    return {CheckpointTensorView{"enc.w", w, {2, 3}}, CheckpointTensorView{"enc.b", b, {}}};
  }
};

Json extra_state(int64_t step) {
  LrSchedule s;
  return Json{{"step", step},
              {"rng", {{"seed", 1234}, {"offset", 98765}}},
              {"data", {{"shard", 3}, {"position", 4096}}},
              {"lr_schedule", to_json(s)}};
}

}  // namespace

TEST_CASE("save then load is bit-identical, and training continues identically") {
  TempDir dir;
  TinyModel m;
  m.b[1] = 4.0f;  // keep the optimizer finite; the inf is exercised below
  ptsim::test::HostOptimizer opt(default_optimizer_config(OptimizerKind::lamb), m.slots());
  opt.step(0.01);
  opt.step(0.02);
  const auto views = m.views();
  const std::string step_dir = save_checkpoint(dir.path.string(), 2, views, opt.save_state(), extra_state(2));
  CHECK(step_dir == (dir.path / "step_2").string());
  CHECK(slurp(dir.path / "latest") == "step_2\n");
  CHECK(fs::exists(dir.path / "step_2" / "model.safetensors"));
  CHECK(fs::exists(dir.path / "step_2" / "optimizer.safetensors"));
  CHECK(fs::exists(dir.path / "step_2" / "state.json"));

  const std::optional<Checkpoint> c = load_latest_checkpoint(dir.path.string());
  REQUIRE(c.has_value());
  CHECK(c->step == 2);
  CHECK(c->extra == extra_state(2));
  CHECK(lr_schedule_from_json(c->extra.at("lr_schedule"), "state.json").degree == 0.5);
  REQUIRE(c->tensors.size() == 2);
  CHECK(c->tensors[0].shape == std::vector<int64_t>{2, 3});
  CHECK(std::memcmp(c->tensors[0].values.data(), m.w.data(), m.w.size() * sizeof(float)) == 0);
  CHECK(std::memcmp(c->tensors[1].values.data(), m.b.data(), m.b.size() * sizeof(float)) == 0);
  CHECK(c->optimizer.kind == "lamb");
  CHECK(c->optimizer.step == 2);

  // Restore into a second model + optimizer and take one more step on both: same bits.
  TinyModel m2;
  const CheckpointTensorTarget targets[] = {{"enc.w", m2.w, {2, 3}}, {"enc.b", m2.b, {}}};
  restore_tensors(*c, targets);
  ptsim::test::HostOptimizer opt2(default_optimizer_config(OptimizerKind::lamb), m2.slots());
  opt2.load_state(c->optimizer, c->dir);
  opt.step(0.03);
  opt2.step(0.03);
  CHECK(std::memcmp(m.w.data(), m2.w.data(), m.w.size() * sizeof(float)) == 0);
  CHECK(std::memcmp(m.b.data(), m2.b.data(), m.b.size() * sizeof(float)) == 0);
  CHECK(opt2.step_count() == 3);
}

TEST_CASE("special float values survive bit-exactly") {
  TempDir dir;
  TinyModel m;
  m.w[5] = std::numeric_limits<float>::quiet_NaN();
  ptsim::test::HostOptimizer opt(default_optimizer_config(OptimizerKind::sgd), m.slots());
  save_checkpoint(dir.path.string(), 0, m.views(), opt.save_state(), Json::object());
  const Checkpoint c = load_checkpoint((dir.path / "step_0").string());
  CHECK(std::memcmp(c.tensors[0].values.data(), m.w.data(), m.w.size() * sizeof(float)) == 0);
  CHECK(std::memcmp(c.tensors[1].values.data(), m.b.data(), m.b.size() * sizeof(float)) == 0);
}

TEST_CASE("load_latest ignores crash leftovers: temp directories and partial temp files") {
  TempDir dir;
  TinyModel m;
  ptsim::test::HostOptimizer opt(default_optimizer_config(OptimizerKind::lamb), m.slots());
  CHECK_FALSE(load_latest_checkpoint(dir.path.string()).has_value());                 // empty dir
  CHECK_FALSE(load_latest_checkpoint((dir.path / "nonexistent").string()).has_value());
  save_checkpoint(dir.path.string(), 5, m.views(), opt.save_state(), extra_state(5));

  // A crash while saving step 9: a half-written temp directory, and a torn temp file for `latest`.
  const fs::path crashed = dir.path / "step_9.tmp.424242";
  fs::create_directories(crashed);
  { std::ofstream(crashed / "model.safetensors.tmp.424242") << "\x40\x00\x00"; }
  { std::ofstream(crashed / "state.json") << "{\"format\": \"ptsim-chec"; }
  { std::ofstream(dir.path / "latest.tmp.424242") << "step_"; }
  // Also a stray file that merely looks like a checkpoint name.
  { std::ofstream(dir.path / "step_11") << "not a directory"; }

  std::optional<Checkpoint> c = load_latest_checkpoint(dir.path.string());
  REQUIRE(c.has_value());
  CHECK(c->step == 5);

  // Crash after the step directory was renamed into place but before `latest` moved: with `latest` gone,
  // the highest complete step_<N> wins. With `latest` present it is authoritative (e.g. after a rollback).
  save_checkpoint(dir.path.string(), 7, m.views(), opt.save_state(), extra_state(7));
  fs::remove(dir.path / "latest");
  CHECK(find_latest_checkpoint(dir.path.string()) == (dir.path / "step_7").string());
  write_file_atomic((dir.path / "latest").string(), "step_5\n");
  CHECK(load_latest_checkpoint(dir.path.string())->step == 5);
}

TEST_CASE("saving the same step twice replaces it; the atomic writer leaves no temp file") {
  TempDir dir;
  TinyModel m;
  ptsim::test::HostOptimizer opt(default_optimizer_config(OptimizerKind::sgd), m.slots());
  save_checkpoint(dir.path.string(), 3, m.views(), opt.save_state(), extra_state(3));
  m.w[0] = 42.0f;
  save_checkpoint(dir.path.string(), 3, m.views(), opt.save_state(), extra_state(3));
  const Checkpoint c = load_checkpoint((dir.path / "step_3").string());
  CHECK(c.tensors[0].values[0] == 42.0f);
  int entries = 0;
  for (const auto& e : fs::directory_iterator(dir.path)) {
    (void)e;
    ++entries;
  }
  CHECK(entries == 2);  // step_3 and latest: no temp or ".old" directories left behind

  // An uncommitted writer removes its temp file and leaves the target alone.
  const fs::path target = dir.path / "x.txt";
  write_file_atomic(target.string(), "old\n");
  {
    AtomicFileWriter w(target.string());
    w.write(std::string_view("new, but never committed"));
    CHECK(fs::exists(w.temp_path()));
  }
  CHECK(slurp(target) == "old\n");
  CHECK_FALSE(fs::exists(atomic_temp_path(target.string())));
}

TEST_CASE("corrupt or mismatched checkpoints are input errors naming the file") {
  TempDir dir;
  TinyModel m;
  ptsim::test::HostOptimizer opt(default_optimizer_config(OptimizerKind::lamb), m.slots());
  const std::string step_dir = save_checkpoint(dir.path.string(), 1, m.views(), opt.save_state(), Json::object());
  const fs::path model = fs::path(step_dir) / "model.safetensors";

  // Truncate model.safetensors by 4 bytes.
  const std::string bytes = slurp(model);
  { std::ofstream(model, std::ios::binary | std::ios::trunc) << bytes.substr(0, bytes.size() - 4); }
  CHECK_THROWS_WITH_AS(load_checkpoint(step_dir), doctest::Contains(model.string().c_str()), InputError);

  // Restore into a model with a different tensor size / name.
  { std::ofstream(model, std::ios::binary | std::ios::trunc) << bytes; }
  const Checkpoint c = load_checkpoint(step_dir);
  std::vector<float> small(3);
  const CheckpointTensorTarget wrong_size[] = {{"enc.w", small, {}}, {"enc.b", m.b, {}}};
  CHECK_THROWS_WITH_AS(restore_tensors(c, wrong_size), doctest::Contains("'enc.w' has 6 elements, the model expects 3"),
                       InputError);
  const CheckpointTensorTarget missing[] = {{"enc.w", m.w, {2, 3}}};
  CHECK_THROWS_WITH_AS(restore_tensors(c, missing), doctest::Contains("'enc.b' matches no model tensor"), InputError);

  // Optimizer state of another kind.
  ptsim::test::HostOptimizer adamw(default_optimizer_config(OptimizerKind::adamw), m.slots());
  CHECK_THROWS_WITH_AS(adamw.load_state(c.optimizer, c.dir), doctest::Contains("is for 'lamb'"), InputError);

  // A directory that is not a checkpoint.
  CHECK_THROWS_WITH_AS(load_checkpoint(dir.path.string()), doctest::Contains("state.json is missing"), InputError);
}
