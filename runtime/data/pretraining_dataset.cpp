// runtime/data/pretraining_dataset.cpp — mmap'd shard reading with verification, and the batch loader.
#include "runtime/data/pretraining_dataset.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "core/error.hpp"
#include "core/input_file.hpp"
#include "core/json_reader.hpp"
#include "runtime/data/rng.hpp"
#include "runtime/data/tokenizer.hpp"

namespace ptsim::runtime::data {

namespace fs = std::filesystem;

struct PretrainingDataset::Shard {
  std::string path;
  void* map = nullptr;
  size_t map_bytes = 0;
  ShardHeader header;
  const unsigned char* payload = nullptr;
  ~Shard() {
    if (map && map != MAP_FAILED) munmap(map, map_bytes);
  }
};

PretrainingDataset::~PretrainingDataset() = default;

namespace {

uint64_t parse_hex(const std::string& s, const std::string& where) {
  try {
    size_t used = 0;
    uint64_t v = std::stoull(s, &used, 16);
    if (used == s.size()) return v;
  } catch (const std::exception&) {
  }
  throw core::InputError(fmt::format("{}: expected a hex hash like 0x0123456789abcdef, got '{}'", where, s));
}

std::string printable_magic(const char* m) {
  std::string out;
  for (int i = 0; i < 8; ++i) {
    auto c = static_cast<unsigned char>(m[i]);
    out += (c >= 32 && c < 127) ? std::string(1, static_cast<char>(c)) : fmt::format("\\x{:02x}", c);
  }
  return out;
}

// The ranges `ptsim data prepare` writes within (docs/data-pipeline.md): seq_len 8..65536, max_predictions
// 1..seq_len, vocab ids fit int32. A manifest outside them is corrupt or hand-made.
constexpr long long kMaxSeqLen = 65536;
constexpr long long kMaxVocabSize = 0x7fffffff;

// A shard's "file" must name a file inside the dataset directory: no path separators, no "." or "..".
std::string shard_file_name(core::JsonReader& sr) {
  const std::string name = sr.require_string("file");
  if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos ||
      name.find('\0') != std::string::npos)
    throw core::InputError(fmt::format("{}: '{}' is not a file name inside the dataset directory (expected e.g. "
                                       "shard_00000.bin)", sr.where("file"), name));
  return name;
}

// Every field of every record, against the layout and the vocab: a record that passes can be copied into
// a batch and indexed with (embedding rows, MLM gather and labels) without a bounds check.
void validate_records(const std::string& path, const unsigned char* payload, uint64_t count, const RecordLayout& layout,
                      int32_t vocab_size) {
  const auto S = static_cast<int32_t>(layout.seq_len);
  const auto P = static_cast<int32_t>(layout.max_predictions);
  std::vector<int32_t> ids(static_cast<size_t>(S)), pos(static_cast<size_t>(P)), lab(static_cast<size_t>(P));
  for (uint64_t i = 0; i < count; ++i) {
    const unsigned char* r = payload + i * layout.bytes();
    auto bad = [&](const std::string& what) {
      throw core::InputError(fmt::format("shard '{}' is corrupt: instance {} {} (re-run 'ptsim data prepare')", path, i, what));
    };
    int32_t meta[4];
    std::memcpy(meta, r, sizeof(meta));
    const int32_t length = meta[0], num_masked = meta[1], nsp = meta[2];
    if (length < 3 || length > S) bad(fmt::format("has length {}, expected 3..seq_len {} ([CLS] A [SEP] at least)", length, S));
    if (num_masked < 0 || num_masked > P || num_masked >= length)
      bad(fmt::format("has num_masked {}, expected 0..{} (max_predictions {}, below length {})", num_masked,
                      std::min(P, length - 1), P, length));
    if (nsp != 0 && nsp != 1) bad(fmt::format("has nsp_label {}, expected 0 or 1", nsp));
    std::memcpy(ids.data(), r + layout.input_ids_offset(), ids.size() * 4);
    std::memcpy(pos.data(), r + layout.masked_positions_offset(), pos.size() * 4);
    std::memcpy(lab.data(), r + layout.masked_labels_offset(), lab.size() * 4);
    for (int32_t t = 0; t < S; ++t)
      if (ids[static_cast<size_t>(t)] < 0 || ids[static_cast<size_t>(t)] >= vocab_size)
        bad(fmt::format("has input_ids[{}] = {}, expected 0..{} (vocab size {})", t, ids[static_cast<size_t>(t)],
                        vocab_size - 1, vocab_size));
    for (int32_t k = 0; k < num_masked; ++k) {
      const int32_t at = pos[static_cast<size_t>(k)], label = lab[static_cast<size_t>(k)];
      if (at < 1 || at >= length)
        bad(fmt::format("has masked_positions[{}] = {}, expected 1..{} (inside the sequence of length {}, after [CLS])",
                        k, at, length - 1, length));
      if (k > 0 && at <= pos[static_cast<size_t>(k - 1)])
        bad(fmt::format("has masked_positions[{}] = {} after {}, expected ascending positions", k, at,
                        pos[static_cast<size_t>(k - 1)]));
      if (label < 0 || label >= vocab_size)
        bad(fmt::format("has masked_label_ids[{}] = {}, expected 0..{} (vocab size {})", k, label, vocab_size - 1, vocab_size));
    }
    const unsigned char* seg = r + layout.segment_ids_offset();
    for (int32_t t = 0; t < S; ++t)
      if (seg[t] > 1) bad(fmt::format("has segment_ids[{}] = {}, expected 0 or 1", t, seg[t]));
  }
}

}  // namespace

