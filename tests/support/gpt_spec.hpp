// tests/support/gpt_spec.hpp — a GPT-2-shaped ModelSpec of any size (pre-LN, causal, 4h MLP, GPT-2's BPE
// vocabulary padded to 50,304, no token types), for tests that need a model the shipped ones do not
// provide (tests/models/test_sequence_parallel.cpp, tests/sim/test_sequence_parallel_step.cpp).
#pragma once
#include <cstdint>
#include <string>

#include "models/model_spec.hpp"

namespace ptsim::testing {

inline models::ModelSpec gpt_shaped(std::string name, int64_t layers, int64_t hidden, int64_t heads,
                                    int64_t max_positions) {
  models::ModelSpec m;
  m.name = std::move(name);
  m.family = models::ModelFamily::gpt2;
  m.num_layers = layers;
  m.hidden_size = hidden;
  m.num_heads = heads;
  m.intermediate_size = 4 * hidden;
  m.vocab_size = 50304;
  m.max_position_embeddings = max_positions;
  m.type_vocab_size = 0;
  m.layer_norm_eps = 1e-5;
  return m;
}

}  // namespace ptsim::testing
