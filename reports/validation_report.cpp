// reports/validation_report.cpp — render_validation_report (see the header): an error-bar chart of
// predicted vs published per result, a predicted-vs-published scatter of single-GPU runs, and tables.
#include "reports/validation_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "reports/html_report.hpp"

namespace ptsim::reports {

namespace {

using nlohmann::json;

std::string metric_text(const std::string& metric, double v) {
  if (metric == "time_to_train_seconds") return format_duration(v);
  if (metric == "scaling_efficiency") return format_percent(v);
  if (metric.find("usd") != std::string::npos) return format_usd(v);
  if (metric == "tflops_per_gpu") return fmt::format("{:.1f} TFLOP/s", v);
  if (metric == "cluster_pflops") return fmt::format("{:.2f} PFLOP/s", v);
  if (metric == "tokens_per_second_per_gpu") return fmt::format("{:.0f} tokens/s", v);
  return fmt::format("{:.4g}", v);
}

}  // namespace

std::string published_metric_label(const std::string& metric) {
  if (metric == "time_to_train_seconds") return "time to train";
  if (metric == "scaling_efficiency") return "scaling efficiency";
  if (metric == "rental_usd") return "rental";
  if (metric == "rental_usd_at_published_time") return "rental at the published duration";
  if (metric == "purchase_usd") return "purchase";
  if (metric == "tflops_per_gpu") return "TFLOP/s per GPU";
  if (metric == "cluster_pflops") return "cluster PFLOP/s";
  if (metric == "tokens_per_second_per_gpu") return "tokens/s per GPU";
  return metric;
}

namespace {

constexpr const char* kWithin = "#009E73";
constexpr const char* kKnownGap = "#E69F00";
constexpr const char* kOutside = "#D55E00";

void published_section(HtmlReport& page, const json& targets) {
  page.begin_section("published", "Published results against ptsim",
                     "Each published end-to-end result (time to train, scaling efficiency, dollars) next to what "
                     "ptsim predicts for the same scenario, from one set of hardware profiles — no per-scenario "
                     "factors.");
  size_t within = 0;
  for (const auto& t : targets) within += t.at("within_tolerance").get<bool>() ? 1 : 0;
  page.add_key_figures({{"published results", std::to_string(targets.size()), ""},
                        {"within tolerance", fmt::format("{} of {}", within, targets.size()), ""}});
  json labels = json::array(), band = json::array(), errors = json::array(), colours = json::array();
  double extent = 0;
  for (const auto& t : targets) {
    labels.push_back(fmt::format("{} · {}", t.at("scenario").get<std::string>(),
                                 published_metric_label(t.at("metric").get<std::string>())));
    const double tol = 100 * t.at("tolerance").get<double>();
    band.push_back(json::array({-tol, tol}));
    extent = std::max(extent, tol);
    if (t.at("error").is_null()) {
      errors.push_back(nullptr);
    } else {
      const double e = 100 * t.at("error").get<double>();
      errors.push_back(e);
      extent = std::max(extent, std::abs(e));
    }
    colours.push_back(t.at("within_tolerance").get<bool>()           ? kWithin
                      : !t.at("known_gap").get<std::string>().empty() ? kKnownGap
                                                                       : kOutside);
  }
  const double limit = std::ceil(extent * 1.15 / 10) * 10;
  ChartSpec chart;
  chart.id = "published-errors";
  chart.title = "Prediction error against each published result";
  chart.how_to_read = "One row per published figure. The grey bar is the tolerance the scenario accepts; the "
                      "diamond is ptsim's error: (predicted − published) ÷ published in %, or the difference in "
                      "percentage points for scaling efficiency. Green: within tolerance; orange: outside, with a "
                      "known gap explained in the table; red: outside.";
  chart.config = {
      {"type", "bar"},
      {"data",
       {{"labels", labels},
        {"datasets",
         {{{"type", "line"}, {"label", "ptsim's error"}, {"data", errors}, {"showLine", false}, {"pointStyle", "rectRot"},
           {"pointRadius", 8}, {"pointHoverRadius", 9}, {"pointBackgroundColor", colours}, {"pointBorderColor", "#1d2430"},
           {"borderColor", "#1d2430"}, {"backgroundColor", kWithin}},
          {{"type", "bar"}, {"label", "tolerance band"}, {"data", band}, {"backgroundColor", "rgba(91,103,112,0.22)"},
           {"borderColor", "rgba(91,103,112,0.5)"}, {"borderWidth", 1}, {"barPercentage", 0.6}}}}}},
      {"options",
       {{"indexAxis", "y"},
        {"plugins", {{"legend", {{"position", "bottom"}}}}},
        {"scales",
         {{"x", {{"type", "linear"}, {"min", -limit}, {"max", limit},
                 {"title", {{"display", true}, {"text", "error: % of published (points for scaling efficiency)"}}},
                 {"grid", {{"color", "#e6e9ed"}}}}},
          {"y", {{"type", "category"}, {"grid", {{"display", false}}}}}}}}}};
  chart.x_unit = AxisUnit::percent;
  chart.height_px = 120 + 38 * static_cast<int>(targets.size());
  page.add_chart(chart);
  HtmlTable table{{"scenario", "metric", "published", "predicted", "error", "tolerance", "within", "source"},
                  {},
                  {false, false, true, true, true, true, false, false},
                  "",
                  {}};
  std::vector<std::string> gaps;
  for (const auto& t : targets) {
    const std::string metric = t.at("metric").get<std::string>();
    const bool points = t.at("error_kind") == "absolute";
    const bool ok = t.at("within_tolerance").get<bool>();
    const std::string gap = t.at("known_gap").get<std::string>();
    table.rows.push_back(
        {t.at("scenario").get<std::string>(), published_metric_label(metric), metric_text(metric, t.at("published").get<double>()),
         t.at("predicted").is_null() ? "-" : metric_text(metric, t.at("predicted").get<double>()),
         t.at("error").is_null() ? "-"
         : points                ? fmt::format("{:+.1f} pts", 100 * t.at("error").get<double>())
                                 : fmt::format("{:+.1f}%", 100 * t.at("error").get<double>()),
         points ? fmt::format("±{:.0f} pts", 100 * t.at("tolerance").get<double>())
                : fmt::format("±{:.0f}%", 100 * t.at("tolerance").get<double>()),
         ok ? "yes" : (gap.empty() ? "NO" : "no (known gap)"), t.at("source").get<std::string>()});
    if (!ok && !gap.empty())
      gaps.push_back(fmt::format("{} · {}: {}", t.at("scenario").get<std::string>(), published_metric_label(metric), gap));
  }
  page.add_table(table);
  if (!gaps.empty()) {
    page.add_paragraph("Known gaps (why a prediction misses, as the scenario records it):");
    page.add_list(gaps);
  }
}

void single_gpu_section(HtmlReport& page, const json& runs, const std::string& runs_file) {
  page.begin_section("single-gpu", "Single-GPU throughputs",
                     fmt::format("Published BERT-large pretraining throughputs on one GPU ({}) against ptsim's "
                                 "compute model. Runs marked 'fit' set the model's parameters; 'held out' runs "
                                 "test it.",
                                 runs_file));
  json fit = json::array(), held = json::array();
  double largest = 0;
  for (const auto& r : runs) {
    const double published = r.at("published").get<double>(), predicted = r.at("predicted").get<double>();
    largest = std::max({largest, published, predicted});
    json point = {{"x", published}, {"y", predicted},
                  {"name", fmt::format("{} ({}): {:+.1f}%", r.at("id").get<std::string>(), r.at("gpu").get<std::string>(),
                                       100 * r.at("relative_error").get<double>())}};
    (r.at("role") == "fit" ? fit : held).push_back(point);
  }
  const double top = largest * 1.1;
  ChartSpec chart;
  chart.id = "single-gpu";
  chart.title = "Predicted against published sequences per second";
  chart.how_to_read = "Each dot is one published run: its published throughput across, ptsim's prediction up. On "
                      "the solid diagonal the prediction is exact; between the dashed lines it is within ±10%. "
                      "Hover a dot for the run and its error.";
  chart.config = {
      {"type", "scatter"},
      {"data",
       {{"datasets",
         {{{"label", "used in the fit"}, {"data", fit}, {"pointRadius", 6}, {"backgroundColor", chart_colour(0)}},
          {{"label", "held out"}, {"data", held}, {"pointRadius", 6}, {"pointStyle", "rectRot"},
           {"backgroundColor", chart_colour(1)}},
          {{"label", "exact"}, {"data", json::array({{{"x", 0}, {"y", 0}}, {{"x", top}, {"y", top}}})}, {"showLine", true},
           {"pointRadius", 0}, {"borderColor", "#5B6770"}, {"borderWidth", 1}},
          {{"label", "+10%"}, {"data", json::array({{{"x", 0}, {"y", 0}}, {{"x", top}, {"y", 1.1 * top}}})},
           {"showLine", true}, {"pointRadius", 0}, {"borderColor", "#9aa4ad"}, {"borderDash", {4, 4}}, {"borderWidth", 1}},
          {{"label", "−10%"}, {"data", json::array({{{"x", 0}, {"y", 0}}, {{"x", top}, {"y", 0.9 * top}}})},
           {"showLine", true}, {"pointRadius", 0}, {"borderColor", "#9aa4ad"}, {"borderDash", {4, 4}}, {"borderWidth", 1}}}}}},
      {"options",
       {{"plugins", {{"legend", {{"position", "bottom"}}}}},
        {"scales",
         {{"x", {{"type", "linear"}, {"min", 0}, {"max", top},
                 {"title", {{"display", true}, {"text", "published sequences/s"}}}, {"grid", {{"color", "#e6e9ed"}}}}},
          {"y", {{"type", "linear"}, {"min", 0}, {"max", top},
                 {"title", {{"display", true}, {"text", "predicted sequences/s"}}}, {"grid", {{"color", "#e6e9ed"}}}}}}}}}};
  chart.height_px = 420;
  page.add_chart(chart);
  HtmlTable table{{"run", "GPU", "used in fit", "published seq/s", "predicted seq/s", "error", "source"},
                  {},
                  {false, false, false, true, true, true, false},
                  "",
                  {}};
  for (const auto& r : runs)
    table.rows.push_back({r.at("id").get<std::string>(), r.at("gpu").get<std::string>(),
                          r.at("role") == "fit" ? "yes" : "held out", fmt::format("{:.2f}", r.at("published").get<double>()),
                          fmt::format("{:.2f}", r.at("predicted").get<double>()),
                          fmt::format("{:+.1f}%", 100 * r.at("relative_error").get<double>()),
                          r.at("source").get<std::string>()});
  page.add_table(table);
}

// Per software stack: how well its fitted values reproduce the runs they were fitted on, and the held-out ones.
void stacks_section(HtmlReport& page, const json& stacks) {
  page.begin_section("stacks", "Per software stack",
                     "Each stack's values were fitted on its 'fit' runs; its held-out runs test them (docs/stacks.md).");
  HtmlTable table{{"stack", "fit runs", "mean |error|", "held-out runs", "mean |error|", "worst held out"},
                  {},
                  {false, true, true, true, true, true},
                  "",
                  {}};
  for (const auto& s : stacks) {
    const bool held = s.at("held_out_runs").get<int>() > 0;
    table.rows.push_back({s.at("stack").get<std::string>(), std::to_string(s.at("fit_runs").get<int>()),
                          fmt::format("{:.1f}%", 100 * s.at("fit_mean_abs_error").get<double>()),
                          std::to_string(s.at("held_out_runs").get<int>()),
                          held ? fmt::format("{:.1f}%", 100 * s.at("held_out_mean_abs_error").get<double>()) : "-",
                          held ? fmt::format("{:+.1f}%", 100 * s.at("held_out_worst_error").get<double>()) : "-"});
  }
  page.add_table(table);
}

}  // namespace

std::string render_validation_report(const json& v, const std::string& chart_library) {
  HtmlReport page("ptsim validate — predictions against published results",
                  "One profile set for every scenario; the error is shown, not hidden.");
  published_section(page, v.at("published_results"));
  single_gpu_section(page, v.at("single_gpu_runs"), v.value("runs_file", std::string()));
  if (v.contains("stacks")) stacks_section(page, v.at("stacks"));
  page.set_data("ptsim-validation-data", v);
  return page.render(chart_library);
}

}  // namespace ptsim::reports
