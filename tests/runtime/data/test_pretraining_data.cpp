// tests/runtime/data/test_pretraining_data.cpp — instance creation (create_pretraining_data.py rules),
// shard round trip, loader batches, rank sharding, resume, and every corruption/mismatch error.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <set>

#include "core/error.hpp"
#include "data_test_support.hpp"
#include "runtime/data/pretraining_data.hpp"
#include "runtime/data/pretraining_dataset.hpp"
#include "runtime/data/shard_format.hpp"

using namespace ptsim::runtime::data;
using ptsim::core::InputError;
namespace fs = std::filesystem;

namespace {

// Vocab: 5 specials, then "w0".."w99" (ids 5..104), then "##p0".."##p19" (ids 105..124).
Vocab synthetic_vocab() {
  std::vector<std::string> t = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};
  for (int i = 0; i < 100; ++i) t.push_back(std::string("w").append(std::to_string(i)));
  for (int i = 0; i < 20; ++i) t.push_back(std::string("##p").append(std::to_string(i)));
  return Vocab::from_tokens(t);
}

// `docs` documents of `sentences` sentences of 3..6 tokens; with `pieces`, every third token is a "##" piece.
std::vector<Document> synthetic_documents(int docs, int sentences, bool pieces, uint64_t seed) {
  DataRng rng(seed);
  std::vector<Document> out(static_cast<size_t>(docs));
  for (auto& d : out)
    for (int s = 0; s < sentences; ++s) {
      std::vector<int32_t> sent;
      const int64_t n = rng.randint(3, 6);
      for (int64_t t = 0; t < n; ++t)
        sent.push_back(pieces && t % 3 == 2 ? static_cast<int32_t>(105 + rng.below(20)) : static_cast<int32_t>(5 + rng.below(100)));
      d.push_back(sent);
    }
  return out;
}

// Document token streams as " id id id " strings, for contiguous-span search.
std::vector<std::string> doc_streams(const std::vector<Document>& docs) {
  std::vector<std::string> out;
  for (const auto& d : docs) {
    std::string s = " ";
    for (const auto& sent : d)
      for (int32_t id : sent) s += std::to_string(id) + " ";
    out.push_back(s);
  }
  return out;
}

bool is_span_of_some_document(const std::vector<std::string>& streams, const std::vector<int32_t>& ids) {
  std::string needle = " ";
  for (int32_t id : ids) needle += std::to_string(id) + " ";
  return std::any_of(streams.begin(), streams.end(), [&](const std::string& s) { return s.find(needle) != std::string::npos; });
}

// Restores the original tokens (labels back at masked positions) and splits at the two [SEP]s.
struct Restored {
  std::vector<int32_t> a, b;
};
Restored restore(const TrainingInstance& inst, const Vocab& v) {
  std::vector<int32_t> ids = inst.input_ids;
  for (size_t k = 0; k < inst.masked_positions.size(); ++k) ids[static_cast<size_t>(inst.masked_positions[k])] = inst.masked_label_ids[k];
  Restored r;
  size_t sep = static_cast<size_t>(std::find(ids.begin() + 1, ids.end(), v.sep_id()) - ids.begin());
  r.a.assign(ids.begin() + 1, ids.begin() + static_cast<long>(sep));
  r.b.assign(ids.begin() + static_cast<long>(sep) + 1, ids.end() - 1);
  return r;
}

std::vector<uint64_t> epoch_indices(BatchLoader& loader, uint64_t count) {
  PretrainingBatch b;
  std::vector<uint64_t> out;
  for (uint64_t i = 0; i < count; ++i) {
    loader.next_batch(1, b);
    out.push_back(b.instance_indices[0]);
  }
  return out;
}

void flip_byte(const fs::path& file, uint64_t offset) {
  std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(static_cast<std::streamoff>(offset));
  char c = 0;
  f.read(&c, 1);
  c = static_cast<char>(c ^ 0x5A);
  f.seekp(static_cast<std::streamoff>(offset));
  f.write(&c, 1);
}

