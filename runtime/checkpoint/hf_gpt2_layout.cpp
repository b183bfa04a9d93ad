// runtime/checkpoint/hf_gpt2_layout.cpp — the graph ↔ GPT2LMHeadModel tensor conversion: one table of moved
// tensors per layer and one element map that both directions walk.
#include "runtime/checkpoint/hf_gpt2_layout.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>  // fmt::join

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>

#include "core/error.hpp"

namespace ptsim::runtime {
using core::InputError;

namespace {

// One GPT2LMHeadModel tensor made of `parts` graph tensors of one shape, concatenated along its last dimension,
// each transposed first when `transposed` (nn.Linear [out, in] → Conv1D [in, out]).
struct MovedTensor {
  std::string hf_name;
  std::vector<std::string> parts;
  bool transposed = false;
};

std::vector<MovedTensor> moved_tensors_of_layer(const std::string& x) {
  return {{x + ".attn.c_attn.weight", {x + ".attn.query.weight", x + ".attn.key.weight", x + ".attn.value.weight"}, true},
          {x + ".attn.c_attn.bias", {x + ".attn.query.bias", x + ".attn.key.bias", x + ".attn.value.bias"}, false},
          {x + ".attn.c_proj.weight", {x + ".attn.c_proj.weight"}, true},
          {x + ".mlp.c_fc.weight", {x + ".mlp.c_fc.weight"}, true},
          {x + ".mlp.c_proj.weight", {x + ".mlp.c_proj.weight"}, true}};
}

// "transformer.h.<i>" for every layer some tensor name mentions (both layouts name the layers alike).
template <class Tensors>
std::vector<MovedTensor> moved_tensors(const Tensors& tensors) {
  const std::string prefix = "transformer.h.";
  std::set<std::string> layers;
  for (const auto& t : tensors) {
    if (t.name.compare(0, prefix.size(), prefix) != 0) continue;
    const size_t dot = t.name.find('.', prefix.size());
    if (dot != std::string::npos) layers.insert(t.name.substr(0, dot));
  }
  std::vector<MovedTensor> out;
  for (const std::string& layer : layers)
    for (MovedTensor& m : moved_tensors_of_layer(layer)) out.push_back(std::move(m));
  return out;
}

// A graph part's shape [rows, cols]; a bias [rows] has cols = 1.
struct PartShape {
  int64_t rows = 0;
  int64_t cols = 1;
  bool matrix = false;
};

// move(hf_index, part, part_index) for every element of the moved tensor: the single description of where
// each graph element sits in the GPT2LMHeadModel tensor, used by both directions.
template <class Move>
void for_each_moved_element(const MovedTensor& m, const PartShape& s, Move&& move) {
  const auto k = static_cast<int64_t>(m.parts.size());
  for (int64_t part = 0; part < k; ++part)
    for (int64_t r = 0; r < s.rows; ++r)
      for (int64_t c = 0; c < s.cols; ++c) {
        const int64_t hf_index = m.transposed ? c * (k * s.rows) + part * s.rows + r : (part * s.rows + r) * s.cols + c;
        move(hf_index, part, r * s.cols + c);
      }
}

std::vector<int64_t> hf_shape(const MovedTensor& m, const PartShape& s) {
  const auto width = static_cast<int64_t>(m.parts.size()) * s.rows;
  if (m.transposed) return {s.cols, width};
  return s.matrix ? std::vector<int64_t>{width, s.cols} : std::vector<int64_t>{width};
}

std::vector<int64_t> part_shape_vector(const PartShape& s) {
  return s.matrix ? std::vector<int64_t>{s.rows, s.cols} : std::vector<int64_t>{s.rows};
}

std::string shape_text(const std::vector<int64_t>& shape) { return fmt::format("[{}]", fmt::join(shape, ", ")); }

std::vector<int64_t> shape_of(const CheckpointTensorView& t) {
  return t.shape.empty() ? std::vector<int64_t>{static_cast<int64_t>(t.values.size())} : t.shape;
}

// The common shape of a moved tensor's graph parts (InputError when one is missing or they differ).
PartShape graph_part_shape(const MovedTensor& m, const std::map<std::string, const CheckpointTensorView*>& by_name) {
  std::vector<int64_t> first;
  for (const std::string& name : m.parts) {
    auto it = by_name.find(name);
    if (it == by_name.end())
      throw InputError(fmt::format("GPT-2 tensors: '{}' is missing (needed for '{}')", name, m.hf_name));
    const std::vector<int64_t> shape = shape_of(*it->second);
    if (first.empty()) first = shape;
    if (shape != first || shape.size() > 2 || (m.transposed && shape.size() != 2))
      throw InputError(fmt::format("GPT-2 tensors: '{}' has shape {}, expected {} (it goes into '{}')", name,
                                   shape_text(shape), m.transposed ? "a matrix [out, in]" : shape_text(first),
                                   m.hf_name));
  }
  return {first[0], first.size() == 2 ? first[1] : 1, first.size() == 2};
}

// The graph parts' shape inside a GPT2LMHeadModel tensor (InputError naming the file when it cannot split).
PartShape hf_part_shape(const MovedTensor& m, const CheckpointTensor& t, const std::string& source) {
  const auto k = static_cast<int64_t>(m.parts.size());
  const bool ok = (m.transposed ? t.shape.size() == 2 : t.shape.size() == 1) && t.shape.back() % k == 0;
  if (!ok)
    throw InputError(fmt::format("{}: tensor '{}' has shape {}, expected {} (GPT2LMHeadModel's Conv1D layout)", source,
                                 t.name, shape_text(t.shape),
                                 m.transposed ? fmt::format("a matrix [in, {}·out]", k) : fmt::format("[{}·out]", k)));
  if (m.transposed) return {t.shape[1] / k, t.shape[0], true};
  return {t.shape[0] / k, 1, false};
}

// transformer.h.<i>.attn.{query,key,value}.{weight,bias}: a name only ptsim's graph layout has.
bool is_graph_attention_part(const std::string& name) {
  for (const char* part : {".attn.query.", ".attn.key.", ".attn.value."})
    if (name.find(part) != std::string::npos) return true;
  return false;
}

}  // namespace

std::vector<CheckpointTensor> gpt2_tensors_to_hf(std::span<const CheckpointTensorView> graph_tensors) {
  std::map<std::string, const CheckpointTensorView*> by_name;
  for (const CheckpointTensorView& t : graph_tensors) by_name.emplace(t.name, &t);
  std::map<std::string, const MovedTensor*> moved_by_first_part;
  std::set<std::string> moved_parts;
  const std::vector<MovedTensor> moves = moved_tensors(graph_tensors);
  for (const MovedTensor& m : moves) {
    moved_by_first_part.emplace(m.parts.front(), &m);
    moved_parts.insert(m.parts.begin(), m.parts.end());
  }
  // A layer with some but not all of query/key/value is an error whichever part is missing (the loop below
  // meets a move only at its first part).
  for (const MovedTensor& m : moves)
    if (std::any_of(m.parts.begin(), m.parts.end(), [&](const std::string& n) { return by_name.count(n) > 0; }))
      static_cast<void>(graph_part_shape(m, by_name));
  std::vector<CheckpointTensor> out;
  for (const CheckpointTensorView& t : graph_tensors) {
    auto moved = moved_by_first_part.find(t.name);
    if (moved == moved_by_first_part.end()) {
      if (!moved_parts.count(t.name)) out.push_back({t.name, shape_of(t), {t.values.begin(), t.values.end()}});
      continue;  // key and value go into c_attn with query
    }
    const MovedTensor& m = *moved->second;
    const PartShape s = graph_part_shape(m, by_name);
    CheckpointTensor hf{m.hf_name, hf_shape(m, s), std::vector<float>(m.parts.size() * s.rows * s.cols)};
    for_each_moved_element(m, s, [&](int64_t hf_index, int64_t part, int64_t part_index) {
      hf.values[hf_index] = by_name.at(m.parts[part])->values[part_index];
    });
    out.push_back(std::move(hf));
  }
  return out;
}

std::vector<CheckpointTensor> gpt2_tensors_from_hf(std::vector<CheckpointTensor> hf_tensors, const std::string& source) {
  const std::vector<MovedTensor> moves = moved_tensors(hf_tensors);
  std::map<std::string, const MovedTensor*> moved_by_hf_name;
  for (const MovedTensor& m : moves) moved_by_hf_name.emplace(m.hf_name, &m);
  // Names stay unique: the file's are, and a split c_attn's query/key/value names are rejected as file tensors.
  std::vector<CheckpointTensor> out;
  auto add = [&](CheckpointTensor t) { out.push_back(std::move(t)); };
  for (CheckpointTensor& t : hf_tensors) {
    auto moved = moved_by_hf_name.find(t.name);
    if (moved == moved_by_hf_name.end()) {
      if (is_graph_attention_part(t.name))
        throw InputError(fmt::format("{}: tensor '{}' is in ptsim's graph layout, but the file is in GPT2LMHeadModel's "
                                     "(it has attn.c_attn tensors): a file must hold one layout for every layer",
                                     source, t.name));
      add(std::move(t));
      continue;
    }
    const MovedTensor& m = *moved->second;
    const PartShape s = hf_part_shape(m, t, source);
    std::vector<CheckpointTensor> parts;
    for (const std::string& name : m.parts)
      parts.push_back({name, part_shape_vector(s), std::vector<float>(static_cast<size_t>(s.rows * s.cols))});
    for_each_moved_element(m, s, [&](int64_t hf_index, int64_t part, int64_t part_index) {
      parts[part].values[part_index] = t.values[hf_index];
    });
    for (CheckpointTensor& p : parts) add(std::move(p));
  }
  return out;
}

bool is_hf_gpt2_layout(std::span<const CheckpointTensor> tensors) {
  const std::string suffix = ".attn.c_attn.weight";
  for (const CheckpointTensor& t : tensors)
    if (t.name.size() > suffix.size() && t.name.compare(t.name.size() - suffix.size(), suffix.size(), suffix) == 0)
      return true;
  return false;
}

}  // namespace ptsim::runtime
