// runtime/checkpoint/checkpoint.cpp — checkpoint bundle: build in a temp dir, rename, then move `latest`.
#include "runtime/checkpoint/checkpoint.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <unordered_map>

#include "core/error.hpp"
#include "core/input_file.hpp"
#include "core/atomic_file.hpp"
#include "runtime/checkpoint/safetensors.hpp"
#include "runtime/data/tokenizer.hpp"  // defines: fnv1a64, hash_to_hex

namespace ptsim::runtime {
using core::InputError;
using core::Json;
using core::atomic_temp_path;
using core::fsync_directory;
using core::write_file_atomic;
namespace fs = std::filesystem;

namespace {

constexpr const char* kModelFile = "model.safetensors";
constexpr const char* kOptimizerFile = "optimizer.safetensors";
constexpr const char* kStateFile = "state.json";
constexpr const char* kLatestFile = "latest";

std::string step_dir_name(int64_t step) { return fmt::format("step_{}", step); }

// N for "step_<digits>", else nullopt (temp dirs "step_<N>.tmp.<pid>" and anything else are not checkpoints).
std::optional<int64_t> parse_step_dir_name(const std::string& name) {
  const std::string prefix = "step_";
  if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) return std::nullopt;
  int64_t n = 0;
  for (std::size_t k = prefix.size(); k < name.size(); ++k) {
    const char c = name[k];
    if (c < '0' || c > '9') return std::nullopt;
    if (n > (INT64_MAX - 9) / 10) return std::nullopt;
    n = n * 10 + (c - '0');
  }
  return n;
}

void check_fs(const std::error_code& ec, const std::string& what) {
  if (ec) throw InputError(fmt::format("{}: {}", what, ec.message()));
}

// FNV-1a 64 of a whole file, read in 1 MiB pieces (the same hash the shards and the vocab use).
std::string file_checksum(const std::string& path) {
  core::require_regular_file(path, "a checkpoint file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(fmt::format("{}: cannot open the file to checksum it", path));
  std::vector<char> buffer(1 << 20);
  uint64_t hash = data::kFnv1aOffset;
  while (in) {
    in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
    hash = data::fnv1a64(buffer.data(), static_cast<size_t>(in.gcount()), hash);
  }
  if (in.bad()) throw InputError(fmt::format("{}: reading the file to checksum it failed", path));
  return data::hash_to_hex(hash);
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

void require_finite(const std::vector<float>& values, const std::string& file, const char* what,
                    const std::string& name) {
  const auto bad = std::find_if(values.begin(), values.end(), [](float v) { return !std::isfinite(v); });
  if (bad == values.end()) return;
  throw InputError(fmt::format("{}: {} '{}' element {} is {}: a checkpoint's values must be finite (resume from an "
                               "earlier step_<N>)",
                               file, what, name, bad - values.begin(), *bad));
}

}  // namespace

std::string save_checkpoint(const std::string& dir, int64_t step, std::span<const CheckpointTensorView> tensors,
                            const OptimizerState& optimizer, const Json& extra,
                            std::span<const CheckpointExtraFile> extra_files) {
  if (step < 0) throw InputError(fmt::format("save_checkpoint: step must be >= 0, got {}", step));
  if (!extra.is_object()) throw InputError("save_checkpoint: the extra state must be a JSON object");
  std::error_code ec;
  fs::create_directories(dir, ec);
  check_fs(ec, fmt::format("{}: cannot create the checkpoint directory", dir));

  const std::string name = step_dir_name(step);
  const fs::path final_dir = fs::path(dir) / name;
  const fs::path temp_dir = fs::path(atomic_temp_path(final_dir.string()));
  fs::remove_all(temp_dir, ec);  // a leftover of this very process (same pid) is ours to clear
  fs::create_directory(temp_dir, ec);
  check_fs(ec, fmt::format("{}: cannot create the temporary checkpoint directory", temp_dir.string()));
  // A save that fails (disk full) removes its temporary directory: the previous checkpoints stay as they
  // were, with no debris beside them.
  struct TempDirGuard {
    fs::path path;
    bool keep = false;
    ~TempDirGuard() {
      std::error_code ignored;
      if (!keep) fs::remove_all(path, ignored);
    }
  } guard{temp_dir};

  // 1. model.safetensors
  std::vector<SafetensorsView> model_views;
  model_views.reserve(tensors.size());
  for (const CheckpointTensorView& t : tensors) model_views.push_back(safetensors_f32_view(t.name, t.values, t.shape));
  // transformers refuses a model.safetensors whose "format" is not pt/tf/flax/mlx: say "pt" (PyTorch
  // tensor names and layout) and keep ptsim's own format tag beside it.
  write_safetensors((temp_dir / kModelFile).string(), model_views,
                    {{"format", "pt"}, {"ptsim_format", kCheckpointFormat}, {"step", std::to_string(step)}});

  // 2. optimizer.safetensors
  std::vector<SafetensorsView> opt_views;
  opt_views.reserve(optimizer.arrays.size());
  for (const NamedArray& a : optimizer.arrays) opt_views.push_back(safetensors_f32_view(a.name, a.values));
  write_safetensors((temp_dir / kOptimizerFile).string(), opt_views,
                    {{"format", kCheckpointFormat},
                     {"optimizer", optimizer.kind},
                     {"step", std::to_string(optimizer.step)}});

  // 3. state.json, with the checksum of each file as it is on disk (read back: what a later load will see)
  Json state = {{"format", kCheckpointFormat},
                {"step", step},
                {"optimizer", optimizer.kind},
                {"optimizer_step", optimizer.step},
                {"files", {{"model", kModelFile}, {"optimizer", kOptimizerFile}}},
                {"checksums",
                 {{kModelFile, file_checksum((temp_dir / kModelFile).string())},
                  {kOptimizerFile, file_checksum((temp_dir / kOptimizerFile).string())}}},
                {"extra", extra}};
  write_file_atomic((temp_dir / kStateFile).string(), state.dump(2) + "\n");
  for (const CheckpointExtraFile& f : extra_files) {
    if (f.name.empty() || f.name.find('/') != std::string::npos || f.name == kModelFile || f.name == kOptimizerFile ||
        f.name == kStateFile)
      throw std::logic_error(fmt::format("save_checkpoint: '{}' cannot be an extra file", f.name));
    write_file_atomic((temp_dir / f.name).string(), f.text);
  }
  fsync_directory(temp_dir.string());

  // 4. Publish: rename the complete directory into place (replacing an older copy of the same step).
  fs::path old_dir;
  if (fs::exists(final_dir, ec)) {
    old_dir = fs::path(final_dir.string() + fmt::format(".old.tmp.{}", static_cast<long>(::getpid())));
    fs::remove_all(old_dir, ec);
    fs::rename(final_dir, old_dir, ec);
    check_fs(ec, fmt::format("{}: cannot move the previous checkpoint of step {} aside", final_dir.string(), step));
  }
  fs::rename(temp_dir, final_dir, ec);
  check_fs(ec, fmt::format("{}: cannot rename {} into place", final_dir.string(), temp_dir.string()));
  guard.keep = true;  // renamed away: nothing left at temp_dir
  fsync_directory(dir);
  if (!old_dir.empty()) fs::remove_all(old_dir, ec);  // best effort

  // 5. Point `latest` at it (atomic replace + directory fsync).
  write_file_atomic((fs::path(dir) / kLatestFile).string(), name + "\n");
  return final_dir.string();
}

Checkpoint load_checkpoint(const std::string& step_dir) {
  const fs::path d(step_dir);
  const std::string state_path = (d / kStateFile).string();
  if (!fs::exists(state_path))
    throw InputError(fmt::format("{}: not a checkpoint directory ({} is missing)", step_dir, kStateFile));
  Checkpoint c;
  c.dir = step_dir;
  const Json state = core::load_json_file(state_path);
  core::JsonReader r(state, state_path);
  const std::string format = r.require_string("format");
  if (format != kCheckpointFormat)
    throw InputError(fmt::format("{}: field 'format' is '{}', expected '{}'", state_path, format, kCheckpointFormat));
  c.step = r.require_int("step");
  if (c.step < 0) r.fail("step", "a step count >= 0");
  c.optimizer.kind = r.require_string("optimizer");
  c.optimizer.step = r.require_int("optimizer_step");
  if (c.optimizer.step < 0 || c.optimizer.step > c.step) r.fail("optimizer_step", fmt::format("0..step {}", c.step));
  r.ignore("files");
  const Json& checksums = r.raw("checksums");
  if (!checksums.is_object()) r.fail("checksums", "an object {file: FNV-1a 64 hex}");
  const Json& extra = r.raw("extra");
  if (!extra.is_object()) r.fail("extra", "an object");
  c.extra = extra;
  r.finish();
  // Before parsing anything: a bit flipped in a payload parses fine and would train on silently.
  for (const char* file : {kModelFile, kOptimizerFile}) {
    const std::string path = (d / file).string();
    if (!checksums.contains(file) || !checksums.at(file).is_string())
      throw InputError(fmt::format("{}: field 'checksums.{}' is missing or not a string", state_path, file));
    if (!fs::exists(path)) throw InputError(fmt::format("{}: {} is missing", step_dir, file));
    const std::string found = file_checksum(path);
    if (found != checksums.at(file).get<std::string>())
      throw InputError(fmt::format("{}: checksum mismatch: {} says {}, the file hashes to {} (the file is corrupt or "
                                   "from another save; resume from an earlier step_<N>)",
                                   path, state_path, checksums.at(file).get<std::string>(), found));
  }

  const std::string model_path = (d / kModelFile).string();
  const SafetensorsFile model = read_safetensors(model_path);
  auto meta_step = model.metadata.find("step");
  if (meta_step != model.metadata.end() && meta_step->second != std::to_string(c.step))
    throw InputError(fmt::format("{}: metadata step {} differs from {} in {} (files from different saves?)",
                                 model_path, meta_step->second, c.step, state_path));
  for (const SafetensorsTensor& t : model.tensors)
    c.tensors.push_back(CheckpointTensor{t.name, t.shape, t.to_f32(model_path)});

  const std::string opt_path = (d / kOptimizerFile).string();
  const SafetensorsFile opt = read_safetensors(opt_path);
  auto meta_kind = opt.metadata.find("optimizer");
  if (meta_kind != opt.metadata.end() && meta_kind->second != c.optimizer.kind)
    throw InputError(fmt::format("{}: metadata optimizer '{}' differs from '{}' in {}", opt_path, meta_kind->second,
                                 c.optimizer.kind, state_path));
  for (const SafetensorsTensor& t : opt.tensors) {
    if (t.shape.size() != 1)
      throw InputError(fmt::format("{}: optimizer array '{}' has shape {}, expected one dimension", opt_path, t.name,
                                   shape_text(t.shape)));
    c.optimizer.arrays.push_back(NamedArray{t.name, t.to_f32(opt_path)});
  }
  return c;
}

std::optional<std::string> find_latest_checkpoint(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return std::nullopt;
  const fs::path latest = fs::path(dir) / kLatestFile;
  if (fs::exists(latest, ec)) {
    std::ifstream in(latest);
    std::string name;
    std::getline(in, name);
    if (parse_step_dir_name(name) && fs::is_directory(fs::path(dir) / name, ec)) return (fs::path(dir) / name).string();
  }
  // No usable pointer (crash between the directory rename and the pointer update, or removed by hand):
  // the highest-numbered complete step directory. Temp directories never match step_<digits>.
  std::optional<int64_t> best;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    if (!e.is_directory()) continue;
    const std::optional<int64_t> n = parse_step_dir_name(e.path().filename().string());
    if (n && (!best || *n > *best)) best = n;
  }
  if (!best) return std::nullopt;
  return (fs::path(dir) / step_dir_name(*best)).string();
}

void require_finite_values(const Checkpoint& checkpoint) {
  const std::string dir = checkpoint.dir + "/";
  for (const CheckpointTensor& t : checkpoint.tensors)
    require_finite(t.values, dir + kModelFile, "tensor", t.name);
  for (const NamedArray& a : checkpoint.optimizer.arrays)
    require_finite(a.values, dir + kOptimizerFile, "optimizer array", a.name);
}

void remove_checkpoints(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return;
  fs::remove(fs::path(dir) / kLatestFile, ec);
  check_fs(ec, fmt::format("{}: cannot remove {}", dir, kLatestFile));
  std::vector<fs::path> doomed;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec))
    if (e.is_directory() && parse_step_dir_name(e.path().filename().string())) doomed.push_back(e.path());
  check_fs(ec, fmt::format("{}: cannot list the checkpoint directory", dir));
  for (const fs::path& p : doomed) {
    fs::remove_all(p, ec);
    check_fs(ec, fmt::format("{}: cannot remove the old checkpoint", p.string()));
  }
  fsync_directory(dir);
}