// One prepared dataset shared by the tests below (prepared once per process, copied where mutated).
const fs::path& base_dataset() {
  static const fs::path dir = [] {
    fs::path d = ptsim::test::fresh_temp_dir("base");
    ptsim::test::prepare_small_dataset(d);
    return d;
  }();
  return dir;
}

fs::path copy_of_base(const std::string& name) {
  fs::path d = ptsim::test::fresh_temp_dir(name);
  fs::copy(base_dataset() / "ds", d / "ds", fs::copy_options::recursive);
  fs::copy(base_dataset() / "trained_vocab.txt", d / "trained_vocab.txt");
  return d / "ds";
}

}  // namespace

TEST_CASE("default max predictions: 20 at seq 128 and 80 at seq 512 (BERT's recipe)") {
  CHECK(default_max_predictions(128, 0.15) == 20);
  CHECK(default_max_predictions(512, 0.15) == 80);
  CHECK(default_max_predictions(8, 0.15) == 4);
}

TEST_CASE("instances: [CLS] A [SEP] B [SEP], segment ids, lengths, labels are the original tokens") {
  const Vocab v = synthetic_vocab();
  const auto docs = synthetic_documents(40, 60, false, 7);
  PrepareOptions o;
  o.seq_len = 64;
  o.dup_factor = 3;
  const auto instances = create_training_instances(docs, v, o);
  const auto streams = doc_streams(docs);
  REQUIRE(instances.size() > 500);
  int64_t short_ones = 0;
  for (const auto& inst : instances) {
    const auto n = inst.input_ids.size();
    REQUIRE(n <= 64);
    REQUIRE(inst.segment_ids.size() == n);
    CHECK(inst.input_ids.front() == v.cls_id());
    CHECK(inst.input_ids.back() == v.sep_id());
    CHECK(std::count(inst.input_ids.begin(), inst.input_ids.end(), v.sep_id()) == 2);
    const size_t sep = static_cast<size_t>(std::find(inst.input_ids.begin() + 1, inst.input_ids.end(), v.sep_id()) - inst.input_ids.begin());
    for (size_t t = 0; t < n; ++t) CHECK(inst.segment_ids[t] == (t <= sep ? 0 : 1));
    CHECK(std::is_sorted(inst.masked_positions.begin(), inst.masked_positions.end()));
    for (size_t k = 0; k < inst.masked_positions.size(); ++k) {
      const auto p = static_cast<size_t>(inst.masked_positions[k]);
      CHECK(p > 0);
      CHECK(p < n - 1);
      CHECK(p != sep);
    }
    // Restored A and B are each a contiguous run of one document's tokens: proves the labels are the
    // original tokens (a wrong label would break the run) and that truncation only trims the ends.
    const Restored r = restore(inst, v);
    CHECK(!r.a.empty());
    CHECK(!r.b.empty());
    CHECK(is_span_of_some_document(streams, r.a));
    CHECK(is_span_of_some_document(streams, r.b));
    if (!inst.is_random_next) {  // B follows A in the same document (maybe with A's tail / B's head trimmed)
      std::vector<int32_t> ab = r.a;
      ab.insert(ab.end(), r.b.begin(), r.b.end());
      // When nothing was truncated the concatenation is itself a span.
      if (n < 64) CHECK(is_span_of_some_document(streams, ab));
    }
    if (n < 40) ++short_ones;
  }
  CHECK(short_ones > 0);  // short_seq_prob = 0.1 produces some short targets
}

