// tests/runtime/exec/test_optimizer_plan.cpp — the multi-tensor optimizer's work list (runtime/exec/
// optimizer_plan.hpp), which the CPU reference walks and the CUDA backend uploads: chunk boundaries at 0, 1,
// kChunkElements ± 1 and multiples, tensor order, each tensor's chunk range (where its partial sums are
// added in order), empty tensors, decay flags; and the argument checks both backends make. Every expected
// number is counted by hand from the chunk rule (chunk c of a tensor = elements [c·C, min(n, (c+1)·C)),
// C = 2^15) and is exact.
#include <doctest/doctest.h>

#include <stdexcept>
#include <vector>

#include "runtime/exec/backend.hpp"
#include "runtime/exec/cpu_parallel.hpp"  // defines: kChunkElements
#include "runtime/exec/optimizer_plan.hpp"

using namespace ptsim::runtime;

namespace {

constexpr int64_t C = static_cast<int64_t>(cpu::kChunkElements);

// Every structural property the passes rely on: chunks of a tensor are contiguous in the list, in element
// order, tile [0, n) exactly, are at most chunk_elements long and start at multiples of it.
void check_tiles(const OptimizerPlan& plan, int64_t chunk_elements) {
  int64_t next_chunk = 0;
  for (size_t i = 0; i < plan.tensors.size(); ++i) {
    const OptimizerTensorRange& r = plan.tensors[i];
    CHECK(r.first_chunk == next_chunk);
    int64_t at = 0;
    for (int64_t k = r.first_chunk; k < r.first_chunk + r.chunks; ++k) {
      const OptimizerChunk& ch = plan.chunks[static_cast<size_t>(k)];
      CHECK(ch.tensor == static_cast<int64_t>(i));
      CHECK(ch.begin == at);
      CHECK(ch.begin % chunk_elements == 0);
      CHECK(ch.end > ch.begin);
      CHECK(ch.end - ch.begin <= chunk_elements);
      at = ch.end;
    }
    CHECK(at == r.elements);
    next_chunk = r.first_chunk + r.chunks;
  }
  CHECK(next_chunk == static_cast<int64_t>(plan.chunks.size()));
}

}  // namespace

TEST_CASE("optimizer plan: chunk boundaries around 0, 1 and kChunkElements") {
  // n → expected chunk count ⌈n / C⌉ and the last chunk's begin.
  struct Case {
    int64_t n, chunks, last_begin;
  };
  const std::vector<Case> cases = {{0, 0, 0},         {1, 1, 0},         {C - 1, 1, 0},         {C, 1, 0},
                                   {C + 1, 2, C},     {2 * C, 2, C},     {2 * C + 1, 3, 2 * C}, {5 * C - 1, 5, 4 * C}};
  for (const Case& c : cases) {
    CAPTURE(c.n);
    const std::vector<OptimizerPlanTensor> list = {{static_cast<size_t>(c.n), true}};
    const OptimizerPlan plan = plan_optimizer_step(list, cpu::kChunkElements);
    REQUIRE(plan.tensors.size() == 1);
    CHECK(plan.tensors[0].elements == c.n);
    CHECK(plan.tensors[0].chunks == c.chunks);
    CHECK(plan.chunks.size() == static_cast<size_t>(c.chunks));
    if (c.chunks > 0) {
      CHECK(plan.chunks.back().begin == c.last_begin);
      CHECK(plan.chunks.back().end == c.n);
      CHECK(plan.chunks.front().begin == 0);
    }
    check_tiles(plan, C);
  }
}

