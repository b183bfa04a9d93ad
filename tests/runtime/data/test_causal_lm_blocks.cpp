// tests/runtime/data/test_causal_lm_blocks.cpp — GPT-2's view of the prepared shards (data::CausalLmBlocks,
// data::CausalLmLoader): the stream is every instance's unmasked text in dataset order, blocks are
// contiguous cuts of it, labels are the inputs shifted by one, the order is deterministic, resumable and
// split disjointly over ranks. The dataset is the training tests' tiny setup (tests/data/small_corpus.txt).
#include <doctest/doctest.h>

#include <set>

#include "runtime/data/causal_lm_blocks.hpp"
#include "runtime/data/tokenizer.hpp"
#include "tests/runtime/train/train_test_support.hpp"

using namespace ptsim::test;
namespace data = ptsim::runtime::data;

namespace {

struct Opened {
  std::unique_ptr<data::PretrainingDataset> dataset;
  std::unique_ptr<data::CausalLmBlocks> blocks;
};

const Opened& opened() {
  static const Opened o = [] {
    const TinySetup s = make_tiny_setup("causal_lm_blocks");
    Opened out;
    out.dataset = data::PretrainingDataset::open(s.data);
    out.blocks = std::make_unique<data::CausalLmBlocks>(*out.dataset, out.dataset->seq_len());
    return out;
  }();
  return o;
}

std::vector<int32_t> whole_stream(const Opened& o) {
  std::vector<int32_t> stream;
  for (uint64_t i = 0; i < o.dataset->num_instances(); ++i) {
    const std::vector<int32_t> t = o.blocks->instance_tokens(i);
    stream.insert(stream.end(), t.begin(), t.end());
  }
  return stream;
}

}  // namespace

TEST_CASE("causal LM stream: each instance's text unmasked, without [CLS]/[PAD]/[MASK], a random B left out") {
  const Opened& o = opened();
  const data::Vocab vocab = data::Vocab::load(o.dataset->vocab_path());
  int64_t restored = 0;
  for (uint64_t i = 0; i < o.dataset->num_instances(); ++i) {
    const data::InstanceView v = o.dataset->instance(i);
    const std::vector<int32_t> t = o.blocks->instance_tokens(i);
    int32_t a_end = 1;  // positions 1 .. a_end-1 are segment A (its [SEP] included)
    while (a_end < v.length && v.segment_ids[a_end] == 0) ++a_end;
    const int32_t expected = v.nsp_label == 0 ? v.length - 1 : a_end - 1;
    REQUIRE_MESSAGE(static_cast<int32_t>(t.size()) == expected, "instance " << i);
    CHECK(t.back() == vocab.sep_id());  // every text ends with its [SEP]
    for (int32_t id : t) {
      CHECK(id != vocab.cls_id());
      CHECK(id != vocab.pad_id());
      CHECK(id != vocab.mask_id());  // every masked slot put back
    }
    for (int32_t k = 0; k < v.num_masked; ++k) {
      const int32_t at = v.masked_positions[k];
      if (at - 1 < static_cast<int32_t>(t.size())) {
        CHECK(t[static_cast<size_t>(at - 1)] == v.masked_label_ids[k]);
        ++restored;
      }
    }
  }
  CHECK(restored > 0);  // the setup masks (15%): the restore path ran
  CHECK(o.blocks->stream_tokens() == whole_stream(o).size());
}

TEST_CASE("causal LM blocks: contiguous cuts of seq_len + 1 stream tokens; labels are the inputs shifted by one") {
  const Opened& o = opened();
  const std::vector<int32_t> stream = whole_stream(o);
  const int32_t S = o.dataset->seq_len();
  const auto T = static_cast<uint64_t>(S + 1);
  REQUIRE(o.blocks->num_blocks() == stream.size() / T);
  REQUIRE(o.blocks->num_blocks() > 8);
  std::vector<int32_t> block(T);
  for (uint64_t b = 0; b < o.blocks->num_blocks(); ++b) {
    o.blocks->block(b, block.data());
    const std::vector<int32_t> expected(stream.begin() + static_cast<std::ptrdiff_t>(b * T),
                                        stream.begin() + static_cast<std::ptrdiff_t>((b + 1) * T));
    REQUIRE_MESSAGE(block == expected, "block " << b);
  }
  CHECK_THROWS_AS(o.blocks->block(o.blocks->num_blocks(), block.data()), std::out_of_range);

  data::BatchLoaderOptions lo;
  lo.shuffle = false;  // stream order: row r is block r
  data::CausalLmLoader loader(*o.blocks, lo);
  data::CausalLmBatch batch;
  loader.next_batch(4, batch);
  const auto s = static_cast<size_t>(S);
  for (size_t r = 0; r < 4; ++r) {
    CHECK(batch.block_indices[r] == r);
    for (size_t t = 0; t < s; ++t) {
      CHECK(batch.input_ids[r * s + t] == stream[r * T + t]);
      CHECK(batch.lm_labels[r * s + t] == stream[r * T + t + 1]);
      if (t + 1 < s) CHECK(batch.lm_labels[r * s + t] == batch.input_ids[r * s + t + 1]);
    }
  }
}

TEST_CASE("causal LM loader: deterministic per seed, resumable from its cursor, disjoint over ranks") {
  const Opened& o = opened();
  const uint64_t n = o.blocks->num_blocks();
  data::BatchLoaderOptions lo;
  lo.seed = 7;
  data::CausalLmLoader a(*o.blocks, lo), b(*o.blocks, lo);
  data::CausalLmBatch x, y;
  std::set<uint64_t> epoch0;
  for (uint64_t taken = 0; taken < n; taken += 1) {
    a.next_batch(1, x);
    b.next_batch(1, y);
    CHECK(x.input_ids == y.input_ids);
    epoch0.insert(x.block_indices[0]);
  }
  CHECK(epoch0.size() == n);  // one epoch visits every block once
  CHECK(a.position() == data::LoaderCursor{1, 0});

  // Seek: a fresh loader moved to a's cursor serves what a serves next.
  a.next_batch(3, x);
  data::CausalLmLoader c(*o.blocks, lo);
  c.seek(data::LoaderCursor{1, 0});
  c.next_batch(3, y);
  CHECK(x.block_indices == y.block_indices);
  CHECK(x.lm_labels == y.lm_labels);
  CHECK_THROWS_AS(c.seek(data::LoaderCursor{0, n}), ptsim::core::InputError);

  // Another seed, another order (the permutations of ≥ 9 blocks under two keys differ somewhere in 8 draws).
  lo.seed = 8;
  data::CausalLmLoader d(*o.blocks, lo);
  data::CausalLmLoader e(*o.blocks, data::BatchLoaderOptions{0, 1, 7, true});
  d.next_batch(8, x);
  e.next_batch(8, y);
  CHECK(x.block_indices != y.block_indices);

  // Two ranks: floor(n / 2) blocks each per epoch, no block served to both.
  std::set<uint64_t> seen;
  for (int32_t rank = 0; rank < 2; ++rank) {
    data::CausalLmLoader r(*o.blocks, data::BatchLoaderOptions{rank, 2, 7, true});
    CHECK(r.blocks_per_epoch() == n / 2);
    r.next_batch(static_cast<int32_t>(n / 2), x);
    for (uint64_t i : x.block_indices) CHECK_MESSAGE(seen.insert(i).second, "block " << i << " on both ranks");
  }
  CHECK(seen.size() == 2 * (n / 2));
}