TEST_CASE("masked LM: ~15% of tokens (exact count rule), 80% [MASK] / 10% random / 10% kept") {
  const Vocab v = synthetic_vocab();
  PrepareOptions o;
  o.seq_len = 128;
  o.short_seq_prob = 0;
  const auto instances = create_training_instances(synthetic_documents(30, 400, false, 11), v, o);
  int64_t slots = 0, as_mask = 0, kept = 0, other = 0;
  for (const auto& inst : instances) {
    // num_to_predict = min(max_predictions, max(1, round(len * 0.15))) and candidates always suffice.
    const auto expect = std::min<int64_t>(20, std::max<int64_t>(1, static_cast<int64_t>(std::nearbyint(inst.input_ids.size() * 0.15))));
    CHECK(static_cast<int64_t>(inst.masked_positions.size()) == expect);
    for (size_t k = 0; k < inst.masked_positions.size(); ++k) {
      const int32_t now = inst.input_ids[static_cast<size_t>(inst.masked_positions[k])];
      ++slots;
      if (now == v.mask_id()) ++as_mask;
      else if (now == inst.masked_label_ids[k]) ++kept;
      else ++other;
    }
  }
  REQUIRE(slots > 20000);
  // Binomial standard error at n > 20000 is < 0.003; tolerance 0.01 (> 3 sigma). "kept" also includes
  // the 1/120 chance that the random replacement (one of the 120 non-special tokens) is the original.
  CHECK(std::abs(static_cast<double>(as_mask) / slots - 0.80) < 0.01);
  CHECK(std::abs(static_cast<double>(kept) / slots - 0.10) < 0.01);
  CHECK(std::abs(static_cast<double>(other) / slots - 0.10) < 0.01);
}

TEST_CASE("next sentence prediction: ~50% random when chunks have several segments") {
  const Vocab v = synthetic_vocab();
  PrepareOptions o;
  o.seq_len = 128;
  o.short_seq_prob = 0;
  // 3..6-token sentences and 125-token targets: a chunk has ~28 segments, so nearly every instance takes
  // the 50% coin (only a document's last, possibly one-segment chunk is always random).
  const auto instances = create_training_instances(synthetic_documents(20, 2000, false, 3), v, o);
  REQUIRE(instances.size() > 2000);
  int64_t random_next = 0;
  for (const auto& inst : instances) random_next += inst.is_random_next ? 1 : 0;
  const double frac = static_cast<double>(random_next) / static_cast<double>(instances.size());
  // Standard error sqrt(0.25 / n) < 0.011 at n > 2000; tolerance 0.04 (> 3.5 sigma).
  CHECK(std::abs(frac - 0.5) < 0.04);
}

TEST_CASE("whole-word masking masks every piece of a word together") {
  const Vocab v = synthetic_vocab();
  PrepareOptions o;
  o.seq_len = 64;
  o.whole_word_mask = true;
  const auto instances = create_training_instances(synthetic_documents(20, 100, true, 5), v, o);
  int64_t checked = 0;
  for (const auto& inst : instances) {
    const Restored r = restore(inst, v);
    std::vector<int32_t> orig = {v.cls_id()};
    orig.insert(orig.end(), r.a.begin(), r.a.end());
    orig.push_back(v.sep_id());
    orig.insert(orig.end(), r.b.begin(), r.b.end());
    orig.push_back(v.sep_id());
    std::set<int32_t> masked(inst.masked_positions.begin(), inst.masked_positions.end());
    for (int32_t p : masked) {
      const bool piece = v.token(orig[static_cast<size_t>(p)]).rfind("##", 0) == 0;
      // A masked "##" piece has its word start masked too (unless A/B truncation cut the word start off,
      // in which case its left neighbour is [CLS] or [SEP] and the piece started its own group).
      if (piece && orig[static_cast<size_t>(p - 1)] != v.cls_id() && orig[static_cast<size_t>(p - 1)] != v.sep_id()) {
        CHECK(masked.count(p - 1) == 1);
        ++checked;
      }
      // and a masked word's following "##" piece is masked too.
      if (static_cast<size_t>(p + 1) < orig.size() && v.token(orig[static_cast<size_t>(p + 1)]).rfind("##", 0) == 0)
        CHECK(masked.count(p + 1) == 1);
    }
  }
  CHECK(checked > 100);
}

