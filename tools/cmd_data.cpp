// tools/cmd_data.cpp — `ptsim data vocab|prepare|inspect`: the BERT data pipeline from the command line.
// vocab: learn a WordPiece vocab.txt from a corpus; prepare: corpus -> shards + manifest.json;
// inspect: print a prepared dataset's manifest and decode instances as tokens.
// The work lives in runtime/data/; this file only parses flags and prints.
#include <fmt/format.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/atomic_file.hpp"  // defines: writable_target
#include "core/json_reader.hpp"
#include "runtime/data/pretraining_data.hpp"
#include "runtime/data/pretraining_dataset.hpp"
#include "runtime/data/tokenizer.hpp"
#include "runtime/data/vocab_trainer.hpp"
#include "tools/cli_support.hpp"
#include "tools/commands.hpp"

namespace ptsim::tools {

namespace data = ptsim::runtime::data;

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::string join_tokens(const data::Vocab& vocab, const int32_t* ids, int32_t n) {
  std::string out;
  for (int32_t i = 0; i < n; ++i) {
    if (i) out += ' ';
    out += (ids[i] >= 0 && ids[i] < vocab.size()) ? vocab.token(ids[i]) : fmt::format("<id {}>", ids[i]);
  }
  return out;
}

int run_inspect(const std::string& dir, const std::string& vocab_flag, int64_t first, int64_t count, bool no_verify) {
  data::DatasetOpenOptions open_options;
  open_options.verify_checksum = !no_verify;
  open_options.vocab_path = vocab_flag;
  auto ds = data::PretrainingDataset::open(dir, open_options);
  const std::string vocab_path = vocab_flag.empty() ? ds->vocab_path() : vocab_flag;
  const data::Vocab vocab = data::Vocab::load(vocab_path);
  if (vocab.hash() != ds->vocab_hash())
    throw core::InputError(fmt::format("vocab mismatch: '{}' has hash {} but the dataset '{}' was prepared with {}",
                                       vocab_path, data::hash_to_hex(vocab.hash()), dir, data::hash_to_hex(ds->vocab_hash())));
  const core::Json manifest = core::load_json_file((std::filesystem::path(dir) / "manifest.json").string());
  fmt::print("dataset {}\n", dir);
  fmt::print("  instances        {}\n", ds->num_instances());
  fmt::print("  seq_len          {}\n", ds->seq_len());
  fmt::print("  max_predictions  {}\n", ds->max_predictions());
  fmt::print("  vocab            {} ({} tokens, hash {})\n", vocab_path, vocab.size(), data::hash_to_hex(vocab.hash()));
  if (static_cast<uint64_t>(first) >= ds->num_instances())  // printed nothing with exit 0
    throw core::InputError(fmt::format("--index {}: the dataset '{}' has {} instances (expected 0 … {})", first, dir,
                                       ds->num_instances(), ds->num_instances() - 1));
  for (const char* key : {"documents", "sentences", "tokens", "masked_tokens", "random_next"})
    if (manifest.contains(key)) fmt::print("  {:<16} {}\n", key, manifest[key].dump());
  if (manifest.contains("options")) fmt::print("  options          {}\n", manifest["options"].dump());
  fmt::print("  shards           {}{}\n", ds->shard_paths().size(), no_verify ? "" : " (header, size, checksum, vocab hash verified)");
  for (int64_t k = 0; k < count; ++k) {
    const auto index = static_cast<uint64_t>(first + k);
    if (index >= ds->num_instances()) break;
    const data::InstanceView v = ds->instance(index);
    fmt::print("\ninstance {}  (length {}, masked {}, next sentence: {})\n", index, v.length, v.num_masked,
               v.nsp_label ? "random (label 1)" : "actual (label 0)");
    fmt::print("  tokens:   {}\n", join_tokens(vocab, v.input_ids, v.length));
    std::string seg;
    for (int32_t t = 0; t < v.length; ++t) seg += static_cast<char>('0' + v.segment_ids[t]);
    fmt::print("  segments: {}\n", seg);
    std::string masked;
    for (int32_t m = 0; m < v.num_masked; ++m) {
      const int32_t pos = v.masked_positions[m];
      masked += fmt::format("{}{}:{}->{}", m ? " " : "", pos, vocab.token(v.input_ids[pos]), vocab.token(v.masked_label_ids[m]));
    }
    fmt::print("  masked:   {}\n", masked);
  }
  return 0;
}

}  // namespace

