// runtime/data/pretraining_data.cpp — create_pretraining_data.py in C++, plus the shard writer.
// Function names and control flow follow the Python script so the two can be read side by side.
#include "runtime/data/pretraining_data.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <stdio.h>  // renameat2 (glibc >= 2.28)
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/atomic_file.hpp"
#include "core/input_file.hpp"
#include "core/error.hpp"
#include "core/machine_memory.hpp"
#include "core/mlm_defaults.hpp"
#include "runtime/data/shard_format.hpp"

namespace ptsim::runtime::data {

namespace fs = std::filesystem;

int32_t default_max_predictions(int32_t seq_len, double masked_lm_prob) {
  return static_cast<int32_t>(core::default_max_predictions(seq_len, masked_lm_prob));  // shared with predict
}

std::vector<Document> read_documents(const std::string& corpus_path, const FullTokenizer& tokenizer) {
  core::require_regular_file(corpus_path, "a corpus file (UTF-8 text, one sentence per line)");
  std::ifstream in(corpus_path, std::ios::binary);
  if (!in) throw core::InputError(fmt::format("corpus file '{}' cannot be opened (does it exist?)", corpus_path));
  std::vector<Document> docs(1);
  std::string line;
  int64_t lines = 0;
  while (std::getline(in, line)) {
    ++lines;
    // line.strip(): a line of only whitespace is a document boundary.
    if (line.find_first_not_of(" \t\r\n\f\v") == std::string::npos) {
      docs.emplace_back();
      continue;
    }
    auto ids = tokenizer.encode(line);
    if (!ids.empty()) docs.back().push_back(std::move(ids));
  }
  std::erase_if(docs, [](const Document& d) { return d.empty(); });
  if (docs.empty())
    throw core::InputError(fmt::format("corpus '{}' has no tokens ({} lines read; expected UTF-8 text, one sentence "
                                       "per line, a blank line between documents)", corpus_path, lines));
  return docs;
}

namespace {

void check_options(const PrepareOptions& o, int32_t max_predictions) {
  auto bad = [](const std::string& what) { throw core::InputError("ptsim data prepare: " + what); };
  if (o.seq_len < 8 || o.seq_len > 65536) bad(fmt::format("--seq-len {} is out of range (expected 8..65536; BERT uses 128 and 512)", o.seq_len));
  if (max_predictions < 1 || max_predictions > o.seq_len)
    bad(fmt::format("--max-predictions {} is out of range (expected 1..seq-len {})", max_predictions, o.seq_len));
  if (o.dup_factor < 1) bad(fmt::format("--dup-factor {} must be >= 1", o.dup_factor));
  if (!(o.short_seq_prob >= 0 && o.short_seq_prob <= 1)) bad(fmt::format("--short-seq-prob {} must be in [0, 1]", o.short_seq_prob));
  if (!(o.masked_lm_prob > 0 && o.masked_lm_prob < 1)) bad(fmt::format("--masked-lm-prob {} must be in (0, 1)", o.masked_lm_prob));
  if (o.shard_size < 1) bad(fmt::format("--shard-size {} must be >= 1", o.shard_size));
}

// truncate_seq_pair: trim the longer side, from the front or back at random, until they fit. The random
// choices are BERT's one-token-at-a-time loop's; the cut fronts are erased once at the end, since erasing
// token by token was quadratic (a 500,000-token line took 44 s to prepare, a 100 MB line hours).
void truncate_seq_pair(std::vector<int32_t>& a, std::vector<int32_t>& b, size_t max_num_tokens, DataRng& rng) {
  size_t a_front = 0, a_back = a.size(), b_front = 0, b_back = b.size();
  while ((a_back - a_front) + (b_back - b_front) > max_num_tokens) {
    const bool trim_a = a_back - a_front > b_back - b_front;  // ties trim b, as BERT's loop
    if (rng.random() < 0.5)
      ++(trim_a ? a_front : b_front);
    else
      --(trim_a ? a_back : b_back);
  }
  a.resize(a_back);
  a.erase(a.begin(), a.begin() + static_cast<std::ptrdiff_t>(a_front));
  b.resize(b_back);
  b.erase(b.begin(), b.begin() + static_cast<std::ptrdiff_t>(b_front));
}

void create_instances_from_document(const std::vector<Document>& all_documents, size_t document_index,
                                    const Vocab& vocab, const PrepareOptions& options, DataRng& rng,
                                    std::vector<TrainingInstance>& instances) {
  const Document& document = all_documents[document_index];
  // Account for [CLS], [SEP], [SEP].
  const int64_t max_num_tokens = options.seq_len - 3;
  // Mostly fill the whole sequence; sometimes (short_seq_prob) use a shorter one to reduce the
  // pretrain/finetune length mismatch.
  int64_t target_seq_length = max_num_tokens;
  if (rng.random() < options.short_seq_prob) target_seq_length = rng.randint(2, max_num_tokens);

  std::vector<const std::vector<int32_t>*> current_chunk;
  int64_t current_length = 0;
  int64_t i = 0;
  const auto doc_len = static_cast<int64_t>(document.size());
  while (i < doc_len) {
    const auto& segment = document[static_cast<size_t>(i)];
    current_chunk.push_back(&segment);
    current_length += static_cast<int64_t>(segment.size());
    if (i == doc_len - 1 || current_length >= target_seq_length) {
      if (!current_chunk.empty()) {
        // a_end: how many chunk segments go to A.
        int64_t a_end = 1;
        if (current_chunk.size() >= 2) a_end = rng.randint(1, static_cast<int64_t>(current_chunk.size()) - 1);
        std::vector<int32_t> tokens_a;
        for (int64_t j = 0; j < a_end; ++j) tokens_a.insert(tokens_a.end(), current_chunk[j]->begin(), current_chunk[j]->end());

        std::vector<int32_t> tokens_b;
        bool is_random_next = false;
        if (current_chunk.size() == 1 || rng.random() < 0.5) {
          is_random_next = true;
          const int64_t target_b_length = target_seq_length - static_cast<int64_t>(tokens_a.size());
          // Ten tries at a different document; with one document the script falls back to itself.
          size_t random_document_index = 0;
          for (int t = 0; t < 10; ++t) {
            random_document_index = static_cast<size_t>(rng.randint(0, static_cast<int64_t>(all_documents.size()) - 1));
            if (random_document_index != document_index) break;
          }
          const Document& random_document = all_documents[random_document_index];
          const int64_t random_start = rng.randint(0, static_cast<int64_t>(random_document.size()) - 1);
          for (auto j = static_cast<size_t>(random_start); j < random_document.size(); ++j) {
            tokens_b.insert(tokens_b.end(), random_document[j].begin(), random_document[j].end());
            if (static_cast<int64_t>(tokens_b.size()) >= target_b_length) break;
          }
          // The segments of this chunk not used for A are "put back" for the next instance.
          const int64_t num_unused_segments = static_cast<int64_t>(current_chunk.size()) - a_end;
          i -= num_unused_segments;
        } else {
          for (size_t j = static_cast<size_t>(a_end); j < current_chunk.size(); ++j)
            tokens_b.insert(tokens_b.end(), current_chunk[j]->begin(), current_chunk[j]->end());
        }
        truncate_seq_pair(tokens_a, tokens_b, static_cast<size_t>(max_num_tokens), rng);

        TrainingInstance inst;
        inst.is_random_next = is_random_next;
        inst.input_ids.reserve(tokens_a.size() + tokens_b.size() + 3);
        inst.input_ids.push_back(vocab.cls_id());
        inst.input_ids.insert(inst.input_ids.end(), tokens_a.begin(), tokens_a.end());
        inst.input_ids.push_back(vocab.sep_id());
        inst.segment_ids.assign(inst.input_ids.size(), 0);
        inst.input_ids.insert(inst.input_ids.end(), tokens_b.begin(), tokens_b.end());
        inst.input_ids.push_back(vocab.sep_id());
        inst.segment_ids.resize(inst.input_ids.size(), 1);
        create_masked_lm_predictions(inst, vocab, options, rng);
        instances.push_back(std::move(inst));
      }
      current_chunk.clear();
      current_length = 0;
    }
    ++i;
  }
}

}  // namespace

namespace {
bool is_special(const Vocab& v, int32_t id) {
  return id == v.pad_id() || id == v.unk_id() || id == v.cls_id() || id == v.sep_id() || id == v.mask_id();
}
}  // namespace

void create_masked_lm_predictions(TrainingInstance& instance, const Vocab& vocab, const PrepareOptions& options,
                                  DataRng& rng) {
  const int32_t max_predictions =
      options.max_predictions > 0 ? options.max_predictions : default_max_predictions(options.seq_len, options.masked_lm_prob);
  auto& tokens = instance.input_ids;
  // Candidate groups: one position each, or with whole-word masking a word's first piece plus its "##" pieces.
  std::vector<std::vector<int32_t>> cand_indexes;
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i] == vocab.cls_id() || tokens[i] == vocab.sep_id()) continue;
    if (options.whole_word_mask && !cand_indexes.empty() && vocab.token(tokens[i]).rfind("##", 0) == 0)
      cand_indexes.back().push_back(static_cast<int32_t>(i));
    else
      cand_indexes.push_back({static_cast<int32_t>(i)});
  }
  rng.shuffle(cand_indexes);
  const std::vector<int32_t> original = tokens;
  const auto num_to_predict = static_cast<size_t>(std::min<int64_t>(
      max_predictions,
      std::max<int64_t>(1, static_cast<int64_t>(std::nearbyint(static_cast<double>(tokens.size()) * options.masked_lm_prob)))));
  // (nearbyint rounds half to even, as Python's round() in the script does.)
  std::vector<char> covered(tokens.size(), 0);
  std::vector<std::pair<int32_t, int32_t>> masked;  // (position, original id)
  for (const auto& index_set : cand_indexes) {
    if (masked.size() >= num_to_predict) break;
    // Never exceed the budget with a whole word: skip a group that would not fit.
    if (masked.size() + index_set.size() > num_to_predict) continue;
    bool any_covered = false;
    for (int32_t index : index_set) any_covered = any_covered || covered[static_cast<size_t>(index)];
    if (any_covered) continue;
    for (int32_t index : index_set) {
      covered[static_cast<size_t>(index)] = 1;
      int32_t masked_token = 0;
      if (rng.random() < 0.8) {
        masked_token = vocab.mask_id();  // 80%: [MASK]
      } else if (rng.random() < 0.5) {
        masked_token = original[static_cast<size_t>(index)];  // 10%: keep
      } else {
        // 10%: a random vocab entry. Deliberate deviation: Google's script may draw [CLS]/[SEP]/[PAD]/
        // [MASK] here; ptsim redraws those, so a visible sequence always has one [CLS] and two [SEP].
        do {
          masked_token = static_cast<int32_t>(rng.randint(0, vocab.size() - 1));
        } while (is_special(vocab, masked_token) && vocab.size() > 5);
      }
      tokens[static_cast<size_t>(index)] = masked_token;
      masked.emplace_back(index, original[static_cast<size_t>(index)]);
    }
  }
  std::sort(masked.begin(), masked.end());
  instance.masked_positions.clear();
  instance.masked_label_ids.clear();
  for (const auto& [pos, label] : masked) {
    instance.masked_positions.push_back(pos);
    instance.masked_label_ids.push_back(label);
  }
}