std::unique_ptr<PretrainingDataset> PretrainingDataset::open(const std::string& dir, const DatasetOpenOptions& options) {
  if (!fs::is_directory(dir))
    throw core::InputError(fmt::format("dataset directory '{}' does not exist (create it with 'ptsim data prepare')", dir));
  const std::string manifest_path = (fs::path(dir) / "manifest.json").string();
  if (!fs::exists(manifest_path))
    throw core::InputError(fmt::format("'{}' is missing: '{}' is not a prepared dataset (run 'ptsim data prepare')",
                                       manifest_path, dir));
  const core::Json manifest = core::load_json_file(manifest_path);
  core::JsonReader r(manifest, manifest_path);
  std::unique_ptr<PretrainingDataset> ds(new PretrainingDataset());
  ds->dir_ = dir;
  const long long version = r.require_int("format_version");
  if (version != kShardFormatVersion)
    throw core::InputError(fmt::format("{}: format_version {} is not supported (this ptsim reads version {}; re-run "
                                       "'ptsim data prepare')", manifest_path, version, kShardFormatVersion));
  const long long seq_len = r.require_positive_int("seq_len");
  if (seq_len < 8 || seq_len > kMaxSeqLen) r.fail("seq_len", fmt::format("8..{}", kMaxSeqLen));
  const long long max_predictions = r.require_positive_int("max_predictions");
  if (max_predictions > seq_len) r.fail("max_predictions", fmt::format("1..seq_len {}", seq_len));
  ds->layout_.seq_len = static_cast<uint32_t>(seq_len);
  ds->layout_.max_predictions = static_cast<uint32_t>(max_predictions);
  ds->vocab_hash_ = parse_hex(r.require_string("vocab_hash"), r.where("vocab_hash"));
  const long long vocab_size = r.require_positive_int("vocab_size");
  if (vocab_size < 5 || vocab_size > kMaxVocabSize)
    r.fail("vocab_size", fmt::format("5..{} (the five BERT special tokens at least)", kMaxVocabSize));
  ds->vocab_size_ = static_cast<int32_t>(vocab_size);
  const long long manifest_instances = r.require_int("instances");
  if (manifest_instances < 1) r.fail("instances", "a positive count");

  if (!options.vocab_path.empty()) {
    const Vocab vocab = Vocab::load(options.vocab_path);
    if (vocab.hash() != ds->vocab_hash_)
      throw core::InputError(fmt::format(
          "vocab mismatch: dataset '{}' was prepared with a vocab of hash {} ({} tokens) but '{}' has hash {} ({} tokens); "
          "use the vocab the data was prepared with ({}), or re-run 'ptsim data prepare' with this one",
          dir, hash_to_hex(ds->vocab_hash_), ds->vocab_size_, options.vocab_path, hash_to_hex(vocab.hash()), vocab.size(),
          (fs::path(dir) / "vocab.txt").string()));
  }

  const core::Json& shard_list = r.raw("shards");
  if (!shard_list.is_array() || shard_list.empty())
    throw core::InputError(fmt::format("{}: field 'shards' must be a non-empty list", manifest_path));
  const size_t rec = ds->layout_.bytes();
  for (size_t s = 0; s < shard_list.size(); ++s) {
    core::JsonReader sr(shard_list[s], manifest_path, fmt::format("shards[{}]", s));
    auto shard = std::make_unique<Shard>();
    shard->path = (fs::path(dir) / shard_file_name(sr)).string();
    const long long listed = sr.require_int("instances");
    if (listed < 1) sr.fail("instances", "a positive count");
    sr.ignore("payload_checksum");
    const std::string& path = shard->path;

    core::require_regular_file(path, fmt::format("a shard file (listed in {})", manifest_path));
    int fd = ::open(path.c_str(), O_RDONLY);
    if (fd < 0)
      throw core::InputError(fmt::format("shard '{}' (listed in {}) cannot be opened: {}", path, manifest_path, std::strerror(errno)));
    struct stat st {};
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
      ::close(fd);
      throw core::InputError(fmt::format("shard '{}' (listed in {}) is not a regular file", path, manifest_path));
    }
    const auto file_bytes = static_cast<uint64_t>(st.st_size);
    if (file_bytes < kShardHeaderBytes) {
      ::close(fd);
      throw core::InputError(fmt::format("shard '{}' is truncated: {} bytes, shorter than the {}-byte header", path,
                                         file_bytes, kShardHeaderBytes));
    }
    shard->map_bytes = file_bytes;
    shard->map = mmap(nullptr, file_bytes, PROT_READ, MAP_PRIVATE, fd, 0);
    ::close(fd);
    if (shard->map == MAP_FAILED)
      throw core::InputError(fmt::format("shard '{}' cannot be memory-mapped: {}", path, std::strerror(errno)));
    std::memcpy(&shard->header, shard->map, sizeof(ShardHeader));
    const ShardHeader& h = shard->header;
    if (std::memcmp(h.magic, kShardMagic, 8) != 0)
      throw core::InputError(fmt::format("shard '{}' is corrupt or not a ptsim shard: bad magic, expected 'PTSIMBRT', found '{}'",
                                         path, printable_magic(h.magic)));
    if (h.version != kShardFormatVersion)
      throw core::InputError(fmt::format("shard '{}' has format version {}, expected {} (re-run 'ptsim data prepare')", path,
                                         h.version, kShardFormatVersion));
    if (h.header_bytes != kShardHeaderBytes || h.seq_len != ds->layout_.seq_len ||
        h.max_predictions != ds->layout_.max_predictions || h.record_bytes != rec)
      throw core::InputError(fmt::format(
          "shard '{}' does not match {}: header says seq_len {}, max_predictions {}, record {} bytes; manifest says {}, {}, {}",
          path, manifest_path, h.seq_len, h.max_predictions, h.record_bytes, ds->layout_.seq_len,
          ds->layout_.max_predictions, rec));
    if (static_cast<long long>(h.instance_count) != listed)
      throw core::InputError(fmt::format("shard '{}' holds {} instances but {} lists {}", path, h.instance_count,
                                         manifest_path, listed));
    // Compare counts, not byte products: a crafted instance_count makes 64 + N·R wrap to the file size.
    const uint64_t fits = (file_bytes - kShardHeaderBytes) / rec;
    if (h.instance_count > fits)
      throw core::InputError(fmt::format("shard '{}' is truncated: header says {} instances of {} bytes, the file has "
                                         "room for {} ({} bytes)", path, h.instance_count, rec, fits, file_bytes));
    const uint64_t expected_bytes = kShardHeaderBytes + h.instance_count * rec;
    if (file_bytes < expected_bytes)
      throw core::InputError(fmt::format("shard '{}' is truncated: header says {} instances = {} bytes, file has {} bytes",
                                         path, h.instance_count, expected_bytes, file_bytes));
    if (file_bytes > expected_bytes)
      throw core::InputError(fmt::format("shard '{}' is corrupt: header says {} instances = {} bytes, file has {} bytes "
                                         "(trailing data)", path, h.instance_count, expected_bytes, file_bytes));
    if (h.vocab_hash != ds->vocab_hash_)
      throw core::InputError(fmt::format("vocab mismatch: shard '{}' was built with vocab hash {}, but {} says {}", path,
                                         hash_to_hex(h.vocab_hash), manifest_path, hash_to_hex(ds->vocab_hash_)));
    if (h.vocab_size != static_cast<uint32_t>(ds->vocab_size_))
      throw core::InputError(fmt::format("shard '{}' was built with a vocab of {} tokens, but {} says vocab_size {}", path,
                                         h.vocab_size, manifest_path, ds->vocab_size_));
    shard->payload = static_cast<const unsigned char*>(shard->map) + kShardHeaderBytes;
    if (options.verify_checksum) {
      const uint64_t found = fnv1a64(shard->payload, h.instance_count * rec);
      if (found != h.payload_checksum)
        throw core::InputError(fmt::format("shard '{}' is corrupt: payload checksum mismatch, header expects {}, data hashes "
                                           "to {} (re-run 'ptsim data prepare' or restore the file)",
                                           path, hash_to_hex(h.payload_checksum), hash_to_hex(found)));
    }
    // Always, checksum or not: a checksum proves the bytes are the ones written, not that the writer was ptsim.
    validate_records(path, shard->payload, h.instance_count, ds->layout_, ds->vocab_size_);
    if (ds->num_instances_ > UINT64_MAX - h.instance_count)
      throw core::InputError(fmt::format("{}: the shards hold more than 2^64 instances", manifest_path));
    ds->first_index_.push_back(ds->num_instances_);
    ds->num_instances_ += h.instance_count;
    ds->shards_.push_back(std::move(shard));
  }
  if (static_cast<long long>(ds->num_instances_) != manifest_instances)
    throw core::InputError(fmt::format("{}: 'instances' is {} but the shards hold {}", manifest_path, manifest_instances,
                                       ds->num_instances_));
  if (ds->num_instances_ == 0) throw core::InputError(fmt::format("dataset '{}' has no instances", dir));
  return ds;
}

