// tests/runtime/data/test_shard_validation.cpp — crafted shards and manifests: every one is refused on open
// with InputError naming the shard (or the manifest field), the value found and what was expected, never a
// crash. Each case edits a copy of one prepared dataset and, where it edits a record, rewrites the payload
// checksum so that only the record validation can catch it (a checksum proves the bytes are the ones
// written, not that the writer was ptsim).
#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/json_reader.hpp"
#include "runtime/data/pretraining_dataset.hpp"
#include "runtime/data/shard_format.hpp"
#include "runtime/data/tokenizer.hpp"
#include "tests/runtime/data/data_test_support.hpp"

using ptsim::core::InputError;
using ptsim::core::Json;
using namespace ptsim::runtime::data;
namespace fs = std::filesystem;

namespace {

// The prepared dataset of data_test_support (seq 32, 5 → 8 max predictions, 400-token vocab, 150
// instances per shard), made once per process.
const fs::path& base_dataset() {
  static const fs::path dir = [] {
    const fs::path d = ptsim::test::fresh_temp_dir("shard_validation_base");
    ptsim::test::prepare_small_dataset(d);
    return d / "ds";
  }();
  return dir;
}

fs::path copy_of_base(const std::string& name) {
  const fs::path d = ptsim::test::fresh_temp_dir(name);
  fs::copy(base_dataset(), d / "ds", fs::copy_options::recursive);
  return d / "ds";
}

std::vector<unsigned char> read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_bytes(const fs::path& p, const std::vector<unsigned char>& bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

// A shard as header + payload, edited in memory and written back with a matching checksum.
struct ShardEdit {
  ShardHeader header;
  std::vector<unsigned char> payload;
  RecordLayout layout;
  explicit ShardEdit(const fs::path& p) {
    const std::vector<unsigned char> bytes = read_bytes(p);
    std::memcpy(&header, bytes.data(), sizeof header);
    payload.assign(bytes.begin() + kShardHeaderBytes, bytes.end());
    layout = {header.seq_len, header.max_predictions};
  }
  void set_i32(uint64_t record, size_t offset, int32_t value) {
    std::memcpy(payload.data() + record * layout.bytes() + offset, &value, 4);
  }
  int32_t get_i32(uint64_t record, size_t offset) const {
    int32_t v = 0;
    std::memcpy(&v, payload.data() + record * layout.bytes() + offset, 4);
    return v;
  }
  void save(const fs::path& p, bool fix_checksum = true) {
    if (fix_checksum) header.payload_checksum = fnv1a64(payload.data(), payload.size());
    std::vector<unsigned char> bytes(sizeof header);
    std::memcpy(bytes.data(), &header, sizeof header);
    bytes.insert(bytes.end(), payload.begin(), payload.end());
    write_bytes(p, bytes);
  }
};

Json read_manifest(const fs::path& ds) { return ptsim::core::load_json_file((ds / "manifest.json").string()); }
void write_manifest(const fs::path& ds, const Json& m) {
  std::ofstream(ds / "manifest.json", std::ios::trunc) << m.dump(2);
}

struct BadCase {
  const char* name;
  std::function<void(const fs::path& ds)> corrupt;
  std::vector<std::string> message;  // substrings the InputError must contain
};

// Record field offsets (shard_format.hpp): length 0, num_masked 4, nsp_label 8; input_ids at 16.
constexpr size_t kLength = 0, kNumMasked = 4, kNsp = 8;

void edit_record(const fs::path& ds, const std::function<void(ShardEdit&)>& edit) {
  const fs::path shard = ds / "shard_00000.bin";
  ShardEdit e(shard);
  edit(e);
  e.save(shard);
}

}  // namespace

TEST_CASE("crafted shards and manifests are refused on open, naming the field, the value and the range") {
  const std::vector<BadCase> cases = {
      // The fuzzer's case: instance_count N' = N + 2^60 makes 64 + N'·R wrap (R = 240 = 16·15, so 2^60·R ≡ 0
      // mod 2^64) to the true file size; the manifest agrees so only the size check stands in the way.
      {"instance count that wraps the size product",
       [](const fs::path& ds) {
         ShardEdit e(ds / "shard_00000.bin");
         const uint64_t wrapped = e.header.instance_count + (uint64_t{1} << 60);
         e.header.instance_count = wrapped;
         e.save(ds / "shard_00000.bin", false);
         Json m = read_manifest(ds);
         m["shards"][0]["instances"] = wrapped;
         m["instances"] = m["instances"].get<uint64_t>() + (uint64_t{1} << 60);
         write_manifest(ds, m);
       },
       {"shard_00000.bin' is truncated", "room for 150"}},
      {"length 0", [](const fs::path& ds) { edit_record(ds, [](ShardEdit& e) { e.set_i32(3, kLength, 0); }); },
       {"shard_00000.bin' is corrupt: instance 3 has length 0, expected 3..seq_len 32"}},
      {"length past seq_len", [](const fs::path& ds) { edit_record(ds, [](ShardEdit& e) { e.set_i32(0, kLength, 33); }); },
       {"instance 0 has length 33, expected 3..seq_len 32"}},
      {"num_masked past max_predictions",
       [](const fs::path& ds) { edit_record(ds, [](ShardEdit& e) { e.set_i32(1, kNumMasked, 9); }); },
       {"instance 1 has num_masked 9", "max_predictions 8"}},
      {"negative num_masked", [](const fs::path& ds) { edit_record(ds, [](ShardEdit& e) { e.set_i32(1, kNumMasked, -1); }); },
       {"instance 1 has num_masked -1"}},
      {"nsp label 2", [](const fs::path& ds) { edit_record(ds, [](ShardEdit& e) { e.set_i32(2, kNsp, 2); }); },
       {"instance 2 has nsp_label 2, expected 0 or 1"}},
      {"input id past the vocab",
       [](const fs::path& ds) { edit_record(ds, [](ShardEdit& e) { e.set_i32(0, e.layout.input_ids_offset() + 4 * 5, 400); }); },
       {"instance 0 has input_ids[5] = 400, expected 0..399 (vocab size 400)"}},
      {"negative input id",
       [](const fs::path& ds) { edit_record(ds, [](ShardEdit& e) { e.set_i32(0, e.layout.input_ids_offset(), -7); }); },
       {"instance 0 has input_ids[0] = -7"}},
      {"masked position outside the sequence",
       [](const fs::path& ds) {
         edit_record(ds, [](ShardEdit& e) {
           e.set_i32(0, kNumMasked, 1);
           e.set_i32(0, e.layout.masked_positions_offset(), e.get_i32(0, kLength));
         });
       },
       {"instance 0 has masked_positions[0] =", "inside the sequence of length"}},
      {"masked position on [CLS]",
       [](const fs::path& ds) {
         edit_record(ds, [](ShardEdit& e) {
           e.set_i32(0, kNumMasked, 1);
           e.set_i32(0, e.layout.masked_positions_offset(), 0);
         });
       },
       {"instance 0 has masked_positions[0] = 0, expected 1.."}},
      {"masked positions not ascending",
       [](const fs::path& ds) {
         edit_record(ds, [](ShardEdit& e) {
           e.set_i32(0, kNumMasked, 2);
           e.set_i32(0, e.layout.masked_positions_offset(), 2);
           e.set_i32(0, e.layout.masked_positions_offset() + 4, 2);
           e.set_i32(0, e.layout.masked_labels_offset(), 7);
           e.set_i32(0, e.layout.masked_labels_offset() + 4, 7);
         });
       },
       {"instance 0 has masked_positions[1] = 2 after 2, expected ascending"}},
      {"masked label past the vocab",
       [](const fs::path& ds) {
         edit_record(ds, [](ShardEdit& e) {
           e.set_i32(0, kNumMasked, 1);
           e.set_i32(0, e.layout.masked_positions_offset(), 1);
           e.set_i32(0, e.layout.masked_labels_offset(), 1 << 30);
         });
       },
       {"instance 0 has masked_label_ids[0] = 1073741824, expected 0..399"}},
      {"segment id 2",
       [](const fs::path& ds) {
         edit_record(ds, [](ShardEdit& e) { e.payload[5 * e.layout.bytes() + e.layout.segment_ids_offset() + 1] = 2; });
       },
       {"instance 5 has segment_ids[1] = 2, expected 0 or 1"}},
      {"header vocab size differs from the manifest",
       [](const fs::path& ds) {
         ShardEdit e(ds / "shard_00000.bin");
         e.header.vocab_size = 30522;
         e.save(ds / "shard_00000.bin");
       },
       {"shard_00000.bin' was built with a vocab of 30522 tokens", "vocab_size 400"}},
      {"manifest seq_len 2^40",
       [](const fs::path& ds) {
         Json m = read_manifest(ds);
         m["seq_len"] = int64_t{1} << 40;
         write_manifest(ds, m);
       },
       {"manifest.json", "seq_len", "8..65536"}},
      {"manifest max_predictions past seq_len",
       [](const fs::path& ds) {
         Json m = read_manifest(ds);
         m["max_predictions"] = 33;
         write_manifest(ds, m);
       },
       {"max_predictions", "1..seq_len 32"}},
      {"manifest vocab_size 2^40",
       [](const fs::path& ds) {
         Json m = read_manifest(ds);
         m["vocab_size"] = int64_t{1} << 40;
         write_manifest(ds, m);
       },
       {"vocab_size", "5..2147483647"}},
      {"manifest shard file outside the directory",
       [](const fs::path& ds) {
         Json m = read_manifest(ds);
         m["shards"][0]["file"] = "../ds/shard_00000.bin";
         write_manifest(ds, m);
       },
       {"shards[0]", "'../ds/shard_00000.bin' is not a file name inside the dataset directory"}},
      {"manifest negative instance count",
       [](const fs::path& ds) {
         Json m = read_manifest(ds);
         m["shards"][1]["instances"] = -150;
         write_manifest(ds, m);
       },
       {"shards[1]", "instances", "a positive count"}},
      {"shard that is a directory",
       [](const fs::path& ds) {
         fs::remove(ds / "shard_00001.bin");
         fs::create_directory(ds / "shard_00001.bin");
       },
       {"shard_00001.bin: is a directory, expected a shard file (listed in"}},
  };
  int n = 0;
  for (const BadCase& c : cases) {
    CAPTURE(c.name);
    const fs::path ds = copy_of_base("bad_shard_" + std::to_string(n++));
    c.corrupt(ds);
    std::string message;
    try {
      PretrainingDataset::open(ds.string());
    } catch (const InputError& e) {
      message = e.what();
    }
    REQUIRE_MESSAGE(!message.empty(), "no InputError for: " << c.name);
    for (const std::string& part : c.message) CHECK_MESSAGE(message.find(part) != std::string::npos, message);
  }
}

TEST_CASE("the unedited copy opens: the cases above fail for their edit alone") {
  const fs::path ds = copy_of_base("shard_validation_clean");
  CHECK_NOTHROW(PretrainingDataset::open(ds.string()));
  // A rewritten checksum over an unchanged payload is the same checksum: ShardEdit itself is neutral.
  edit_record(ds, [](ShardEdit&) {});
  CHECK_NOTHROW(PretrainingDataset::open(ds.string()));
}