TEST_CASE("optimizer plan: many tensors, empty ones in between, ranges and decay flags in list order") {
  // Sizes chosen to hit every boundary case in one list; decay alternates, with runs.
  const std::vector<OptimizerPlanTensor> list = {{C + 1, true}, {0, false}, {1, false}, {C, true},
                                                 {0, true},     {3 * C - 1, false}, {7, true}};
  const OptimizerPlan plan = plan_optimizer_step(list, cpu::kChunkElements);
  REQUIRE(plan.tensors.size() == list.size());
  // Chunk counts ⌈n/C⌉: 2, 0, 1, 1, 0, 3, 1 → first chunks 0, 2, 2, 3, 4, 4, 7; 8 chunks in all.
  const std::vector<int64_t> chunks = {2, 0, 1, 1, 0, 3, 1}, first = {0, 2, 2, 3, 4, 4, 7};
  for (size_t i = 0; i < list.size(); ++i) {
    CAPTURE(i);
    CHECK(plan.tensors[i].chunks == chunks[i]);
    CHECK(plan.tensors[i].first_chunk == first[i]);
    CHECK(plan.tensors[i].decay == (list[i].decay ? 1 : 0));
  }
  REQUIRE(plan.chunks.size() == 8);
  CHECK(plan.chunks[1].tensor == 0);
  CHECK(plan.chunks[1].begin == C);
  CHECK(plan.chunks[1].end == C + 1);
  CHECK(plan.chunks[2].tensor == 2);  // tensor 1 is empty: no chunk names it
  CHECK(plan.chunks[6].begin == 2 * C);
  CHECK(plan.chunks[6].end == 3 * C - 1);
  CHECK(plan.chunks[7].tensor == 6);
  check_tiles(plan, C);
}

TEST_CASE("optimizer plan: a small chunk size tiles a tensor list the same way (the rule is not tied to 2^15)") {
  std::vector<OptimizerPlanTensor> list;
  for (size_t n = 0; n < 40; ++n) list.push_back({n, n % 3 != 0});
  const OptimizerPlan plan = plan_optimizer_step(list, 4);
  // Σ ⌈n/4⌉ for n = 0..39: sizes 4k+1..4k+4 contribute 4(k+1) for k = 0..8 (n ≤ 36): 4·45 = 180; n = 37..39
  // add 3·10 = 30; n = 0 adds 0. Total 210.
  CHECK(plan.chunks.size() == 210);
  check_tiles(plan, 4);
  CHECK_THROWS_AS(plan_optimizer_step(list, 0), std::invalid_argument);
}

TEST_CASE("optimizer plan: an empty list plans nothing") {
  const OptimizerPlan plan = plan_optimizer_step({}, cpu::kChunkElements);
  CHECK(plan.chunks.empty());
  CHECK(plan.tensors.empty());
}

TEST_CASE("optimizer_step's argument checks: state arrays per rule, span sizes") {
  CHECK(optimizer_state_arrays(optim_math::Rule::sgd) == 1);
  CHECK(optimizer_state_arrays(optim_math::Rule::adamw) == 2);
  CHECK(optimizer_state_arrays(optim_math::Rule::lamb) == 2);
  CHECK(optimizer_state_arrays(optim_math::Rule::lans) == 2);
  const DeviceBuffer b{0, 4096};
  OptimizerTensor t;
  t.weight = DeviceSpan{b, 0, 64};
  t.grad = DeviceSpan{b, 64, 64};
  t.state[0] = DeviceSpan{b, 128, 64};
  CHECK_THROWS_AS(check_optimizer_tensor(t, 2), std::invalid_argument);  // state[1] is 0 bytes
  CHECK_NOTHROW(check_optimizer_tensor(t, 1));                           // SGD: state[1] unused
  t.state[1] = DeviceSpan{b, 192, 64};
  CHECK_NOTHROW(check_optimizer_tensor(t, 2));
  t.grad.bytes = 60;
  CHECK_THROWS_AS(check_optimizer_tensor(t, 2), std::invalid_argument);
  t.grad.bytes = 64;
  t.weight.bytes = t.grad.bytes = t.state[0].bytes = t.state[1].bytes = 62;  // not whole floats
  CHECK_THROWS_AS(check_optimizer_tensor(t, 2), std::invalid_argument);
}
