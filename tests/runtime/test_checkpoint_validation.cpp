// tests/runtime/test_checkpoint_validation.cpp — damaged or mismatched checkpoints are refused on load with
// InputError naming the file and the field: a flipped payload bit (per-file checksum in state.json), a
// tensor of the right element count but another shape, state fields out of range. One saved checkpoint,
// copied and damaged per case. (The trainer's own state — the data cursor, the step against --steps — is
// checked through `ptsim train --resume` in tests/runtime/train/test_train.cpp.)
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/json_reader.hpp"
#include "runtime/checkpoint/checkpoint.hpp"
#include "runtime/optim/optimizer.hpp"
#include "tests/runtime/host_optimizer.hpp"
#include "tests/support/temp_dir.hpp"

using ptsim::core::InputError;
using ptsim::core::Json;
using ptsim::models::OptimizerKind;
using namespace ptsim::runtime;
namespace fs = std::filesystem;

namespace {

// Two tensors, [2, 3] and [2], under SGD (no moments: the optimizer file holds no arrays) or AdamW.
struct Model {
  std::vector<float> w = {0.5f, -1.5f, 2.0f, 0.25f, -0.0f, 3.25f};
  std::vector<float> b = {0.1f, -0.2f};
  std::vector<float> gw = std::vector<float>(6, 0.1f);
  std::vector<float> gb = std::vector<float>(2, 0.1f);
  std::vector<ptsim::test::HostTensor> slots() { return {{"enc.w", &w, &gw, true}, {"enc.b", &b, &gb, false}}; }
  std::vector<CheckpointTensorView> views() const {
    return {CheckpointTensorView{"enc.w", w, {2, 3}}, CheckpointTensorView{"enc.b", b, {}}};
  }
};

fs::path saved_checkpoint(const ptsim::test::TempDir& dir) {
  Model m;
  ptsim::test::HostOptimizer opt(default_optimizer_config(OptimizerKind::adamw), m.slots());
  opt.step(0.01);
  return save_checkpoint(dir.path.string(), 1, m.views(), opt.save_state(), Json::object());
}

void flip_bit(const fs::path& file, std::streamoff offset_from_end) {
  std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(-offset_from_end, std::ios::end);
  char c = 0;
  f.read(&c, 1);
  c = static_cast<char>(c ^ 0x01);
  f.seekp(-offset_from_end, std::ios::end);
  f.write(&c, 1);
}

void edit_state(const fs::path& step_dir, const std::function<void(Json&)>& edit) {
  Json state = ptsim::core::load_json_file((step_dir / "state.json").string());
  edit(state);
  std::ofstream(step_dir / "state.json", std::ios::trunc) << state.dump(2);
}

struct BadCase {
  const char* name;
  std::function<void(const fs::path& step_dir)> damage;
  std::vector<std::string> message;
};

}  // namespace

TEST_CASE("damaged checkpoints are refused on load, naming the file, the field and what was expected") {
  const std::vector<BadCase> cases = {
      // The last payload byte of model.safetensors is the low byte of enc.b[1]: a flipped bit there is a
      // valid float, so only the checksum can see it.
      {"flipped bit in the model payload", [](const fs::path& d) { flip_bit(d / "model.safetensors", 1); },
       {"model.safetensors: checksum mismatch", "the file hashes to 0x"}},
      {"flipped bit in the optimizer payload", [](const fs::path& d) { flip_bit(d / "optimizer.safetensors", 3); },
       {"optimizer.safetensors: checksum mismatch"}},
      {"checksums missing", [](const fs::path& d) { edit_state(d, [](Json& s) { s.erase("checksums"); }); },
       {"state.json", "checksums"}},
      {"checksum of one file missing",
       [](const fs::path& d) { edit_state(d, [](Json& s) { s["checksums"].erase("optimizer.safetensors"); }); },
       {"state.json: field 'checksums.optimizer.safetensors' is missing"}},
      {"negative step", [](const fs::path& d) { edit_state(d, [](Json& s) { s["step"] = -3; }); },
       {"state.json", "step", "a step count >= 0"}},
      {"optimizer step past the step", [](const fs::path& d) { edit_state(d, [](Json& s) { s["optimizer_step"] = 2; }); },
       {"state.json", "optimizer_step", "0..step 1"}},
      {"negative optimizer step", [](const fs::path& d) { edit_state(d, [](Json& s) { s["optimizer_step"] = -1; }); },
       {"optimizer_step", "0..step 1"}},
      {"model file missing", [](const fs::path& d) { fs::remove(d / "model.safetensors"); }, {"model.safetensors is missing"}},
  };
  int n = 0;
  for (const BadCase& c : cases) {
    CAPTURE(c.name);
    ptsim::test::TempDir dir("ckbad" + std::to_string(n++));
    const fs::path step_dir = saved_checkpoint(dir);
    c.damage(step_dir);
    std::string message;
    try {
      load_checkpoint(step_dir.string());
    } catch (const InputError& e) {
      message = e.what();
    }
    REQUIRE_MESSAGE(!message.empty(), "no InputError for: " << c.name);
    for (const std::string& part : c.message) CHECK_MESSAGE(message.find(part) != std::string::npos, message);
  }
}

TEST_CASE("restore checks shapes, not only element counts") {
  ptsim::test::TempDir dir("ckshape");
  const Checkpoint c = load_checkpoint(saved_checkpoint(dir).string());
  Model m;
  // [3, 2] has the 6 elements of [2, 3]: restoring it would read the weights transposed.
  const CheckpointTensorTarget transposed[] = {{"enc.w", m.w, {3, 2}}, {"enc.b", m.b, {}}};
  CHECK_THROWS_WITH_AS(restore_tensors(c, transposed),
                       doctest::Contains("tensor 'enc.w' has shape [2, 3], the model expects [3, 2]"), InputError);
  const CheckpointTensorTarget same[] = {{"enc.w", m.w, {2, 3}}, {"enc.b", m.b, {2}}};
  CHECK_NOTHROW(restore_tensors(c, same));
}

TEST_CASE("the undamaged checkpoint loads: each case above fails for its damage alone") {
  ptsim::test::TempDir dir("ckgood");
  const fs::path step_dir = saved_checkpoint(dir);
  CHECK_NOTHROW(load_checkpoint(step_dir.string()));
  edit_state(step_dir, [](Json&) {});  // re-serialising state.json changes nothing that is checked
  CHECK(load_checkpoint(step_dir.string()).step == 1);
}

TEST_CASE("weights that are not finite are refused before training resumes, naming the tensor (they failed later)") {
  // Saved as a run that diverged would save them: the checksums agree, only the values are wrong. Before this
  // check `ptsim train --resume` ran and stopped with "internal error: loss is nan at step 4".
  ptsim::test::TempDir dir("cknan");
  Model m;
  m.w[4] = std::numeric_limits<float>::quiet_NaN();
  ptsim::test::HostOptimizer opt(default_optimizer_config(OptimizerKind::sgd), m.slots());
  const fs::path step_dir = save_checkpoint(dir.path.string(), 1, m.views(), opt.save_state(), Json::object());
  const Checkpoint c = load_checkpoint(step_dir.string());  // the container keeps every bit (test_checkpoint.cpp)
  CHECK_THROWS_WITH_AS(require_finite_values(c), doctest::Contains("model.safetensors: tensor 'enc.w' element 4 is nan"),
                       InputError);
}
