// runtime/checkpoint/checkpoint.hpp — training checkpoints: model weights, optimizer state and the
// trainer's own state (step, RNG, data position, lr schedule), saved so that a crash at any instant
// leaves the previous checkpoint loadable.
// Layout (docs/optimizers-and-checkpoints.md):
//   DIR/step_<N>/model.safetensors       fp32 weights, one tensor per parameter (metadata: format, step)
//   DIR/step_<N>/optimizer.safetensors   "<param>.m", "<param>.v" ... (metadata: format, optimizer, step)
//   DIR/step_<N>/state.json              {"format", "step", "optimizer", "optimizer_step", "files",
//                                         "checksums": {file: FNV-1a 64 of its bytes}, "extra": {...}}
//   DIR/latest                           "step_<N>\n", replaced atomically after step_<N> is complete
// save_checkpoint builds DIR/step_<N>.tmp.<pid>/ (every file fsynced), fsyncs it, renames it to
// DIR/step_<N> and fsyncs DIR, then replaces DIR/latest atomically. A crash leaves either no step_<N> or a
// complete one; load_latest_checkpoint ignores every name that is not exactly step_<digits>.
// Not here: sharded (per-rank) checkpoints, retention of the last K checkpoints, removal of temp
// directories left by crashed runs (they are named *.tmp.<pid> and can be deleted by hand).
#pragma once
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/json_reader.hpp"              // defines: Json
#include "runtime/optim/optimizer.hpp"       // defines: OptimizerState

namespace ptsim::runtime {

// A model tensor to save (borrowed). An empty shape means [values.size()].
struct CheckpointTensorView {
  std::string name;
  std::span<const float> values;
  std::vector<int64_t> shape;
};
// A model tensor to restore into (borrowed); its shape must match the checkpoint's. An empty shape means
// [values.size()].
struct CheckpointTensorTarget {
  std::string name;
  std::span<float> values;
  std::vector<int64_t> shape;
};

struct CheckpointTensor {
  std::string name;
  std::vector<int64_t> shape;
  std::vector<float> values;
};

struct Checkpoint {
  std::string dir;                        // DIR/step_<N> it was read from
  int64_t step = 0;
  std::vector<CheckpointTensor> tensors;  // in file order
  OptimizerState optimizer;
  core::Json extra = core::Json::object();  // the trainer's state, as saved
};

inline constexpr const char* kCheckpointFormat = "ptsim-checkpoint-v1";

// A further file of the step directory, written into it before it is published (e.g. the trainer's
// HuggingFace config.json), so the directory appears complete or not at all.
struct CheckpointExtraFile {
  std::string name;  // a plain file name, not model/optimizer/state
  std::string text;
};

// Write DIR/step_<step> (creating DIR if needed) and point DIR/latest at it; returns the step directory.
// An existing DIR/step_<step> is replaced. `extra` must be a JSON object (rng, data position, lr schedule
// ...). Throws core::InputError on an I/O failure or duplicate tensor names.
std::string save_checkpoint(const std::string& dir, int64_t step, std::span<const CheckpointTensorView> tensors,
                            const OptimizerState& optimizer, const core::Json& extra,
                            std::span<const CheckpointExtraFile> extra_files = {});

// Read one step directory; every file is validated (InputError naming the file and the tensor/field),
// including its checksum in state.json (a flipped bit anywhere in a file is caught).
Checkpoint load_checkpoint(const std::string& step_dir);

// The step directory DIR/latest names; if DIR/latest is missing or names a directory that is gone, the
// highest-numbered DIR/step_<N>. nullopt when DIR has no checkpoint (or does not exist).
std::optional<std::string> find_latest_checkpoint(const std::string& dir);
std::optional<Checkpoint> load_latest_checkpoint(const std::string& dir);
// Remove every checkpoint of DIR (DIR/latest and each DIR/step_<N>/; nothing else): what `train
// --overwrite` does before a fresh run, so no step of the old run can be mistaken for one of the new.
void remove_checkpoints(const std::string& dir);

// InputError naming the file, the tensor (or optimizer array) and the element when a value is NaN or infinite.
// load_checkpoint keeps every float bit for bit (inf and NaN included); training refuses to resume from such
// values (a run that diverged at its last save, an edited file), which would fail steps later as "loss is nan".
void require_finite_values(const Checkpoint& checkpoint);

// Copy the checkpoint's tensors into `targets` after checking that both name the same set of tensors with
// the same shapes (InputError naming the tensor otherwise).
void restore_tensors(const Checkpoint& checkpoint, std::span<const CheckpointTensorTarget> targets);

}  // namespace ptsim::runtime
