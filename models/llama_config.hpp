// models/llama_config.hpp — the llama family's fields of a model spec: ptsim's own JSON ("family": "llama")
// and HuggingFace's LlamaConfig ("model_type": "llama"), and their consistency checks (internal to
// models/model_spec.cpp; docs/llama.md).
#pragma once
#include <string>

#include "core/json_reader.hpp"
#include "models/model_spec.hpp"

namespace ptsim::models {

// After name/family are read: the rest of a ptsim llama model JSON (strict: unknown keys are rejected by the caller).
void read_llama_model_fields(core::JsonReader& r, ModelSpec& m);
// An HF config.json with model_type "llama" (its keys; keys ptsim does not need are allowed).
void read_llama_hf_config(core::JsonReader& r, ModelSpec& m);
// Heads divisible by key/value heads and the like; throws core::InputError naming `source`.
void check_llama_consistency(const ModelSpec& m, const std::string& source);

}  // namespace ptsim::models
