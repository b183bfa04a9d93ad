// tests/fuzz/fuzz_shards.cpp — libFuzzer target: a prepared dataset directory (runtime/data/pretraining_dataset.hpp:
// manifest.json + shard_00000.bin), opened with PretrainingDataset::open, then every instance read and one
// batch served by a BatchLoader. Input layout: byte 0 = flags (bit 0: verify the payload checksum, as
// `train` does; off lets the fuzzer reach the record checks), bytes 1..4 = manifest length M (uint32
// little-endian), then M bytes of manifest.json, then the shard file. The seeds come from
// tests/fuzz/make_seeds.cpp.
#include <cstring>

#include "runtime/data/pretraining_dataset.hpp"
#include "tests/fuzz/fuzz_support.hpp"

PTSIM_FUZZ_TARGET(shards) {
  if (size < 5) return 0;
  uint32_t manifest_bytes = 0;
  std::memcpy(&manifest_bytes, data + 1, 4);
  const std::string_view rest = ptsim::fuzz::as_text(data + 5, size - 5);
  if (manifest_bytes > rest.size()) return 0;
  const auto& scratch = ptsim::fuzz::FuzzScratch::get();
  scratch.write("manifest.json", rest.substr(0, manifest_bytes));
  scratch.write("shard_00000.bin", rest.substr(manifest_bytes));
  ptsim::fuzz::guarded([&] {
    ptsim::runtime::data::DatasetOpenOptions options;
    options.verify_checksum = (data[0] & 1) != 0;
    const auto ds = ptsim::runtime::data::PretrainingDataset::open(scratch.dir().string(), options);
    for (uint64_t i = 0; i < ds->num_instances() && i < 64; ++i) {
      const auto view = ds->instance(i);
      if (view.length < 1 || view.length > ds->seq_len() || view.num_masked > ds->max_predictions()) std::abort();
    }
    ptsim::runtime::data::BatchLoader loader(*ds, {});
    ptsim::runtime::data::PretrainingBatch batch;
    loader.next_batch(2, batch);
  });
  return 0;
}