TEST_CASE("instance creation is deterministic in the seed") {
  const Vocab v = synthetic_vocab();
  const auto docs = synthetic_documents(10, 50, false, 1);
  PrepareOptions o;
  o.seq_len = 32;
  const auto a = create_training_instances(docs, v, o);
  const auto b = create_training_instances(docs, v, o);
  o.seed = 99;
  const auto c = create_training_instances(docs, v, o);
  REQUIRE(a.size() == b.size());
  bool same = true, differs = a.size() != c.size();
  for (size_t i = 0; i < a.size(); ++i) same = same && a[i].input_ids == b[i].input_ids && a[i].masked_positions == b[i].masked_positions;
  for (size_t i = 0; !differs && i < a.size(); ++i) differs = a[i].input_ids != c[i].input_ids;
  CHECK(same);
  CHECK(differs);
}

TEST_CASE("prepare + load round trip: header, manifest, batches with flat masked rows") {
  const fs::path& base = base_dataset();
  auto ds = PretrainingDataset::open((base / "ds").string(), {true, (base / "trained_vocab.txt").string()});
  const Vocab vocab = Vocab::load(ds->vocab_path());
  CHECK(ds->seq_len() == 32);
  CHECK(ds->max_predictions() == 8);  // ceil(32 * 0.15) = 5 -> rounded up to a multiple of 4
  CHECK(ds->num_instances() > 300);
  CHECK(ds->shard_paths().size() >= 2);
  CHECK(ds->vocab_hash() == vocab.hash());
  CHECK(fs::exists(base / "ds" / "manifest.json"));
  // Bytes on disk: 64-byte header + records of 16 + 4*32 + 8*8 + 32 = 240 bytes.
  CHECK(RecordLayout{32, 8}.bytes() == 240);
  uint64_t total_bytes = 0;
  for (const auto& p : ds->shard_paths()) total_bytes += fs::file_size(p) - 64;
  CHECK(total_bytes == ds->num_instances() * 240);

  int64_t masked = 0, tokens = 0;
  for (uint64_t i = 0; i < ds->num_instances(); ++i) {
    const InstanceView v = ds->instance(i);
    REQUIRE(v.length <= 32);
    CHECK(v.input_ids[0] == vocab.cls_id());
    CHECK(v.input_ids[v.length - 1] == vocab.sep_id());
    CHECK(std::count(v.input_ids, v.input_ids + v.length, vocab.sep_id()) == 2);
    for (int32_t t = v.length; t < 32; ++t) CHECK(v.input_ids[t] == vocab.pad_id());
    for (int32_t k = v.num_masked; k < 8; ++k) CHECK(v.masked_label_ids[k] == -1);
    masked += v.num_masked;
    tokens += v.length;
  }
  // ~15% of tokens are predicted (round() per instance and max_predictions make it approximate).
  CHECK(static_cast<double>(masked) / static_cast<double>(tokens) == doctest::Approx(0.15).epsilon(0.1));

  BatchLoader loader(*ds, {});
  PretrainingBatch b;
  loader.next_batch(4, b);
  REQUIRE(b.input_ids.size() == 4 * 32);
  REQUIRE(b.masked_positions.size() == 4 * 8);
  for (int32_t row = 0; row < 4; ++row) {
    const InstanceView v = ds->instance(b.instance_indices[static_cast<size_t>(row)]);
    int32_t mask_sum = 0;
    for (int32_t t = 0; t < 32; ++t) {
      CHECK(b.input_ids[static_cast<size_t>(row * 32 + t)] == v.input_ids[t]);
      CHECK(b.token_type_ids[static_cast<size_t>(row * 32 + t)] == v.segment_ids[t]);
      mask_sum += b.attention_mask[static_cast<size_t>(row * 32 + t)];
    }
    CHECK(mask_sum == v.length);
    CHECK(b.nsp_labels[static_cast<size_t>(row)] == v.nsp_label);
    for (int32_t k = 0; k < 8; ++k) {
      const int32_t flat = b.masked_positions[static_cast<size_t>(row * 8 + k)];
      if (k < v.num_masked) {
        CHECK(flat == row * 32 + v.masked_positions[k]);
        CHECK(b.masked_labels[static_cast<size_t>(row * 8 + k)] == v.masked_label_ids[k]);
      } else {
        CHECK(flat == row * 32);  // unused slot points at the row's own [CLS]
        CHECK(b.masked_labels[static_cast<size_t>(row * 8 + k)] == -1);
      }
    }
  }
}

