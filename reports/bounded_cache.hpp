// reports/bounded_cache.hpp — a least-recently-used map from text keys to values with a byte budget: the
// storage behind reports::PredictionCache. Each entry counts the bytes its value holds (the caller's
// estimate, reports/cache_bytes.hpp) plus its key's length; inserting past the budget evicts the least recently found or inserted
// entries until the total is within it again. The newest entry always stays, so one entry larger than the
// budget is kept alone. Values are returned by copy (a shared_ptr for large ones): an evicted entry that a
// caller still holds lives on until that caller drops it. Not thread-safe: the owner locks.
#pragma once
#include <cstddef>
#include <list>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>

namespace ptsim::reports {

template <typename Value>
class BoundedCache {
 public:
  explicit BoundedCache(size_t budget_bytes) : budget_bytes_(budget_bytes) {}

  // The value under `key`, now the most recently used; nullopt when absent (never inserted, or evicted).
  std::optional<Value> find(const std::string& key) {
    const auto it = index_.find(key);
    if (it == index_.end()) return std::nullopt;
    entries_.splice(entries_.begin(), entries_, it->second);
    return it->second->value;
  }

  // Inserts `value` (holding `bytes`) unless `key` is present — then the present value wins and is returned
  // (two threads that computed the same key) — and evicts from the least recently used end to the budget.
  Value insert(const std::string& key, Value value, size_t bytes) {
    if (auto present = find(key)) return *present;
    entries_.push_front(Entry{key, std::move(value), bytes + key.size()});
    index_.emplace(key, entries_.begin());
    bytes_ += entries_.front().bytes;
    while (bytes_ > budget_bytes_ && entries_.size() > 1) {
      const Entry& oldest = entries_.back();
      bytes_ -= oldest.bytes;
      index_.erase(oldest.key);
      entries_.pop_back();
      ++evictions_;
    }
    return entries_.front().value;
  }

  size_t size() const { return entries_.size(); }
  size_t bytes() const { return bytes_; }      // estimated bytes of the entries held now
  size_t budget_bytes() const { return budget_bytes_; }
  long evictions() const { return evictions_; }

 private:
  struct Entry {
    std::string key;
    Value value;
    size_t bytes = 0;
  };
  size_t budget_bytes_;
  std::list<Entry> entries_;  // most recently used first
  std::unordered_map<std::string, typename std::list<Entry>::iterator> index_;
  size_t bytes_ = 0;
  long evictions_ = 0;
};

}  // namespace ptsim::reports