int run_data_command(int argc, char** argv) {
  CLI::App app{"ptsim data — WordPiece vocab training and BERT pretraining data preparation", "data"};
  app.require_subcommand(1);

  // ptsim data vocab
  auto* vocab_cmd = app.add_subcommand("vocab", "learn a WordPiece vocab.txt from a corpus (BPE-style merges)");
  std::string corpus;
  std::string out;
  int64_t vocab_size = 30522;
  int64_t min_pair_count = 2;
  bool cased = false;
  vocab_cmd->add_option("--corpus", corpus, "UTF-8 text, one sentence per line")->required();
  vocab_cmd->add_option("--vocab-size", vocab_size, "tokens in the result, specials included (at most)")
      ->capture_default_str()->check(integer_in(core::ranges::vocab));
  vocab_cmd->add_option("--min-pair-count", min_pair_count, "stop merging below this pair frequency")
      ->capture_default_str()->check(integer_at_least(1));
  vocab_cmd->add_flag("--cased", cased, "keep case and accents (default: lower-case + strip accents, as uncased BERT)");
  vocab_cmd->add_option("--out", out, "vocab.txt to write")->required();

  // ptsim data prepare
  auto* prep = app.add_subcommand("prepare", "corpus -> BERT pretraining shards (create_pretraining_data.py)");
  std::string vocab_path;
  std::string out_dir;
  data::PrepareOptions po;
  prep->add_option("--corpus", corpus, "one sentence per line, blank line between documents")->required();
  prep->add_option("--vocab", vocab_path, "vocab.txt (needs [PAD] [UNK] [CLS] [SEP] [MASK])")->required();
  prep->add_option("--out", out_dir, "output directory (shard_NNNNN.bin, manifest.json, vocab.txt)")->required();
  prep->add_option("--seq-len", po.seq_len, "max_seq_length")->capture_default_str();
  prep->add_option("--max-predictions", po.max_predictions,
                   "max masked tokens per sequence (default, as predict: ceil(--masked-lm-prob × seq-len) rounded up to a multiple of 4: 20 at 128, 80 at 512)")
      ->check(integer_at_least(1));  // -1 was read as "the default"
  prep->add_option("--dup-factor", po.dup_factor, "passes over the corpus with different masks")->capture_default_str();
  prep->add_option("--short-seq-prob", po.short_seq_prob, "probability of a shorter target length")->capture_default_str();
  prep->add_option("--masked-lm-prob", po.masked_lm_prob, "fraction of tokens to mask")->capture_default_str();
  prep->add_option("--seed", po.seed, "random seed (output is deterministic given it)")->capture_default_str();
  prep->add_option("--shard-size", po.shard_size, "instances per shard file")->capture_default_str();
  prep->add_flag("--whole-word-mask", po.whole_word_mask, "mask all pieces of a word together");
  prep->add_flag("--cased", cased, "keep case and accents (use with a cased vocab)");

  // ptsim data inspect
  auto* insp = app.add_subcommand("inspect", "print a prepared dataset's manifest and decode instances");
  std::string dir;
  std::string inspect_vocab;
  int64_t first = 0;
  int64_t count = 1;
  bool no_verify = false;
  insp->add_option("dir", dir, "directory written by 'ptsim data prepare'")->required();
  insp->add_option("--vocab", inspect_vocab, "vocab to decode with (default: DIR/vocab.txt); its hash must match");
  insp->add_option("--index", first, "first instance to decode")->capture_default_str()->check(integer_at_least(0));
  insp->add_option("--count", count, "how many instances to decode")->capture_default_str()->check(integer_at_least(0));
  insp->add_flag("--no-verify", no_verify, "skip the payload checksum (fast on huge datasets)");

  if (auto code = parse_or_exit(app, argc, argv)) return *code;

  if (vocab_cmd->parsed()) {
    const auto t0 = std::chrono::steady_clock::now();
    data::VocabTrainerOptions vo;
    vo.vocab_size = vocab_size;
    vo.min_pair_count = min_pair_count;
    vo.do_lower_case = !cased;
    data::VocabTrainerStats stats;
    (void)core::writable_target(out, "vocab");  // before training, not after
    const auto tokens = data::train_wordpiece_vocab(corpus, vo, &stats);
    data::write_vocab_file(out, tokens);
    fmt::print("wrote {}: {} tokens (5 special, {} characters, {} merges) from {} lines, {} words ({} unique) in {:.2f} s\n",
               out, tokens.size(), stats.alphabet, stats.merges, stats.lines, stats.words, stats.unique_words,
               seconds_since(t0));
    if (static_cast<int64_t>(tokens.size()) < vocab_size)
      fmt::print("note: fewer than --vocab-size {}: no pair occurs {} or more times any more\n", vocab_size, min_pair_count);
    return 0;
  }
  if (prep->parsed()) {
    const auto t0 = std::chrono::steady_clock::now();
    po.do_lower_case = !cased;
    const data::PrepareStats s = data::prepare_pretraining_data(corpus, vocab_path, out_dir, po);
    fmt::print("wrote {}: {} instances in {} shard(s) from {} documents, {} sentences, {} tokens in {:.2f} s\n", out_dir,
               s.instances, s.shards, s.documents, s.sentences, s.tokens, seconds_since(t0));
    fmt::print("  masked {:.2f} tokens per instance, next-sentence random {:.1f}%\n",
               s.instances ? static_cast<double>(s.masked_tokens) / static_cast<double>(s.instances) : 0.0,
               s.instances ? 100.0 * static_cast<double>(s.random_next) / static_cast<double>(s.instances) : 0.0);
    return 0;
  }
  return run_inspect(dir, inspect_vocab, first, count, no_verify);
}

}  // namespace ptsim::tools