std::optional<Checkpoint> load_latest_checkpoint(const std::string& dir) {
  const std::optional<std::string> step_dir = find_latest_checkpoint(dir);
  if (!step_dir) return std::nullopt;
  return load_checkpoint(*step_dir);
}

void restore_tensors(const Checkpoint& checkpoint, std::span<const CheckpointTensorTarget> targets) {
  std::unordered_map<std::string, const CheckpointTensor*> by_name;
  for (const CheckpointTensor& t : checkpoint.tensors) by_name.emplace(t.name, &t);
  for (const CheckpointTensorTarget& t : targets) {
    auto it = by_name.find(t.name);
    if (it == by_name.end())
      throw InputError(fmt::format("{}: checkpoint has no tensor '{}' (a different model?)", checkpoint.dir, t.name));
    if (it->second->values.size() != t.values.size())
      throw InputError(fmt::format("{}: tensor '{}' has {} elements, the model expects {}", checkpoint.dir, t.name,
                                   it->second->values.size(), t.values.size()));
    // Same count is not same tensor: a [768, 3072] saved where [3072, 768] is expected would load transposed.
    const std::vector<int64_t> expected = t.shape.empty() ? std::vector<int64_t>{static_cast<int64_t>(t.values.size())} : t.shape;
    if (it->second->shape != expected)
      throw InputError(fmt::format("{}: tensor '{}' has shape {}, the model expects {}", checkpoint.dir, t.name,
                                   shape_text(it->second->shape), shape_text(expected)));
  }
  if (targets.size() != checkpoint.tensors.size()) {
    std::unordered_map<std::string, int> wanted;
    for (const CheckpointTensorTarget& t : targets) wanted.emplace(t.name, 0);
    for (const CheckpointTensor& t : checkpoint.tensors)
      if (!wanted.count(t.name))
        throw InputError(fmt::format("{}: checkpoint tensor '{}' matches no model tensor (a different model?)",
                                     checkpoint.dir, t.name));
  }
  for (const CheckpointTensorTarget& t : targets) {
    const std::vector<float>& v = by_name.at(t.name)->values;
    std::copy(v.begin(), v.end(), t.values.begin());
  }
}

}  // namespace ptsim::runtime
