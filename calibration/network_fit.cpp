// calibration/network_fit.cpp — see network_fit.hpp.
#include "calibration/network_fit.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>

#include "core/error.hpp"

namespace ptsim::calibration {

namespace {

using Point = std::array<double, 2>;  // {ln latency_seconds, logit achieved_fraction}

double logit(double p) { return std::log(p / (1 - p)); }
double logistic(double x) { return 1 / (1 + std::exp(-x)); }

sim::ClusterConfig with_parameters(sim::ClusterConfig config, const Point& p) {
  config.cluster.network.latency_seconds = std::exp(p[0]);
  config.cluster.network.achieved_fraction = logistic(p[1]);
  return config;
}

// Mean of ln(predicted / measured)² over the rows.
double mean_squared_log_error(const sim::ClusterConfig& config, sim::CollectiveKind kind,
                              const std::vector<NcclTestsRow>& rows) {
  double sum = 0;
  for (const auto& r : rows) {
    const double e = std::log(simulate_benchmark(config, kind, r.bytes).duration_seconds() / (r.time_us * 1e-6));
    sum += e * e;
  }
  return sum / static_cast<double>(rows.size());
}

// Nelder–Mead (reflection 1, expansion 2, contraction ½, shrink ½) in two dimensions.
template <typename F>
Point nelder_mead(F f, Point start, double step, int max_evaluations, int& evaluations) {
  std::array<Point, 3> x = {start, Point{start[0] + step, start[1]}, Point{start[0], start[1] + step}};
  std::array<double, 3> y{};
  for (int i = 0; i < 3; ++i) y[i] = f(x[i]);
  evaluations = 3;
  auto blend = [](const Point& a, const Point& b, double t) { return Point{a[0] + t * (b[0] - a[0]), a[1] + t * (b[1] - a[1])}; };
  while (evaluations < max_evaluations) {
    std::array<int, 3> order = {0, 1, 2};
    std::sort(order.begin(), order.end(), [&](int a, int b) { return y[a] < y[b]; });
    const int best = order[0], mid = order[1], worst = order[2];
    if (y[worst] - y[best] < 1e-10) break;
    const Point centroid = blend(x[best], x[mid], 0.5);
    const Point reflected = blend(centroid, x[worst], -1.0);
    const double yr = f(reflected);
    ++evaluations;
    if (yr < y[best]) {
      const Point expanded = blend(centroid, x[worst], -2.0);
      const double ye = f(expanded);
      ++evaluations;
      if (ye < yr) x[worst] = expanded, y[worst] = ye;
      else x[worst] = reflected, y[worst] = yr;
    } else if (yr < y[mid]) {
      x[worst] = reflected, y[worst] = yr;
    } else {
      const Point contracted = blend(centroid, x[worst], 0.5);
      const double yc = f(contracted);
      ++evaluations;
      if (yc < y[worst]) {
        x[worst] = contracted, y[worst] = yc;
      } else {
        for (int i : {mid, worst}) x[i] = blend(x[best], x[i], 0.5), y[i] = f(x[i]);
        evaluations += 2;
      }
    }
  }
  return x[static_cast<size_t>(std::min_element(y.begin(), y.end()) - y.begin())];
}

// Golden-section search for the minimum of f on [lo, hi].
template <typename F>
double golden_section(F f, double lo, double hi, int max_evaluations, int& evaluations) {
  const double ratio = (std::sqrt(5.0) - 1) / 2;
  double a = hi - ratio * (hi - lo), b = lo + ratio * (hi - lo);
  double fa = f(a), fb = f(b);
  evaluations = 2;
  while (evaluations < max_evaluations && hi - lo > 1e-6) {
    if (fa < fb) hi = b, b = a, fb = fa, a = hi - ratio * (hi - lo), fa = f(a);
    else lo = a, a = b, fa = fb, b = lo + ratio * (hi - lo), fb = f(b);
    ++evaluations;
  }
  return fa < fb ? a : b;
}

// Relative change of one row's predicted time between two parameter points.
double sensitivity(const sim::ClusterConfig& config, sim::CollectiveKind kind, double bytes, const Point& a, const Point& b) {
  const double ta = simulate_benchmark(with_parameters(config, a), kind, bytes).duration_seconds();
  const double tb = simulate_benchmark(with_parameters(config, b), kind, bytes).duration_seconds();
  return std::abs(ta - tb) / std::min(ta, tb);
}

// Decides which parameters the rows determine (NetworkFit::latency_fitted / fraction_fitted).
void check_identifiable(const sim::ClusterConfig& config, sim::CollectiveKind kind, const std::vector<NcclTestsRow>& rows,
                        const Point& start, NetworkFit& fit) {
  const auto [smallest, largest] = std::minmax_element(rows.begin(), rows.end(),
                                                       [](const auto& a, const auto& b) { return a.bytes < b.bytes; });
  const double by_latency = sensitivity(config, kind, smallest->bytes, {start[0] - std::log(10.0), start[1]},
                                        {start[0] + std::log(10.0), start[1]});
  const double fraction = logistic(start[1]);
  const double by_fraction = sensitivity(config, kind, largest->bytes, start, {start[0], logit(fraction / 2)});
  fit.latency_fitted = by_latency >= 0.05;
  fit.fraction_fitted = by_fraction >= 0.05;
  if (!fit.latency_fitted)
    fit.kept_because = fmt::format("latency kept: a 10x change moves the smallest row ({:.0f} B) by only {:.1f}% (measure smaller sizes, nccl-tests -b 8)",
                                   smallest->bytes, 100 * by_latency);
  if (!fit.fraction_fitted)
    fit.kept_because += fmt::format("{}achieved fraction kept: halving it moves the largest row ({:.0f} B) by only {:.1f}% (measure larger sizes, -e 1G)",
                                    fit.kept_because.empty() ? "" : "; ", largest->bytes, 100 * by_fraction);
}

}  // namespace

sim::CollectiveResult simulate_benchmark(const sim::ClusterConfig& config, sim::CollectiveKind kind, double bytes) {
  return sim::simulate_collective(config.cluster,
                                  sim::whole_cluster_collective(config, kind, config.data_parallel_algorithm, bytes));
}

NetworkFit fit_network(const sim::ClusterConfig& config, sim::CollectiveKind kind, const std::vector<NcclTestsRow>& rows) {
  if (config.cluster.nodes < 2)
    throw core::InputError("calibrate nccl-tests: the benchmark ran on one node, so no byte crossed the network: "
                           "fit the network to a run over two or more nodes (--nodes)");
  if (rows.empty()) throw core::InputError("calibrate nccl-tests: no rows to fit");
  NetworkFit fit;
  fit.latency_before_seconds = config.cluster.network.latency_seconds;
  fit.fraction_before = config.cluster.network.achieved_fraction;
  // Start inside the open interval the logit needs; a shipped fraction of exactly 1 starts at 0.99.
  const Point start = {std::log(std::max(fit.latency_before_seconds, 1e-7)),
                       logit(std::clamp(fit.fraction_before, 0.01, 0.99))};
  auto objective = [&](const Point& p) { return mean_squared_log_error(with_parameters(config, p), kind, rows); };
  check_identifiable(config, kind, rows, start, fit);
  Point best = start;
  if (fit.latency_fitted && fit.fraction_fitted) {
    best = nelder_mead(objective, start, 0.5, 200, fit.evaluations);
  } else if (fit.latency_fitted) {  // ln latency within ×/÷ e^8 (≈ 3000×) of the shipped value
    best[0] = golden_section([&](double x) { return objective({x, start[1]}); }, start[0] - 8, start[0] + 8, 100, fit.evaluations);
  } else if (fit.fraction_fitted) {  // logit over fractions 0.0003 .. 0.9997
    best[1] = golden_section([&](double y) { return objective({start[0], y}); }, -8, 8, 100, fit.evaluations);
  }
  sim::ClusterConfig fitted = with_parameters(config, best);
  if (!fit.latency_fitted) fitted.cluster.network.latency_seconds = fit.latency_before_seconds;  // exactly as shipped
  if (!fit.fraction_fitted) fitted.cluster.network.achieved_fraction = fit.fraction_before;
  fit.latency_after_seconds = fitted.cluster.network.latency_seconds;
  fit.fraction_after = fitted.cluster.network.achieved_fraction;
  double before = 0, after = 0;
  for (const auto& r : rows) {
    NetworkFitRow row;
    row.bytes = r.bytes;
    row.measured_seconds = r.time_us * 1e-6;
    row.before_seconds = simulate_benchmark(config, kind, r.bytes).duration_seconds();
    const sim::CollectiveResult a = simulate_benchmark(fitted, kind, r.bytes);
    row.after_seconds = a.duration_seconds();
    row.algorithm = sim::to_string(a.algorithm);
    before += std::pow(std::log(row.before_seconds / row.measured_seconds), 2);
    after += std::pow(std::log(row.after_seconds / row.measured_seconds), 2);
    fit.rows.push_back(row);
  }
  const double n = static_cast<double>(rows.size());
  fit.typical_error_before = std::exp(std::sqrt(before / n)) - 1;
  fit.typical_error_after = std::exp(std::sqrt(after / n)) - 1;
  return fit;
}

}  // namespace ptsim::calibration
