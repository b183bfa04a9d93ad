// runtime/data/shard_format.hpp — byte layout of ptsim's pretraining shards (shard_NNNNN.bin).
// Is: the one definition of the header and the fixed-size record, shared by writer and loader.
// Little-endian only (checked at compile time); docs/data-pipeline.md draws the layout.
//
// File = 64-byte header + instance_count records of record_bytes each (the "payload").
// Record (seq_len S, max_predictions P), all little-endian:
//   int32 length            real tokens ([CLS] A [SEP] B [SEP]); positions >= length are padding
//   int32 num_masked        used masked-LM slots (<= P)
//   int32 nsp_label         1 = B is a random segment (is_random_next), 0 = B really follows A
//   int32 reserved          0
//   int32 input_ids[S]      token ids after masking; padding = the vocab's [PAD] id
//   int32 masked_positions[P]  position in the sequence (0..S-1) of each prediction, ascending; padding 0
//   int32 masked_label_ids[P]  original token id at that position; padding -1
//   uint8 segment_ids[S]    0 for [CLS] A [SEP], 1 for B [SEP], 0 for padding
//   uint8 zero[(4 - S % 4) % 4]  keeps records 4-byte aligned
#pragma once
#include <bit>
#include <cstddef>
#include <cstdint>

namespace ptsim::runtime::data {

static_assert(std::endian::native == std::endian::little, "ptsim shards are little-endian");

inline constexpr char kShardMagic[8] = {'P', 'T', 'S', 'I', 'M', 'B', 'R', 'T'};
inline constexpr uint32_t kShardFormatVersion = 1;
inline constexpr uint32_t kShardFlagWholeWordMask = 1u << 0;

struct ShardHeader {
  char magic[8] = {'P', 'T', 'S', 'I', 'M', 'B', 'R', 'T'};
  uint32_t version = kShardFormatVersion;
  uint32_t header_bytes = 64;
  uint32_t seq_len = 0;
  uint32_t max_predictions = 0;
  uint64_t instance_count = 0;
  uint64_t record_bytes = 0;
  uint64_t vocab_hash = 0;        // FNV-1a 64 of the vocab.txt bytes
  uint64_t payload_checksum = 0;  // FNV-1a 64 of every byte after the header
  uint32_t vocab_size = 0;
  uint32_t flags = 0;             // kShardFlag*
};
static_assert(sizeof(ShardHeader) == 64, "ShardHeader must be exactly 64 bytes");
inline constexpr uint32_t kShardHeaderBytes = sizeof(ShardHeader);

struct RecordLayout {
  uint32_t seq_len = 0;
  uint32_t max_predictions = 0;

  static constexpr size_t kMetaBytes = 16;
  size_t input_ids_offset() const { return kMetaBytes; }
  size_t masked_positions_offset() const { return input_ids_offset() + 4ull * seq_len; }
  size_t masked_labels_offset() const { return masked_positions_offset() + 4ull * max_predictions; }
  size_t segment_ids_offset() const { return masked_labels_offset() + 4ull * max_predictions; }
  size_t bytes() const { return segment_ids_offset() + ((seq_len + 3ull) / 4) * 4; }
};

}  // namespace ptsim::runtime::data