TEST_CASE("the epoch permutation is a bijection and differs between epochs") {
  for (uint64_t n : {1ull, 2ull, 3ull, 7ull, 100ull, 1000ull, 4097ull}) {
    std::vector<uint64_t> p;
    for (uint64_t i = 0; i < n; ++i) p.push_back(permute_index(i, n, 42));
    std::sort(p.begin(), p.end());
    for (uint64_t i = 0; i < n; ++i) REQUIRE(p[i] == i);
  }
  int moved = 0;
  for (uint64_t i = 0; i < 1000; ++i) moved += permute_index(i, 1000, 1) != permute_index(i, 1000, 2);
  CHECK(moved > 900);
}

TEST_CASE("ranks partition each epoch: disjoint, same count, together all but N % world") {
  auto ds = PretrainingDataset::open((base_dataset() / "ds").string());
  const uint64_t n = ds->num_instances();
  for (int world : {1, 3, 4}) {
    std::set<uint64_t> all;
    uint64_t total = 0;
    for (int r = 0; r < world; ++r) {
      BatchLoader loader(*ds, {r, world, 7, true});
      CHECK(loader.instances_per_epoch() == n / static_cast<uint64_t>(world));
      for (uint64_t idx : epoch_indices(loader, loader.instances_per_epoch())) {
        CHECK(idx < n);
        all.insert(idx);
        ++total;
      }
      CHECK(loader.position() == LoaderCursor{1, 0});  // exactly one epoch consumed
    }
    CHECK(total == (n / world) * world);
    CHECK(all.size() == total);  // no instance served to two ranks
  }
  // Without shuffle, rank r takes r, r + w, r + 2w, ...
  BatchLoader plain(*ds, {1, 3, 7, false});
  CHECK(epoch_indices(plain, 3) == std::vector<uint64_t>{1, 4, 7});
}

TEST_CASE("resume: seeking to a saved cursor replays the same batches, across epoch boundaries") {
  auto ds = PretrainingDataset::open((base_dataset() / "ds").string());
  BatchLoaderOptions lo{1, 2, 99, true};
  BatchLoader first(*ds, lo);
  PretrainingBatch b;
  const int32_t batch = 37;  // does not divide the per-rank epoch, so batches straddle epochs
  std::vector<LoaderCursor> cursors;
  std::vector<std::vector<int32_t>> ids;
  for (int step = 0; step < 20; ++step) {
    cursors.push_back(first.position());
    first.next_batch(batch, b);
    ids.push_back(b.input_ids);
  }
  CHECK(first.position().epoch >= 2);
  for (int from : {0, 3, 11}) {
    BatchLoader resumed(*ds, lo);
    resumed.seek(cursors[static_cast<size_t>(from)]);
    for (int step = from; step < 20; ++step) {
      resumed.next_batch(batch, b);
      CHECK(b.input_ids == ids[static_cast<size_t>(step)]);
    }
  }
  // Epochs are reshuffled: the first batch of epoch 1 differs from that of epoch 0.
  BatchLoader e0(*ds, lo), e1(*ds, lo);
  e1.seek({1, 0});
  PretrainingBatch b0, b1;
  e0.next_batch(8, b0);
  e1.next_batch(8, b1);
  CHECK(b0.instance_indices != b1.instance_indices);
  CHECK_THROWS_AS(e1.seek({0, e1.instances_per_epoch()}), InputError);
  CHECK_THROWS_AS(BatchLoader(*ds, {2, 2, 1, true}), InputError);
}

