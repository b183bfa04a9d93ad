// runtime/data/causal_lm_blocks.cpp — the causal-LM token stream over prepared shards, and its loader.
#include "runtime/data/causal_lm_blocks.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "core/error.hpp"

namespace ptsim::runtime::data {

namespace {

// Appends instance `v`'s stream tokens to `out` (see CausalLmBlocks): positions 1 .. length-1, masked
// slots restored, segment B only when it follows A.
void append_instance(const InstanceView& v, std::vector<int32_t>& out) {
  const size_t first = out.size();
  for (int32_t t = 1; t < v.length; ++t) {
    if (v.segment_ids[t] == 1 && v.nsp_label != 0) break;  // a random B: another document's text
    out.push_back(v.input_ids[t]);
  }
  for (int32_t k = 0; k < v.num_masked; ++k) {
    const int32_t at = v.masked_positions[k];  // 1 .. length-1 (validated on open)
    if (first + static_cast<size_t>(at) - 1 < out.size()) out[first + static_cast<size_t>(at) - 1] = v.masked_label_ids[k];
  }
}

uint64_t instance_length(const InstanceView& v) {
  uint64_t n = 0;
  for (int32_t t = 1; t < v.length; ++t, ++n)
    if (v.segment_ids[t] == 1 && v.nsp_label != 0) break;
  return n;
}

}  // namespace

CausalLmBlocks::CausalLmBlocks(const PretrainingDataset& dataset, int32_t seq_len) : dataset_(&dataset), seq_len_(seq_len) {
  if (seq_len < 1) throw std::invalid_argument(fmt::format("causal LM blocks: seq_len {} must be >= 1", seq_len));
  offsets_.reserve(dataset.num_instances() + 1);
  uint64_t at = 0;
  for (uint64_t i = 0; i < dataset.num_instances(); ++i) {
    offsets_.push_back(at);
    at += instance_length(dataset.instance(i));
  }
  offsets_.push_back(at);
}

std::vector<int32_t> CausalLmBlocks::instance_tokens(uint64_t index) const {
  std::vector<int32_t> out;
  append_instance(dataset_->instance(index), out);
  return out;
}

void CausalLmBlocks::block(uint64_t index, int32_t* out) const {
  if (index >= num_blocks())
    throw std::out_of_range(fmt::format("causal LM block {} out of range ({} blocks)", index, num_blocks()));
  const uint64_t begin = index * static_cast<uint64_t>(block_tokens());
  const uint64_t end = begin + static_cast<uint64_t>(block_tokens());
  // The instance holding stream position `begin`: the last with offsets_[i] <= begin.
  auto i = static_cast<uint64_t>(std::upper_bound(offsets_.begin(), offsets_.end() - 1, begin) - offsets_.begin()) - 1;
  std::vector<int32_t> tokens;
  uint64_t written = 0;
  for (uint64_t pos = begin; pos < end; ++i) {
    tokens.clear();
    append_instance(dataset_->instance(i), tokens);
    const uint64_t skip = pos - offsets_[i];
    const uint64_t take = std::min<uint64_t>(tokens.size() - skip, end - pos);
    std::copy_n(tokens.begin() + static_cast<std::ptrdiff_t>(skip), take, out + written);
    written += take;
    pos += take;
  }
}

CausalLmLoader::CausalLmLoader(const CausalLmBlocks& blocks, const BatchLoaderOptions& options)
    : blocks_(&blocks), options_(options) {
  if (options.world_size < 1 || options.rank < 0 || options.rank >= options.world_size)
    throw core::InputError(fmt::format("data loader: rank {} of world size {} is invalid (need 0 <= rank < world_size)",
                                       options.rank, options.world_size));
  per_rank_ = blocks.num_blocks() / static_cast<uint64_t>(options.world_size);
}

uint64_t CausalLmLoader::block_at(uint64_t epoch, uint64_t offset) const {
  const uint64_t slot = offset * static_cast<uint64_t>(options_.world_size) + static_cast<uint64_t>(options_.rank);
  if (!options_.shuffle) return slot;
  return permute_index(slot, blocks_->num_blocks(), options_.seed + epoch);
}

void CausalLmLoader::seek(const LoaderCursor& cursor) {
  if (cursor.offset >= per_rank_)
    throw core::InputError(fmt::format("data loader: resume offset {} is past this rank's {} blocks per epoch "
                                       "(was the checkpoint made with another dataset or world size?)",
                                       cursor.offset, per_rank_));
  cursor_ = cursor;
}

void CausalLmLoader::next_batch(int32_t batch_size, CausalLmBatch& b) {
  if (batch_size < 1) throw core::InputError(fmt::format("data loader: batch size {} must be >= 1", batch_size));
  if (per_rank_ == 0) throw std::logic_error("causal LM loader: no blocks for this rank");
  const auto S = static_cast<size_t>(blocks_->seq_len());
  const auto B = static_cast<size_t>(batch_size);
  b.batch_size = batch_size;
  b.seq_len = blocks_->seq_len();
  b.input_ids.assign(B * S, 0);
  b.lm_labels.assign(B * S, 0);
  b.block_indices.assign(B, 0);
  std::vector<int32_t> block(S + 1);
  for (size_t row = 0; row < B; ++row) {
    const uint64_t index = block_at(cursor_.epoch, cursor_.offset);
    if (++cursor_.offset == per_rank_) {
      cursor_.offset = 0;
      ++cursor_.epoch;
    }
    blocks_->block(index, block.data());
    b.block_indices[row] = index;
    std::copy_n(block.begin(), S, b.input_ids.begin() + static_cast<std::ptrdiff_t>(row * S));
    std::copy_n(block.begin() + 1, S, b.lm_labels.begin() + static_cast<std::ptrdiff_t>(row * S));
  }
}

}  // namespace ptsim::runtime::data
