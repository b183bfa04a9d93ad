// reports/once_cache.hpp — a byte-bounded least-recently-used map (reports/bounded_cache.hpp) whose misses are
// computed once however many threads ask at the same time: the first thread to miss a key computes it,
// outside the owner's lock (other keys proceed in parallel), and every thread that asks for that key meanwhile
// waits for its result instead of computing it again. The storage behind reports::PredictionCache, whose keys
// say what each value depends on (reports/prediction_cache.hpp). With `ptsim sweep --threads 2`, two
// configurations that differ only in the network ask for the same graphs and derivations at nearly the same
// moment; before this, both computed them (docs/sweep.md, "Speed of --auto-recipe").
//
// An exception from the computation reaches the computing thread and every waiter, and nothing is kept: the
// next ask computes again (a refused recipe is refused each time it is asked, as without the cache). The
// owner's mutex guards both the map and the keys in flight; callers hold no lock while they wait. Waiting
// cannot deadlock while computations only ask for other caches' keys in one direction (PredictionCache: memory
// summaries and reduced graphs ask derivations and graphs, steps ask graphs; none asks back).
#pragma once
#include <exception>
#include <future>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>

#include "reports/bounded_cache.hpp"

namespace ptsim::reports {

template <typename Value>
class OnceCache {
 public:
  explicit OnceCache(size_t budget_bytes) : cache_(budget_bytes) {}

  // The value under `key`, or make() — inserted with the bytes size(value) holds. `made` counts this cache's
  // computations, `found` the asks answered without one (held, or waited for); both under `mutex`.
  template <typename Make, typename Size>
  Value get(std::mutex& mutex, const std::string& key, long& made, long& found, Make make, Size size) {
    std::promise<Value> promise;
    std::shared_future<Value> in_flight;
    {
      std::lock_guard lock(mutex);
      if (auto held = cache_.find(key)) {
        ++found;
        return *held;
      }
      if (auto it = pending_.find(key); it != pending_.end()) {
        ++found;
        in_flight = it->second;
      } else {
        pending_.emplace(key, promise.get_future().share());
      }
    }
    if (in_flight.valid()) return in_flight.get();  // another thread computes it; rethrows what it threw
    try {
      Value value = make();
      const size_t bytes = size(value);
      std::lock_guard lock(mutex);
      ++made;
      Value kept = cache_.insert(key, std::move(value), bytes);
      pending_.erase(key);
      promise.set_value(kept);
      return kept;
    } catch (...) {
      std::lock_guard lock(mutex);
      pending_.erase(key);
      promise.set_exception(std::current_exception());
      throw;
    }
  }

  // Under the owner's mutex, as BoundedCache's.
  size_t size() const { return cache_.size(); }
  size_t bytes() const { return cache_.bytes(); }
  long evictions() const { return cache_.evictions(); }

 private:
  BoundedCache<Value> cache_;
  std::unordered_map<std::string, std::shared_future<Value>> pending_;  // keys being computed now
};

}  // namespace ptsim::reports