TEST_CASE("corrupt shard: one flipped payload byte -> checksum error naming the shard, expected and found") {
  const fs::path ds = copy_of_base("flip");
  flip_byte(ds / "shard_00001.bin", 64 + 1000);
  CHECK_THROWS_WITH_AS(PretrainingDataset::open(ds.string()), doctest::Contains("shard_00001.bin' is corrupt: payload checksum mismatch"),
                       InputError);
  CHECK_THROWS_WITH_AS(PretrainingDataset::open(ds.string()), doctest::Contains("header expects 0x"), InputError);
  CHECK_NOTHROW(PretrainingDataset::open(ds.string(), {false, ""}));  // verification can be skipped
}

TEST_CASE("corrupt shard: bad magic and wrong format version are named") {
  const fs::path ds = copy_of_base("magic");
  flip_byte(ds / "shard_00000.bin", 0);
  CHECK_THROWS_WITH_AS(PretrainingDataset::open(ds.string()), doctest::Contains("shard_00000.bin' is corrupt or not a ptsim shard: bad magic"),
                       InputError);
  flip_byte(ds / "shard_00000.bin", 0);  // restore
  flip_byte(ds / "shard_00000.bin", 8);  // version 1 -> 1 ^ 0x5A = 91
  CHECK_THROWS_WITH_AS(PretrainingDataset::open(ds.string()), doctest::Contains("has format version 91, expected 1"), InputError);
}

TEST_CASE("truncated shard: shorter than its header says, or shorter than a header") {
  const fs::path ds = copy_of_base("truncate");
  const fs::path shard = ds / "shard_00000.bin";
  const auto size = fs::file_size(shard);
  fs::resize_file(shard, size - 100);
  CHECK_THROWS_WITH_AS(PretrainingDataset::open(ds.string()), doctest::Contains("shard_00000.bin' is truncated: header says"),
                       InputError);
  fs::resize_file(shard, 10);
  CHECK_THROWS_WITH_AS(PretrainingDataset::open(ds.string()), doctest::Contains("10 bytes, shorter than the 64-byte header"),
                       InputError);
  fs::remove(shard);
  CHECK_THROWS_WITH_AS(PretrainingDataset::open(ds.string()), doctest::Contains("shard_00000.bin' (listed in"), InputError);
}

TEST_CASE("vocab mismatch names both the dataset and the vocab") {
  const fs::path dir = ptsim::test::fresh_temp_dir("othervocab");
  ptsim::test::write_text(dir / "other.txt", "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nthe\n");
  const std::string ds = (base_dataset() / "ds").string();
  const std::string expected = "vocab mismatch: dataset '" + ds + "'";
  CHECK_THROWS_WITH_AS(PretrainingDataset::open(ds, {true, (dir / "other.txt").string()}),
                       doctest::Contains(expected.c_str()), InputError);
  CHECK_THROWS_WITH_AS(PretrainingDataset::open(ds, {true, (dir / "other.txt").string()}),
                       doctest::Contains("other.txt' has hash"), InputError);
}