std::string PretrainingDataset::vocab_path() const { return (fs::path(dir_) / "vocab.txt").string(); }

std::vector<std::string> PretrainingDataset::shard_paths() const {
  std::vector<std::string> out;
  for (const auto& s : shards_) out.push_back(s->path);
  return out;
}

InstanceView PretrainingDataset::instance(uint64_t index) const {
  if (index >= num_instances_)
    throw std::out_of_range(fmt::format("instance {} out of range (dataset has {})", index, num_instances_));
  size_t s = static_cast<size_t>(std::upper_bound(first_index_.begin(), first_index_.end(), index) - first_index_.begin()) - 1;
  const unsigned char* r = shards_[s]->payload + (index - first_index_[s]) * layout_.bytes();
  InstanceView v;
  int32_t meta[4];
  std::memcpy(meta, r, sizeof(meta));
  v.length = meta[0];
  v.num_masked = meta[1];
  v.nsp_label = meta[2];
  v.input_ids = reinterpret_cast<const int32_t*>(r + layout_.input_ids_offset());
  v.masked_positions = reinterpret_cast<const int32_t*>(r + layout_.masked_positions_offset());
  v.masked_label_ids = reinterpret_cast<const int32_t*>(r + layout_.masked_labels_offset());
  v.segment_ids = r + layout_.segment_ids_offset();
  return v;
}

