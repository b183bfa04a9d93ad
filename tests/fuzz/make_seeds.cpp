// tests/fuzz/make_seeds.cpp — writes the binary seed inputs of the fuzz corpora (tests/fuzz/corpus/): small
// valid safetensors files (runtime::safetensors_serialize) and small prepared datasets in fuzz_shards's
// input layout (flags byte, uint32 manifest length, manifest.json, shard file from data::write_shard).
// Usage: make_seeds CORPUS_DIR   (writes CORPUS_DIR/safetensors/* and CORPUS_DIR/shards/*)
// Built with -Dfuzz=enabled; the committed seeds were made with it, so it only needs re-running when a
// format changes.
#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "runtime/checkpoint/safetensors.hpp"
#include "runtime/data/pretraining_data.hpp"
#include "runtime/data/shard_format.hpp"
#include "runtime/data/tokenizer.hpp"

namespace fs = std::filesystem;
using namespace ptsim::runtime;

namespace {

void write_bytes(const fs::path& path, const std::string& bytes) {
  fs::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) {
    std::fprintf(stderr, "make_seeds: cannot write %s\n", path.c_str());
    std::exit(1);
  }
}

std::string read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void safetensors_seeds(const fs::path& out) {
  const std::vector<float> w = {1.0f, -2.0f, 0.5f, 3.25f, 0.0f, -0.125f};
  const std::vector<float> b = {0.1f, 0.2f};
  std::vector<SafetensorsView> views = {safetensors_f32_view("layer.weight", w, {2, 3}),
                                        safetensors_f32_view("layer.bias", b)};
  auto as_string = [](const std::vector<std::byte>& bytes) {
    return std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  };
  write_bytes(out / "two_f32.safetensors", as_string(safetensors_serialize(views, {{"step", "7"}, {"format", "pt"}})));
  const std::vector<float> scalar = {42.0f};
  std::vector<SafetensorsView> one = {safetensors_f32_view("scale", scalar, {})};
  write_bytes(out / "scalar.safetensors", as_string(safetensors_serialize(one, {})));
  const std::vector<std::byte> halves(8, std::byte{0x3c});
  std::vector<SafetensorsView> bf16 = {{"h", SafetensorsDtype::bf16, {2, 2}, halves}};
  write_bytes(out / "bf16.safetensors", as_string(safetensors_serialize(bf16, {})));
}

// A dataset of `count` instances at seq_len 8, max_predictions 2, in fuzz_shards's input layout.
void shard_seed(const fs::path& out, const std::string& name, int count, uint8_t flags) {
  const data::Vocab vocab = data::Vocab::from_tokens({"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat"});
  std::vector<data::TrainingInstance> instances;
  for (int i = 0; i < count; ++i) {
    data::TrainingInstance t;
    t.input_ids = {vocab.cls_id(), 5, vocab.mask_id(), vocab.sep_id(), 7, vocab.sep_id()};
    t.segment_ids = {0, 0, 0, 0, 1, 1};
    t.masked_positions = {2};
    t.masked_label_ids = {6};
    t.is_random_next = i % 2 == 1;
    instances.push_back(t);
  }
  const fs::path scratch = fs::temp_directory_path() / ("ptsim_make_seeds_" + name);
  fs::create_directories(scratch);
  const int32_t seq_len = 8, max_predictions = 2;
  const uint64_t checksum = data::write_shard((scratch / "shard_00000.bin").string(), instances, 0, instances.size(),
                                              vocab, seq_len, max_predictions, 0);
  nlohmann::json m;
  m["format"] = "ptsim-bert-pretraining";
  m["format_version"] = data::kShardFormatVersion;
  m["seq_len"] = seq_len;
  m["max_predictions"] = max_predictions;
  m["record_bytes"] = data::RecordLayout{8, 2}.bytes();
  m["instances"] = count;
  m["vocab_hash"] = data::hash_to_hex(vocab.hash());
  m["vocab_size"] = vocab.size();
  m["shards"] = nlohmann::json::array(
      {{{"file", "shard_00000.bin"}, {"instances", count}, {"payload_checksum", data::hash_to_hex(checksum)}}});
  const std::string manifest = m.dump(1);
  const std::string shard = read_bytes(scratch / "shard_00000.bin");
  fs::remove_all(scratch);
  std::string input(1, static_cast<char>(flags));
  const auto length = static_cast<uint32_t>(manifest.size());
  char length_bytes[4];
  std::memcpy(length_bytes, &length, 4);
  input.append(length_bytes, 4);
  input += manifest;
  input += shard;
  write_bytes(out / (name + ".bin"), input);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_seeds CORPUS_DIR\n");
    return 2;
  }
  const fs::path corpus = argv[1];
  safetensors_seeds(corpus / "safetensors");
  shard_seed(corpus / "shards", "one_instance_checked", 1, 1);
  shard_seed(corpus / "shards", "three_instances_unchecked", 3, 0);
  std::printf("make_seeds: wrote seeds under %s\n", corpus.c_str());
  return 0;
}