std::vector<TrainingInstance> create_training_instances(std::vector<Document> documents, const Vocab& vocab,
                                                        const PrepareOptions& options) {
  const int32_t max_predictions =
      options.max_predictions > 0 ? options.max_predictions : default_max_predictions(options.seq_len, options.masked_lm_prob);
  check_options(options, max_predictions);
  if (documents.empty()) throw core::InputError("ptsim data prepare: no documents to make instances from");
  DataRng rng(options.seed);
  rng.shuffle(documents);
  std::vector<TrainingInstance> instances;
  for (int32_t d = 0; d < options.dup_factor; ++d)
    for (size_t doc = 0; doc < documents.size(); ++doc)
      create_instances_from_document(documents, doc, vocab, options, rng, instances);
  rng.shuffle(instances);
  return instances;
}

uint64_t write_shard(const std::string& path, const std::vector<TrainingInstance>& instances, size_t begin, size_t end,
                     const Vocab& vocab, int32_t seq_len, int32_t max_predictions, uint32_t flags) {
  const RecordLayout layout{static_cast<uint32_t>(seq_len), static_cast<uint32_t>(max_predictions)};
  const size_t rec = layout.bytes();
  std::vector<unsigned char> payload((end - begin) * rec, 0);
  for (size_t n = begin; n < end; ++n) {
    const TrainingInstance& inst = instances[n];
    if (inst.input_ids.size() > static_cast<size_t>(seq_len) || inst.masked_positions.size() > static_cast<size_t>(max_predictions))
      throw std::logic_error(fmt::format("instance {} does not fit seq_len {} / max_predictions {}", n, seq_len, max_predictions));
    unsigned char* r = payload.data() + (n - begin) * rec;
    const int32_t meta[4] = {static_cast<int32_t>(inst.input_ids.size()), static_cast<int32_t>(inst.masked_positions.size()),
                             inst.is_random_next ? 1 : 0, 0};
    std::memcpy(r, meta, sizeof(meta));
    std::vector<int32_t> ids(static_cast<size_t>(seq_len), vocab.pad_id());
    std::copy(inst.input_ids.begin(), inst.input_ids.end(), ids.begin());
    std::memcpy(r + layout.input_ids_offset(), ids.data(), ids.size() * 4);
    std::vector<int32_t> pos(static_cast<size_t>(max_predictions), 0);
    std::vector<int32_t> lab(static_cast<size_t>(max_predictions), -1);
    std::copy(inst.masked_positions.begin(), inst.masked_positions.end(), pos.begin());
    std::copy(inst.masked_label_ids.begin(), inst.masked_label_ids.end(), lab.begin());
    std::memcpy(r + layout.masked_positions_offset(), pos.data(), pos.size() * 4);
    std::memcpy(r + layout.masked_labels_offset(), lab.data(), lab.size() * 4);
    std::memcpy(r + layout.segment_ids_offset(), inst.segment_ids.data(), inst.segment_ids.size());
  }
  ShardHeader h;
  h.seq_len = static_cast<uint32_t>(seq_len);
  h.max_predictions = static_cast<uint32_t>(max_predictions);
  h.instance_count = end - begin;
  h.record_bytes = rec;
  h.vocab_hash = vocab.hash();
  h.payload_checksum = fnv1a64(payload.data(), payload.size());
  h.vocab_size = static_cast<uint32_t>(vocab.size());
  h.flags = flags;
  core::AtomicFileWriter out(path, "shard");
  out.write(std::as_bytes(std::span<const ShardHeader>(&h, 1)));
  out.write(std::as_bytes(std::span<const unsigned char>(payload.data(), payload.size())));
  out.commit();
  return h.payload_checksum;
}