// ------------------------------------------------------------------------------------------ permutation

uint64_t permute_index(uint64_t index, uint64_t n, uint64_t key) {
  if (n <= 1) return index;
  // Feistel network over 2*half bits, the smallest even width with 2^bits >= n; cycle-walk until
  // the value lands in [0, n) (expected < 4 rounds since 2^bits < 4n). A bijection of [0, 2^bits)
  // restricted by cycle walking is a bijection of [0, n).
  int bits = 64 - std::countl_zero(n - 1);
  if (bits % 2) ++bits;
  const int half = bits / 2;
  const uint64_t mask = (half >= 64) ? ~0ULL : ((1ULL << half) - 1);
  uint64_t round_keys[4];
  uint64_t sm = key;
  for (auto& k : round_keys) k = splitmix64(sm);
  uint64_t x = index;
  do {
    uint64_t left = x >> half, right = x & mask;
    for (uint64_t k : round_keys) {
      uint64_t f = right ^ k;
      f = splitmix64(f) & mask;
      uint64_t next_right = left ^ f;
      left = right;
      right = next_right;
    }
    x = (left << half) | right;
  } while (x >= n);
  return x;
}

// ------------------------------------------------------------------------------------------ BatchLoader

BatchLoader::BatchLoader(const PretrainingDataset& dataset, const BatchLoaderOptions& options)
    : dataset_(&dataset), options_(options) {
  if (options.world_size < 1 || options.rank < 0 || options.rank >= options.world_size)
    throw core::InputError(fmt::format("data loader: rank {} of world size {} is invalid (need 0 <= rank < world_size)",
                                       options.rank, options.world_size));
  per_rank_ = dataset.num_instances() / static_cast<uint64_t>(options.world_size);
  if (per_rank_ == 0)
    throw core::InputError(fmt::format("dataset '{}' has {} instances, fewer than the {} ranks that share it",
                                       dataset.dir(), dataset.num_instances(), options.world_size));
}