TEST_CASE("prepare errors: empty corpus, missing corpus, missing dataset directory") {
  const fs::path dir = ptsim::test::fresh_temp_dir("prep_errors");
  const std::string vocab = ptsim::test::prepare_small_dataset(dir);
  ptsim::test::write_text(dir / "empty.txt", "\n\n   \n");
  PrepareOptions o;
  CHECK_THROWS_WITH_AS(prepare_pretraining_data((dir / "empty.txt").string(), vocab, (dir / "out").string(), o),
                       doctest::Contains("empty.txt' has no tokens"), InputError);
  CHECK_THROWS_WITH_AS(prepare_pretraining_data((dir / "nope.txt").string(), vocab, (dir / "out").string(), o),
                       doctest::Contains("nope.txt' cannot be opened"), InputError);
  CHECK_THROWS_WITH_AS(PretrainingDataset::open((dir / "nowhere").string()), doctest::Contains("does not exist"), InputError);
  o.seq_len = 4;
  CHECK_THROWS_WITH_AS(prepare_pretraining_data(ptsim::test::small_corpus_path(), vocab, (dir / "out").string(), o),
                       doctest::Contains("--seq-len 4 is out of range"), InputError);
}

TEST_CASE("shard byte layout is frozen: header fields and record offsets (docs/data-pipeline.md tables)") {
  // A hand-built instance at S = 8, P = 4: record = 16 + 32 + 16 + 16 + 8 = 88 bytes.
  const Vocab v = synthetic_vocab();  // [PAD]=0 [UNK]=1 [CLS]=2 [SEP]=3 [MASK]=4, w0=5 ...
  TrainingInstance inst;
  inst.input_ids = {2, 5, 4, 3, 7, 3};
  inst.segment_ids = {0, 0, 0, 0, 1, 1};
  inst.masked_positions = {2};
  inst.masked_label_ids = {6};
  inst.is_random_next = true;
  const fs::path dir = ptsim::test::fresh_temp_dir("layout");
  const uint64_t checksum = write_shard((dir / "s.bin").string(), {inst}, 0, 1, v, 8, 4, 0);
  const std::string bytes = ptsim::test::read_text(dir / "s.bin");
  REQUIRE(bytes.size() == 64 + 88);
  auto u32 = [&](size_t off) { uint32_t x; std::memcpy(&x, bytes.data() + off, 4); return x; };
  auto u64 = [&](size_t off) { uint64_t x; std::memcpy(&x, bytes.data() + off, 8); return x; };
  auto i32 = [&](size_t off) { int32_t x; std::memcpy(&x, bytes.data() + off, 4); return x; };
  CHECK(bytes.substr(0, 8) == "PTSIMBRT");
  CHECK(u32(8) == 1);     // version
  CHECK(u32(12) == 64);   // header bytes
  CHECK(u32(16) == 8);    // seq_len
  CHECK(u32(20) == 4);    // max_predictions
  CHECK(u64(24) == 1);    // instances
  CHECK(u64(32) == 88);   // record bytes
  CHECK(u64(40) == v.hash());
  CHECK(u64(48) == checksum);
  CHECK(checksum == fnv1a64(bytes.data() + 64, 88));
  CHECK(u32(56) == 125);  // vocab size
  CHECK(u32(60) == 0);    // flags
  const size_t r = 64;
  CHECK(i32(r + 0) == 6);   // length
  CHECK(i32(r + 4) == 1);   // num_masked
  CHECK(i32(r + 8) == 1);   // nsp_label
  CHECK(i32(r + 12) == 0);  // reserved
  const std::vector<int32_t> ids = {2, 5, 4, 3, 7, 3, 0, 0};  // padded with [PAD] = 0
  for (size_t t = 0; t < 8; ++t) CHECK(i32(r + 16 + 4 * t) == ids[t]);
  CHECK(i32(r + 48) == 2);  // masked_positions[0]
  for (size_t k = 1; k < 4; ++k) CHECK(i32(r + 48 + 4 * k) == 0);
  CHECK(i32(r + 64) == 6);  // masked_label_ids[0]
  for (size_t k = 1; k < 4; ++k) CHECK(i32(r + 64 + 4 * k) == -1);
  const std::string seg = bytes.substr(r + 80, 8);
  CHECK(seg == std::string("\0\0\0\0\1\1\0\0", 8));
}