namespace {

// The output directory as one absolute path without a trailing "/" (so its parent and name are real), links
// resolved (a link to a dataset directory stays a link; the directory it names is replaced).
fs::path output_directory(const std::string& out_dir) {
  std::error_code ec;
  fs::path p = fs::weakly_canonical(fs::absolute(out_dir), ec);
  if (ec) p = fs::absolute(out_dir);
  p = p.lexically_normal();
  if (!p.has_filename()) p = p.parent_path();
  return p;
}

bool is_dataset_entry(const std::string& name) {
  return name == "manifest.json" || name == "vocab.txt" ||
         (name.rfind("shard_", 0) == 0 && name.size() > 10 && name.substr(name.size() - 4) == ".bin");
}

// --out may name a new or empty directory, or an earlier dataset: that one is replaced as a whole once the
// new one is complete. Anything else in it is the user's and would be lost: refuse.
void check_replaceable_output(const fs::path& out, const std::string& out_flag) {
  std::error_code ec;
  const fs::file_status st = fs::status(out, ec);
  if (!fs::exists(st)) return;
  if (!fs::is_directory(st))
    throw core::InputError(fmt::format("ptsim data prepare --out {}: exists and is not a directory", out_flag));
  for (const auto& entry : fs::directory_iterator(out, ec)) {
    const std::string name = entry.path().filename().string();
    if (!is_dataset_entry(name) || !entry.is_regular_file())
      throw core::InputError(fmt::format("ptsim data prepare --out {}: holds '{}', which is not part of a prepared "
                                         "dataset; the directory is replaced as a whole, so move it away or give "
                                         "another --out",
                                         out_flag, name));
  }
  if (ec) throw core::InputError(fmt::format("ptsim data prepare --out {}: cannot list it: {}", out_flag, ec.message()));
}

// The staging directory, removed unless publish() moved it into place.
class StagingDirectory {
 public:
  explicit StagingDirectory(const fs::path& out) : out_(out), path_(core::atomic_temp_path(out.string())) {
    std::error_code ec;
    fs::create_directories(out.parent_path(), ec);
    fs::remove_all(path_, ec);  // a leftover of this very process (same pid) is ours to clear
    if (!fs::create_directory(path_, ec) || ec)
      throw core::InputError(fmt::format("cannot create the staging directory '{}' beside the output: {}", path_.string(),
                                         ec.message()));
  }
  ~StagingDirectory() {
    std::error_code ec;
    if (!published_) fs::remove_all(path_, ec);  // best effort: the old output is untouched
  }
  StagingDirectory(const StagingDirectory&) = delete;
  StagingDirectory& operator=(const StagingDirectory&) = delete;
  const fs::path& path() const { return path_; }