uint64_t BatchLoader::instance_at(uint64_t epoch, uint64_t offset) const {
  const uint64_t slot = offset * static_cast<uint64_t>(options_.world_size) + static_cast<uint64_t>(options_.rank);
  if (!options_.shuffle) return slot;
  return permute_index(slot, dataset_->num_instances(), options_.seed + epoch);
}

void BatchLoader::seek(const LoaderCursor& cursor) {
  if (cursor.offset >= per_rank_)
    throw core::InputError(fmt::format("data loader: resume offset {} is past this rank's {} instances per epoch "
                                       "(was the checkpoint made with another dataset or world size?)",
                                       cursor.offset, per_rank_));
  cursor_ = cursor;
}

void BatchLoader::next_batch(int32_t batch_size, PretrainingBatch& b) {
  if (batch_size < 1) throw core::InputError(fmt::format("data loader: batch size {} must be >= 1", batch_size));
  const int32_t S = dataset_->seq_len();
  const int32_t P = dataset_->max_predictions();
  const auto B = static_cast<size_t>(batch_size);
  b.batch_size = batch_size;
  b.seq_len = S;
  b.max_predictions = P;
  b.input_ids.assign(B * S, 0);
  b.token_type_ids.assign(B * S, 0);
  b.attention_mask.assign(B * S, 0);
  b.masked_positions.assign(B * P, 0);
  b.masked_labels.assign(B * P, -1);
  b.nsp_labels.assign(B, 0);
  b.instance_indices.assign(B, 0);
  b.num_masked = 0;
  for (size_t row = 0; row < B; ++row) {
    const uint64_t index = instance_at(cursor_.epoch, cursor_.offset);
    if (++cursor_.offset == per_rank_) {
      cursor_.offset = 0;
      ++cursor_.epoch;
    }
    const InstanceView v = dataset_->instance(index);
    b.instance_indices[row] = index;
    b.nsp_labels[row] = v.nsp_label;
    const size_t base = row * static_cast<size_t>(S);
    std::memcpy(&b.input_ids[base], v.input_ids, sizeof(int32_t) * static_cast<size_t>(S));
    for (int32_t t = 0; t < S; ++t) {
      b.token_type_ids[base + t] = v.segment_ids[t];
      b.attention_mask[base + t] = t < v.length ? 1 : 0;
    }
    const size_t pbase = row * static_cast<size_t>(P);
    for (int32_t k = 0; k < P; ++k) {
      b.masked_positions[pbase + k] = static_cast<int32_t>(base) + (k < v.num_masked ? v.masked_positions[k] : 0);
      b.masked_labels[pbase + k] = k < v.num_masked ? v.masked_label_ids[k] : -1;
    }
    b.num_masked += v.num_masked;
  }
}

}  // namespace ptsim::runtime::data