  // Swap the complete new directory with the old one in one step (renameat2 RENAME_EXCHANGE), or rename
  // it into place when there is no old one; then delete the old contents and fsync the parent.
  void publish() {
    core::fsync_directory(path_.string());
    std::error_code ec;
    const bool replacing = fs::exists(out_, ec);
    if (replacing) {
      if (::renameat2(AT_FDCWD, path_.c_str(), AT_FDCWD, out_.c_str(), RENAME_EXCHANGE) != 0) {
        // File systems without RENAME_EXCHANGE: move the old one aside first (a crash in between leaves
        // the complete new dataset at the staging path and the old one at *.old.<pid>).
        const fs::path old = out_.string() + fmt::format(".old.{}", static_cast<long>(::getpid()));
        fs::remove_all(old, ec);
        if (::rename(out_.c_str(), old.c_str()) != 0)
          throw core::IoError(fmt::format("cannot move the old dataset '{}' aside to '{}': {}", out_.string(),
                                          old.string(), std::strerror(errno)));
        if (::rename(path_.c_str(), out_.c_str()) != 0) {
          const int err = errno;
          (void)::rename(old.c_str(), out_.c_str());  // put the old one back
          throw core::IoError(fmt::format("cannot move the new dataset '{}' into place at '{}': {}", path_.string(),
                                          out_.string(), std::strerror(err)));
        }
        fs::remove_all(old, ec);
        published_ = true;
      } else {
        published_ = true;
        fs::remove_all(path_, ec);  // now holds the old dataset
      }
    } else {
      if (::rename(path_.c_str(), out_.c_str()) != 0)
        throw core::IoError(fmt::format("cannot rename the new dataset '{}' to '{}': {}", path_.string(), out_.string(),
                                        std::strerror(errno)));
      published_ = true;
    }
    core::fsync_directory(out_.parent_path().string());
  }

 private:
  fs::path out_;
  fs::path path_;
  bool published_ = false;
};

std::string read_whole_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw core::InputError(fmt::format("cannot read '{}'", path));
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// dup_factor passes over the corpus each make at least tokens / (seq_len - 3) instances (an instance holds at
// most seq_len - 3 corpus tokens beside [CLS] and two [SEP]), each at least one shard record in memory.
void check_instance_memory(const PrepareStats& stats, const PrepareOptions& options) {
  const double per_pass = std::ceil(static_cast<double>(stats.tokens) / static_cast<double>(options.seq_len - 3));
  const double instances = per_pass * static_cast<double>(options.dup_factor);
  const double record = static_cast<double>(
      RecordLayout{static_cast<uint32_t>(options.seq_len), static_cast<uint32_t>(options.max_predictions)}.bytes());
  core::require_available_memory(
      instances * record,
      fmt::format("ptsim data prepare: --dup-factor {} over {} tokens at --seq-len {} (at least {:.0f} instances of {:.0f} "
                  "bytes)",
                  options.dup_factor, stats.tokens, options.seq_len, instances, record),
      "lower --dup-factor (BERT recipes use 5 to 10) or split the corpus");
}

}  // namespace

PrepareStats prepare_pretraining_data(const std::string& corpus_path, const std::string& vocab_path,
                                      const std::string& out_dir, const PrepareOptions& options_in) {
  PrepareOptions options = options_in;
  if (options.max_predictions <= 0) options.max_predictions = default_max_predictions(options.seq_len, options.masked_lm_prob);
  check_options(options, options.max_predictions);
  const Vocab vocab = Vocab::load(vocab_path);
  const FullTokenizer tokenizer(vocab, options.do_lower_case);
  const fs::path out = output_directory(out_dir);
  check_replaceable_output(out, out_dir);
  std::vector<Document> documents = read_documents(corpus_path, tokenizer);

  PrepareStats stats;
  stats.documents = static_cast<int64_t>(documents.size());
  for (const auto& d : documents) {
    stats.sentences += static_cast<int64_t>(d.size());
    for (const auto& s : d) stats.tokens += static_cast<int64_t>(s.size());
  }
  check_instance_memory(stats, options);
  const std::vector<TrainingInstance> instances = create_training_instances(std::move(documents), vocab, options);
  stats.instances = static_cast<int64_t>(instances.size());
  for (const auto& inst : instances) {
    stats.masked_tokens += static_cast<int64_t>(inst.masked_positions.size());
    stats.random_next += inst.is_random_next ? 1 : 0;
  }

  // Built in a sibling staging directory and swapped in when complete: an earlier dataset at --out stays
  // usable until then, and the directory never mixes two datasets.
  StagingDirectory staging(out);
  const uint32_t flags = options.whole_word_mask ? kShardFlagWholeWordMask : 0;
  nlohmann::json shards = nlohmann::json::array();
  const auto shard_size = static_cast<size_t>(options.shard_size);
  for (size_t begin = 0, s = 0; begin < instances.size(); begin += shard_size, ++s) {
    const size_t end = std::min(instances.size(), begin + shard_size);
    const std::string name = fmt::format("shard_{:05d}.bin", s);
    const uint64_t checksum =
        write_shard((staging.path() / name).string(), instances, begin, end, vocab, options.seq_len, options.max_predictions, flags);
    shards.push_back({{"file", name}, {"instances", end - begin}, {"payload_checksum", hash_to_hex(checksum)}});
    ++stats.shards;
  }
  // Self-contained: the exact vocab bytes travel with the shards.
  // (The bytes Vocab::load hashed are re-read here; a vocab edited in between is caught by the hash check
  // every reader makes against the manifest.)
  core::write_file_atomic((staging.path() / "vocab.txt").string(), read_whole_file(vocab_path), "vocab copy");

  nlohmann::json m;
  m["format"] = "ptsim-bert-pretraining";
  m["format_version"] = kShardFormatVersion;
  m["seq_len"] = options.seq_len;
  m["max_predictions"] = options.max_predictions;
  m["record_bytes"] = RecordLayout{static_cast<uint32_t>(options.seq_len), static_cast<uint32_t>(options.max_predictions)}.bytes();
  m["instances"] = stats.instances;
  m["vocab_file"] = "vocab.txt";
  m["vocab_source"] = fs::absolute(vocab_path).lexically_normal().string();
  m["vocab_hash"] = hash_to_hex(vocab.hash());
  m["vocab_size"] = vocab.size();
  m["corpus"] = fs::absolute(corpus_path).lexically_normal().string();
  m["documents"] = stats.documents;
  m["sentences"] = stats.sentences;
  m["tokens"] = stats.tokens;
  m["masked_tokens"] = stats.masked_tokens;
  m["random_next"] = stats.random_next;
  m["options"] = {{"dup_factor", options.dup_factor},        {"short_seq_prob", options.short_seq_prob},
                  {"masked_lm_prob", options.masked_lm_prob}, {"seed", options.seed},
                  {"whole_word_mask", options.whole_word_mask}, {"do_lower_case", options.do_lower_case},
                  {"shard_size", options.shard_size}};
  m["shards"] = shards;
  core::write_file_atomic((staging.path() / "manifest.json").string(), m.dump(2) + "\n", "manifest");
  staging.publish();
  return stats;
}

}  // namespace ptsim::runtime::data
