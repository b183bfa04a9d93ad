// reports/scenario_report_html.cpp — render_scenario_report: the page of `ptsim report` from the JSON that
// collect_scenario_report returns (reports/scenario_report.hpp), one section per question: what was
// assumed, how long, where a step's time goes, one iteration's timeline, scaling, dollars, memory, and the
// frontier of a sweep. Every chart has a table with its numbers beside it.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

#include "reports/html_report.hpp"
#include "reports/scenario_report.hpp"
#include "reports/validation_report.hpp"  // defines: published_metric_label

namespace ptsim::reports {

namespace {

using nlohmann::json;

std::optional<double> number_or_null(const json& j, const char* key) {
  if (!j.contains(key) || j.at(key).is_null()) return std::nullopt;
  return j.at(key).get<double>();
}

std::string dash_or(const std::optional<double>& v, std::string (*format)(double)) { return v ? format(*v) : "-"; }
std::string usd_text(double v) { return format_usd(v); }
std::string percent_text(double v) { return format_percent(v); }
std::string ms_text(double seconds) { return fmt::format("{:.1f} ms", seconds * 1e3); }

// A duration axis in the unit that reads best for the largest value on it.
struct TimeScale {
  AxisUnit unit;
  double seconds_per_unit;
  const char* name;
};
TimeScale time_scale(double largest_seconds) {
  if (largest_seconds >= 2 * 86400) return {AxisUnit::days, 86400, "days"};
  if (largest_seconds >= 2 * 3600) return {AxisUnit::hours, 3600, "hours"};
  if (largest_seconds >= 120) return {AxisUnit::minutes, 60, "minutes"};
  return {AxisUnit::seconds, 1, "seconds"};
}

json axis(const std::string& title, const json& extra = json::object()) {
  json a = {{"title", {{"display", true}, {"text", title}}}, {"grid", {{"color", "#e6e9ed"}}}};
  a.update(extra);
  return a;
}

json legend_bottom() { return {{"legend", {{"position", "bottom"}}}}; }

std::string setting_text(const json& value) { return value.is_string() ? value.get<std::string>() : value.dump(); }

std::string settings_text(const json& config) {
  std::string out;
  for (const auto& [key, value] : config.at("settings").items())
    out += fmt::format("{}{}={}", out.empty() ? "" : ", ", key, setting_text(value));
  return out.empty() ? "(the base scenario)" : out;
}

// One colour per part of a step, distinct across all twelve: GEMMs in blues, the other compute kinds in
// greens, pinks, yellows and browns, the optimizer grey, communication in orange and (exposed) red.
std::string part_colour(const std::string& part) {
  static const std::vector<std::pair<std::string, std::string>> colours = {
      {"GEMM (dense layers)", "#0072B2"}, {"attention batched GEMM", "#56B4E9"}, {"softmax", "#009E73"},
      {"layer norm", "#8FD4BC"},           {"dropout", "#CC79A7"},                {"GELU / tanh", "#F0E442"},
      {"embedding", "#7A5195"},            {"loss (cross-entropy)", "#9C755F"},
      {"other elementwise (add, bias grad, reshapes, gathers)", "#BAB0AC"},   {"optimizer", "#5B6770"},
      {"tensor-parallel all-reduce (blocking)", "#E69F00"}, {"exposed gradient communication", "#D55E00"}};
  for (const auto& [name, colour] : colours)
    if (name == part) return colour;
  return "#999999";
}

// A round axis end at or above `v`: 1, 2 or 5 × 10^k.
double nice_ceiling(double v) {
  if (!(v > 0)) return 1;
  const double p = std::pow(10, std::floor(std::log10(v)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * p >= v) return m * p;
  return 10 * p;
}

void overview_section(HtmlReport& page, const json& r) {
  const json& sc = r.at("scenario");
  const json& p = r.at("prediction");
  const json& cost = r.at("cost");
  page.begin_section("overview", "Overview");
  if (!sc.at("description").get<std::string>().empty()) page.add_paragraph(sc.at("description").get<std::string>());
  std::string time_note = fmt::format("{} phase{}", p.at("phases").size(), p.at("phases").size() == 1 ? "" : "s");
  if (p.at("overhead_seconds").get<double>() > 0)
    time_note += ", overheads " + format_duration(p.at("overhead_seconds").get<double>());
  for (const auto& pub : sc.at("published"))
    if (pub.at("metric") == "time_to_train_seconds")
      time_note += "; published " + format_duration(pub.at("value").get<double>());
  std::vector<KeyFigure> figures = {
      {"time to train", format_duration(p.at("time_to_train_seconds").get<double>()), time_note},
      {"cluster", fmt::format("{} GPUs", p.at("gpus").get<int>()),
       fmt::format("{} × {} over {}", sc.at("nodes").get<int>(), p.at("node").get<std::string>(),
                   p.at("network").get<std::string>())}};
  if (auto e = number_or_null(p, "scaling_efficiency"))
    figures.push_back({"scaling efficiency", format_percent(*e), "vs one GPU at the same micro-batch"});
  figures.push_back({"per GPU", fmt::format("{:.1f} TFLOP/s", p.at("tflops_per_gpu").get<double>()),
                     fmt::format("cluster {:.2f} PFLOP/s", p.at("cluster_pflops").get<double>())});
  if (auto v = number_or_null(cost, "rental_usd")) figures.push_back({"rental (on demand)", format_usd(*v), ""});
  if (auto v = number_or_null(cost, "ownership_usd"))
    figures.push_back({"ownership", format_usd(*v), "amortised share + energy"});
  figures.push_back({"memory per GPU", format_gib(p.at("memory_per_gpu_bytes").get<double>()),
                     "of " + format_gib(sc.at("gpu_memory_bytes").get<double>())});
  page.add_key_figures(figures);
  const std::string sets =
      sc.at("overrides").empty()
          ? std::string()
          : fmt::format(" --set {}", fmt::join(sc.at("overrides").get<std::vector<std::string>>(), " --set "));
  page.add_note(fmt::format("Scenario '{}'. Every figure comes from ptsim's simulator with the shipped hardware "
                            "profiles; `ptsim predict --scenario {}{} --format json` prints the same numbers.",
                            sc.at("name").get<std::string>(), sc.value("requested", sc.at("name").get<std::string>()),
                            sets));
}

void scenario_section(HtmlReport& page, const json& r) {
  const json& sc = r.at("scenario");
  const json& p = r.at("prediction");
  page.begin_section("scenario", "Scenario and assumptions",
                     "What was simulated: the model, the cluster, the training recipe, and the prices behind the dollars.");
  std::vector<std::pair<std::string, std::string>> terms = {
      {"model", sc.at("model").get<std::string>()},
      {"GPU", fmt::format("{} — {}", sc.at("gpu").get<std::string>(), sc.at("gpu_description").get<std::string>())},
      {"node", fmt::format("{} × {} ({} GPUs per node, {} NIC{})", sc.at("nodes").get<int>(),
                           sc.at("node").get<std::string>(), sc.at("gpus_per_node").get<int>(),
                           sc.at("nics_per_node").get<int>(), sc.at("nics_per_node").get<int>() == 1 ? "" : "s")},
      {"network", fmt::format("{} ({:.0f} Gbit/s per NIC) — {}", sc.at("network").get<std::string>(),
                              sc.at("network_gbps").get<double>(), sc.at("network_description").get<std::string>())},
      {"recipe", fmt::format("{}, {}, tensor parallel {}, {}, gradient buckets {:.0f} MiB",
                             sc.at("precision").get<std::string>(), sc.at("optimizer").get<std::string>(),
                             sc.at("tensor_parallel").get<int64_t>(),
                             sc.at("recompute").get<bool>() ? "activation recomputation" : "no recomputation",
                             sc.at("bucket_mib").get<double>())}};
  for (const auto& used : p.at("prices").at("used"))
    terms.emplace_back("price: " + used.at("figure").get<std::string>(),
                       fmt::format("{} ({}, {})", used.at("item").get<std::string>(), used.at("kind").get<std::string>(),
                                   used.at("date").get<std::string>()));
  if (!sc.at("source").get<std::string>().empty()) terms.emplace_back("source", sc.at("source").get<std::string>());
  terms.emplace_back("file", sc.at("file").get<std::string>());
  if (!sc.at("overrides").empty())
    terms.emplace_back("overrides (--set)", fmt::format("{}", fmt::join(sc.at("overrides").get<std::vector<std::string>>(), ", ")));
  page.add_definitions(terms);
  const auto assumptions = sc.at("assumptions").get<std::vector<std::string>>();
  std::vector<std::string> notes = p.at("prices").at("notes").get<std::vector<std::string>>();
  if (!assumptions.empty() || !notes.empty()) {
    page.add_paragraph("Assumptions the scenario states:");
    std::vector<std::string> items = assumptions;
    items.insert(items.end(), notes.begin(), notes.end());
    page.add_list(items);
  }
  if (!sc.at("published").empty()) {
    HtmlTable t{{"published result", "value", "tolerance", "source"}, {}, {false, true, true, false}, "", {}};
    for (const auto& pub : sc.at("published")) {
      const std::string metric = pub.at("metric").get<std::string>();
      const double v = pub.at("value").get<double>();
      std::string value = metric.find("seconds") != std::string::npos ? format_duration(v)
                          : metric.find("usd") != std::string::npos   ? format_usd(v)
                          : metric == "scaling_efficiency"             ? format_percent(v)
                                                                       : fmt::format("{:.4g}", v);
      const double tol = pub.at("tolerance").get<double>();
      t.rows.push_back({published_metric_label(metric), value,
                        metric == "scaling_efficiency" ? fmt::format("±{:.0f} points", 100 * tol)
                                                       : fmt::format("±{:.0f}%", 100 * tol),
                        pub.at("source").get<std::string>()});
    }
    t.caption = "`ptsim validate --report FILE` draws these against the predictions.";
    page.add_table(t);
  }
}

void time_section(HtmlReport& page, const json& r) {
  const json& p = r.at("prediction");
  const TimeScale scale = time_scale(p.at("time_to_train_seconds").get<double>());
  page.begin_section("time", "Time to train by phase",
                     "Each phase runs its optimizer steps one after another; overheads (start-up, checkpoints, "
                     "evaluation) come on top when the scenario lists them.");
  json datasets = json::array();
  size_t colour = 0;
  for (const auto& ph : p.at("phases"))
    datasets.push_back({{"label", ph.at("name")},
                        {"data", json::array({ph.at("seconds").get<double>() / scale.seconds_per_unit})},
                        {"backgroundColor", chart_colour(colour++)}});
  if (p.at("overhead_seconds").get<double>() > 0)
    datasets.push_back({{"label", "overheads"},
                        {"data", json::array({p.at("overhead_seconds").get<double>() / scale.seconds_per_unit})},
                        {"backgroundColor", chart_colour(7)}});
  ChartSpec chart;
  chart.id = "time-by-phase";
  chart.title = fmt::format("Time to train: {}", format_duration(p.at("time_to_train_seconds").get<double>()));
  chart.how_to_read = fmt::format("The bar is the whole run in {}; each coloured piece is one phase, in the order "
                                  "they run. Hover a piece for its length.", scale.name);
  chart.config = {{"type", "bar"},
                  {"data", {{"labels", json::array({"whole run"})}, {"datasets", datasets}}},
                  {"options",
                   {{"indexAxis", "y"},
                    {"plugins", legend_bottom()},
                    {"scales", {{"x", axis(scale.name, {{"stacked", true}, {"beginAtZero", true}})},
                                {"y", {{"type", "category"}, {"stacked", true}, {"grid", {{"display", false}}}}}}}}}};
  chart.x_unit = scale.unit;
  chart.height_px = 150;
  page.add_chart(chart);
  HtmlTable t{{"phase", "seq", "global batch", "micro × accum", "steps", "iteration", "seq/s", "TFLOP/s per GPU",
               "scaling eff.", "time"},
              {},
              {false, true, true, true, true, true, true, true, true, true},
              "",
              {}};
  for (const auto& ph : p.at("phases"))
    t.rows.push_back({ph.at("name").get<std::string>(), std::to_string(ph.at("seq_len").get<int64_t>()),
                      std::to_string(ph.at("global_batch").get<int64_t>()),
                      fmt::format("{} × {}", ph.at("micro_batch").get<int64_t>(), ph.at("grad_accum").get<int64_t>()),
                      std::to_string(ph.at("steps").get<int64_t>()), ms_text(ph.at("iteration_seconds").get<double>()),
                      fmt::format("{:.0f}", ph.at("throughput_seq_per_second").get<double>()),
                      fmt::format("{:.1f}", ph.at("tflops_per_gpu").get<double>()),
                      dash_or(number_or_null(ph, "scaling_efficiency"), percent_text),
                      format_duration(ph.at("seconds").get<double>())});
  std::vector<std::string> algorithms;
  for (const auto& ph : p.at("phases"))
    if (!ph.at("data_parallel_algorithm").get<std::string>().empty())
      algorithms.push_back(ph.at("name").get<std::string>() + ": " + ph.at("data_parallel_algorithm").get<std::string>());
  t.caption = "Iteration: one optimizer step. Scaling efficiency: throughput per GPU against one GPU alone at the "
              "same micro-batch.";
  if (!algorithms.empty())
    t.caption += fmt::format(" Gradient all-reduce algorithm ({}).", fmt::join(algorithms, "; "));
  page.add_table(t);
}

void step_section(HtmlReport& page, const json& r) {
  page.begin_section("step", "Where a step's time goes",
                     "One optimizer step (all its accumulated micro-steps) split into compute by kind of op, the "
                     "optimizer, and the communication that the rest of the step could not hide.");
  std::vector<std::string> parts;  // in the collector's order, over all phases
  for (const auto& ph : r.at("step_breakdown"))
    for (const auto& part : ph.at("parts"))
      if (std::find(parts.begin(), parts.end(), part.at("part").get<std::string>()) == parts.end())
        parts.push_back(part.at("part").get<std::string>());
  json labels = json::array();
  for (const auto& ph : r.at("step_breakdown")) labels.push_back(ph.at("phase"));
  json datasets = json::array();
  for (size_t k = 0; k < parts.size(); ++k) {
    json data = json::array();
    for (const auto& ph : r.at("step_breakdown")) {
      double seconds = 0;
      for (const auto& part : ph.at("parts"))
        if (part.at("part") == parts[k]) seconds = part.at("seconds").get<double>();
      data.push_back(seconds * 1e3);
    }
    datasets.push_back({{"label", parts[k]}, {"data", data}, {"backgroundColor", part_colour(parts[k])}});
  }
  ChartSpec chart;
  chart.id = "step-split";
  chart.title = "One step by kind of work";
  chart.how_to_read = "One bar per phase, as long as one optimizer step. Each piece is the time spent on one kind "
                      "of work; the red piece is gradient communication the step waits for (what a faster "
                      "network or more overlap would save).";
  chart.config = {{"type", "bar"},
                  {"data", {{"labels", labels}, {"datasets", datasets}}},
                  {"options",
                   {{"indexAxis", "y"},
                    {"plugins", legend_bottom()},
                    {"scales", {{"x", axis("milliseconds per optimizer step", {{"stacked", true}, {"beginAtZero", true}})},
                                {"y", {{"type", "category"}, {"stacked", true}, {"grid", {{"display", false}}}}}}}}}};
  chart.x_unit = AxisUnit::milliseconds;
  chart.height_px = 190 + 45 * static_cast<int>(labels.size());
  page.add_chart(chart);
  std::vector<std::string> header = {"part"};
  std::vector<bool> numeric = {false};
  for (const auto& ph : r.at("step_breakdown")) {
    header.push_back(ph.at("phase").get<std::string>() + " (ms)");
    header.push_back("share");
    numeric.push_back(true);
    numeric.push_back(true);
  }
  HtmlTable t{header, {}, numeric, "", {}};
  for (const auto& name : parts) {
    std::vector<std::string> row = {name};
    for (const auto& ph : r.at("step_breakdown")) {
      double seconds = 0;
      for (const auto& part : ph.at("parts"))
        if (part.at("part") == name) seconds = part.at("seconds").get<double>();
      row.push_back(fmt::format("{:.2f}", seconds * 1e3));
      row.push_back(format_percent(seconds / ph.at("iteration_seconds").get<double>()));
    }
    t.rows.push_back(row);
  }
  std::vector<std::string> total = {"iteration"};
  for (const auto& ph : r.at("step_breakdown")) {
    total.push_back(fmt::format("{:.2f}", ph.at("iteration_seconds").get<double>() * 1e3));
    total.push_back("100%");
  }
  t.rows.push_back(total);
  t.highlighted_rows = {t.rows.size() - 1};
  t.caption = "Compute parts are each op's simulated duration × the times it runs in the step (once per "
              "micro-step; the optimizer once); backward ops count with their forward kind. Exposed communication is the iteration minus "
              "the compute stream's busy time.";
  page.add_table(t);
}

void timeline_section(HtmlReport& page, const json& r) {
  const json& tl = r.at("timeline");
  page.begin_section("timeline", "Timeline of one iteration",
                     fmt::format("The first phase ({}): what the compute stream and the communication stream of "
                                 "one GPU do during one optimizer step. Every data-parallel replica runs the same "
                                 "timeline.",
                                 tl.at("phase").get<std::string>()));
  std::vector<std::string> categories;
  for (const auto& s : tl.at("segments"))
    if (std::find(categories.begin(), categories.end(), s.at("category").get<std::string>()) == categories.end())
      categories.push_back(s.at("category").get<std::string>());
  const std::vector<std::string> order = {"forward", "recompute", "backward", "optimizer", "tensor-parallel all-reduce",
                                          "gradient all-reduce"};
  std::sort(categories.begin(), categories.end(), [&](const std::string& a, const std::string& b) {
    return std::find(order.begin(), order.end(), a) - order.begin() < std::find(order.begin(), order.end(), b) - order.begin();
  });
  json datasets = json::array();
  for (const auto& category : categories) {
    json data = json::array();
    for (const auto& s : tl.at("segments")) {
      if (s.at("category") != category) continue;
      data.push_back({{"x", {s.at("start_seconds").get<double>() * 1e3, s.at("end_seconds").get<double>() * 1e3}},
                      {"y", s.at("stream").get<std::string>() + " stream"},
                      {"name", fmt::format("{}{} ({} ops)", category,
                                           s.at("stream") == "compute" ? fmt::format(", micro-step {}", s.at("micro_step").get<int>() + 1) : "",
                                           s.at("ops").get<int>())}});
    }
    const size_t at = static_cast<size_t>(std::find(order.begin(), order.end(), category) - order.begin());
    const char* colours[] = {"#56B4E9", "#CC79A7", "#0072B2", "#009E73", "#E69F00", "#D55E00", "#5B6770"};
    datasets.push_back({{"label", category},
                        {"data", data},
                        {"backgroundColor", colours[std::min<size_t>(at, 6)]},
                        {"grouped", false},
                        {"barPercentage", 0.8},
                        {"categoryPercentage", 0.9},
                        {"borderWidth", 0.5},
                        {"borderColor", "#ffffff"}});
  }
  ChartSpec chart;
  chart.id = "timeline";
  chart.title = fmt::format("One iteration: {}", ms_text(tl.at("iteration_seconds").get<double>()));
  chart.how_to_read = "Time runs left to right. The top row is the GPU's compute stream (forward and backward of "
                      "each accumulated micro-step, then the optimizer); the bottom row is the gradient all-reduce "
                      "on the network. Communication under compute is hidden; compute waiting for it is the exposed "
                      "part. Hover a block for what it is; consecutive ops of one kind are drawn as one block.";
  chart.config = {{"type", "bar"},
                  {"data", {{"labels", {"compute stream", "communication stream"}}, {"datasets", datasets}}},
                  {"options",
                   {{"indexAxis", "y"},
                    {"plugins", legend_bottom()},
                    {"scales", {{"x", axis("milliseconds since the step began", {{"type", "linear"}, {"min", 0},
                                                                                  {"max", tl.at("iteration_seconds").get<double>() * 1e3}})},
                                {"y", {{"type", "category"}, {"grid", {{"display", false}}}}}}}}}};
  chart.x_unit = AxisUnit::milliseconds;
  chart.height_px = 230;
  page.add_chart(chart);
  if (r.contains("trace") && !r.at("trace").is_null()) {
    page.add_paragraph("The full trace (every op, with flow arrows from the backward ops to the all-reduce that "
                       "carries their gradients) is embedded in this page. Save it, then open it in the Perfetto "
                       "UI (ui.perfetto.dev → Open trace file; the file is read in the browser, not uploaded) or "
                       "in Chrome's chrome://tracing.");
    page.add_download("Save the trace (Chrome / Perfetto JSON)", r.at("scenario").at("name").get<std::string>() + "-trace.json",
                      r.at("trace"));
  } else {
    page.add_paragraph(fmt::format("The full trace is not embedded ({}). Write it with `ptsim predict --scenario {} "
                                   "--trace trace.json` and open it in ui.perfetto.dev.",
                                   r.value("trace_omitted", std::string("not recorded")),
                                   r.at("scenario").at("name").get<std::string>()));
  }
}

void scaling_section(HtmlReport& page, const json& r) {
  const json& sc = r.at("scaling");
  const int own = sc.at("scenario_nodes").get<int>();
  page.begin_section("scaling", "Scaling with the number of nodes",
                     fmt::format("The same scenario simulated on {} to {} nodes of {} GPUs (the recipe per GPU is "
                                 "kept: micro-batch and accumulation, so the global batch grows with the cluster "
                                 "unless the scenario fixes it).",
                                 sc.at("rungs").front().at("nodes").get<int>(), sc.at("rungs").back().at("nodes").get<int>(),
                                 sc.at("gpus_per_node").get<int>()));
  // Perfect scaling from the smallest rung that ran: its time × (work ratio) ÷ (GPU ratio), the work being
  // the sequences trained on (more of them on a bigger cluster when the scenario fixes steps, not epochs).
  double largest = 0;
  const json* first_ok = nullptr;
  for (const auto& rung : sc.at("rungs"))
    if (rung.at("error").is_null()) {
      largest = std::max(largest, rung.at("time_to_train_seconds").get<double>());
      if (!first_ok) first_ok = &rung;
    }
  const TimeScale scale = time_scale(largest);
  json labels = json::array(), times = json::array(), ideal = json::array(), efficiency = json::array();
  for (const auto& rung : sc.at("rungs")) {
    const int nodes = rung.at("nodes").get<int>();
    labels.push_back(fmt::format("{}{}", nodes, nodes == own ? " (scenario)" : ""));
    if (!rung.at("error").is_null()) {
      times.push_back(nullptr);
      ideal.push_back(nullptr);
      efficiency.push_back(nullptr);
      continue;
    }
    times.push_back(rung.at("time_to_train_seconds").get<double>() / scale.seconds_per_unit);
    ideal.push_back(first_ok->at("time_to_train_seconds").get<double>() *
                    (rung.at("sequences").get<double>() / first_ok->at("sequences").get<double>()) *
                    (first_ok->at("gpus").get<double>() / rung.at("gpus").get<double>()) / scale.seconds_per_unit);
    auto e = number_or_null(rung, "scaling_efficiency");
    efficiency.push_back(e ? json(100 * *e) : json(nullptr));
  }
  json datasets = json::array(
      {{{"label", "time to train"}, {"data", times}, {"borderColor", chart_colour(0)}, {"backgroundColor", chart_colour(0)},
        {"yAxisID", "y"}, {"pointRadius", 4}, {"spanGaps", true}},
       {{"label", "perfect scaling"}, {"data", ideal}, {"borderColor", chart_colour(7)},
        {"borderDash", {5, 4}}, {"pointRadius", 0}, {"yAxisID", "y"}, {"spanGaps", true}},
       {{"label", "scaling efficiency"}, {"data", efficiency}, {"borderColor", chart_colour(1)},
        {"backgroundColor", chart_colour(1)}, {"yAxisID", "y2"}, {"pointRadius", 4}, {"pointStyle", "rectRot"},
        {"spanGaps", true}}});
  ChartSpec chart;
  chart.id = "scaling";
  chart.title = "Time to train and scaling efficiency as nodes grow";
  chart.how_to_read = fmt::format("Blue (left axis, {}; logarithmic): time to train; the dashed grey line is what "
                                  "perfect scaling from the smallest cluster would give (its time × the work "
                                  "÷ the GPUs, the work growing with the cluster when the scenario fixes steps). Orange (right axis): "
                                  "scaling efficiency, throughput per GPU against one GPU alone. Where blue bends "
                                  "away from grey, communication is eating the added GPUs.",
                                  scale.name);
  chart.config = {{"type", "line"},
                  {"data", {{"labels", labels}, {"datasets", datasets}}},
                  {"options",
                   {{"plugins", legend_bottom()},
                    {"interaction", {{"mode", "index"}, {"intersect", false}}},
                    {"scales", {{"x", axis("nodes", {{"type", "category"}})},
                                {"y", axis(fmt::format("time to train ({}, log scale)", scale.name), {{"type", "logarithmic"}, {"position", "left"}})},
                                {"y2", axis("scaling efficiency", {{"type", "linear"}, {"position", "right"}, {"min", 0}, {"max", 100},
                                                                   {"grid", {{"drawOnChartArea", false}}}})}}}}}};
  chart.y_unit = scale.unit;
  chart.y2_unit = AxisUnit::percent;
  chart.height_px = 360;
  page.add_chart(chart);
  HtmlTable t{{"nodes", "GPUs", "time to train", "scaling eff.", "TFLOP/s per GPU", "sequences/s", "rental", "note"},
              {},
              {true, true, true, true, true, true, true, false},
              "",
              {}};
  for (const auto& rung : sc.at("rungs")) {
    if (rung.at("nodes").get<int>() == own) t.highlighted_rows.push_back(t.rows.size());
    if (!rung.at("error").is_null()) {
      t.rows.push_back({std::to_string(rung.at("nodes").get<int>()), std::to_string(rung.at("gpus").get<int>()), "-",
                        "-", "-", "-", "-", rung.at("error").get<std::string>()});
      continue;
    }
    t.rows.push_back({std::to_string(rung.at("nodes").get<int>()), std::to_string(rung.at("gpus").get<int>()),
                      format_duration(rung.at("time_to_train_seconds").get<double>()),
                      dash_or(number_or_null(rung, "scaling_efficiency"), percent_text),
                      fmt::format("{:.1f}", rung.at("tflops_per_gpu").get<double>()),
                      fmt::format("{:.0f}", rung.at("throughput_seq_per_second").get<double>()),
                      dash_or(number_or_null(rung, "rental_usd"), usd_text), rung.at("nodes").get<int>() == own ? "the scenario" : ""});
  }
  t.caption = "Sequences/s is averaged over the phases, weighted by their time.";
  page.add_table(t);
}

void cost_section(HtmlReport& page, const json& r) {
  const json& c = r.at("cost");
  page.begin_section("cost", "Dollars: rental, spot and ownership",
                     "The same run paid three ways: renting on demand, renting spot capacity (cheaper, but "
                     "preemptions cost time), or owning the cluster (the run's share of the purchase over its "
                     "lifetime, plus electricity).");
  const auto rental = number_or_null(c, "rental_usd"), spot = number_or_null(c, "spot_usd"),
             ownership = number_or_null(c, "ownership_usd");
  if (!rental && !spot && !ownership) {
    page.add_paragraph("The scenario names no prices, so there are no dollar figures. Name a rental, spot or "
                       "purchase price under 'prices' (docs/cost-model.md), or pick a price set with --set prices.set=NAME.");
    return;
  }
  json labels = json::array(), values = json::array(), colours = json::array();
  if (rental) labels.push_back("rental (on demand)"), values.push_back(*rental), colours.push_back(chart_colour(0));
  if (spot) labels.push_back("spot"), values.push_back(*spot), colours.push_back(chart_colour(4));
  if (ownership) labels.push_back("ownership (this run's share)"), values.push_back(*ownership), colours.push_back(chart_colour(2));
  ChartSpec bars;
  bars.id = "cost";
  bars.title = "What this run costs";
  bars.how_to_read = "Each bar is the dollars of the whole run under one way of paying. Ownership counts only the "
                     "run's share of the purchase (its hours over the amortisation lifetime), so it is low; the "
                     "next chart shows what owning costs up front.";
  bars.config = {{"type", "bar"},
                 {"data", {{"labels", labels}, {"datasets", json::array({{{"label", "US dollars"}, {"data", values}, {"backgroundColor", colours}}})}}},
                 {"options",
                  {{"indexAxis", "y"},
                   {"plugins", {{"legend", {{"display", false}}}}},
                   {"scales", {{"x", axis("US dollars", {{"beginAtZero", true}})},
                               {"y", {{"type", "category"}, {"grid", {{"display", false}}}}}}}}}};
  bars.x_unit = AxisUnit::usd;
  bars.height_px = 90 + 45 * static_cast<int>(labels.size());
  page.add_chart(bars);

  const auto purchase = number_or_null(c, "purchase_usd"), per_hour = number_or_null(c, "rental_usd_per_hour"),
             break_even = number_or_null(c, "break_even_days");
  if (purchase && per_hour && break_even) {
    const double energy_per_hour = number_or_null(c, "energy_usd_per_hour").value_or(0);
    const double run_days = c.at("hours").get<double>() / 24;
    const double span = nice_ceiling(std::max(1.6 * *break_even, 2 * run_days));
    json rent = json::array({{{"x", 0}, {"y", 0}}, {{"x", span}, {"y", *per_hour * 24 * span}}});
    json own = json::array({{{"x", 0}, {"y", *purchase}}, {{"x", span}, {"y", *purchase + energy_per_hour * 24 * span}}});
    json point = json::array({{{"x", *break_even}, {"y", *purchase + energy_per_hour * 24 * *break_even},
                               {"name", fmt::format("break-even after {:.0f} days", *break_even)}}});
    json run = json::array({{{"x", run_days}, {"y", *per_hour * c.at("hours").get<double>()},
                             {"name", fmt::format("this run: {} rented", format_duration(run_days * 86400))}}});
    ChartSpec be;
    be.id = "break-even";
    be.title = fmt::format("Rent or buy: owning pays off after {:.0f} days of use", *break_even);
    be.how_to_read = "Total dollars against days the cluster is busy. Renting starts at zero and grows with every "
                     "hour; owning starts at the purchase price and grows only by electricity. Where the lines cross "
                     "is the break-even: a lab that keeps the cluster busy longer than that saves by buying.";
    be.config = {{"type", "line"},
                 {"data",
                  {{"datasets",
                    {{{"label", "renting on demand"}, {"data", rent}, {"borderColor", chart_colour(0)}, {"pointRadius", 0}},
                     {{"label", "owning (purchase + electricity)"}, {"data", own}, {"borderColor", chart_colour(2)}, {"pointRadius", 0}},
                     {{"label", "break-even"}, {"data", point}, {"type", "scatter"}, {"pointRadius", 7},
                      {"pointStyle", "rectRot"}, {"backgroundColor", chart_colour(3)}, {"borderColor", chart_colour(3)}},
                     {{"label", "this run"}, {"data", run}, {"type", "scatter"}, {"pointRadius", 6},
                      {"backgroundColor", chart_colour(1)}, {"borderColor", chart_colour(1)}}}}}},
                 {"options",
                  {{"plugins", legend_bottom()},
                   {"scales", {{"x", axis("days of use", {{"type", "linear"}, {"min", 0}, {"max", span}})},
                               {"y", axis("total US dollars", {{"type", "linear"}, {"beginAtZero", true}})}}}}}};
    be.x_unit = AxisUnit::days;
    be.y_unit = AxisUnit::usd;
    be.height_px = 330;
    page.add_chart(be);
  }
  HtmlTable t{{"figure", "US dollars", "how"}, {}, {false, true, false}, "", {}};
  if (rental) t.rows.push_back({"rental (on demand)", format_usd(*rental), c.at("rental_basis").get<std::string>()});
  if (spot)
    t.rows.push_back({"spot", format_usd(*spot),
                      fmt::format("spot price, plus {:.0f}% more time lost to preemptions and restarts",
                                  100 * c.at("spot_preemption_overhead").get<double>())});
  if (ownership)
    t.rows.push_back({"ownership (this run)", format_usd(*ownership),
                      fmt::format("purchase × run hours ÷ {:.0f}-year lifetime, + electricity {}",
                                  c.at("amortisation_years").get<double>(),
                                  dash_or(number_or_null(c, "energy_usd"), usd_text))});
  if (purchase) t.rows.push_back({"purchase (up front)", format_usd(*purchase), "nodes and network gear"});
  if (break_even)
    t.rows.push_back({"break-even", fmt::format("{:.0f} days", *break_even),
                      "purchase ÷ (rental per hour − electricity per hour), in days of continuous use"});
  page.add_table(t);
}

void memory_section(HtmlReport& page, const json& r) {
  const json& mem = r.at("memory");
  page.begin_section("memory", "Memory per GPU",
                     "What one GPU holds at the peak of a step, by category, against the device's memory. A "
                     "configuration that does not fit is refused before it is simulated.");
  std::vector<std::string> categories;
  for (const auto& ph : mem)
    for (const auto& c : ph.at("categories"))
      if (std::find(categories.begin(), categories.end(), c.at("category").get<std::string>()) == categories.end())
        categories.push_back(c.at("category").get<std::string>());
  json labels = json::array(), datasets = json::array();
  for (const auto& ph : mem) labels.push_back(ph.at("phase"));
  const double gib = 1024.0 * 1024 * 1024;
  for (size_t k = 0; k < categories.size(); ++k) {
    json data = json::array();
    for (const auto& ph : mem) {
      double bytes = 0;
      for (const auto& c : ph.at("categories"))
        if (c.at("category") == categories[k]) bytes = c.at("bytes").get<double>();
      data.push_back(bytes / gib);
    }
    datasets.push_back({{"label", categories[k]}, {"data", data}, {"backgroundColor", chart_colour(k)}});
  }
  json free = json::array();
  for (const auto& ph : mem)
    free.push_back(std::max(0.0, ph.at("device_bytes").get<double>() - ph.at("needed_bytes").get<double>()) / gib);
  datasets.push_back({{"label", "free"}, {"data", free}, {"backgroundColor", "#eceff2"}, {"borderColor", "#c4cad0"},
                      {"borderWidth", 1}});
  ChartSpec chart;
  chart.id = "memory";
  chart.title = fmt::format("Memory per GPU against the device's {}", format_gib(mem.front().at("device_bytes").get<double>()));
  chart.how_to_read = "One bar per phase, as long as the GPU's memory. Coloured pieces are what the step needs; "
                      "the pale grey end is what is left free. Activations grow with micro-batch × sequence length; "
                      "weights, gradients and optimizer state do not.";
  chart.config = {{"type", "bar"},
                  {"data", {{"labels", labels}, {"datasets", datasets}}},
                  {"options",
                   {{"indexAxis", "y"},
                    {"plugins", legend_bottom()},
                    {"scales", {{"x", axis("GiB", {{"stacked", true}, {"min", 0}, {"max", mem.front().at("device_bytes").get<double>() / gib}})},
                                {"y", {{"type", "category"}, {"stacked", true}, {"grid", {{"display", false}}}}}}}}}};
  chart.x_unit = AxisUnit::gib;
  chart.height_px = 170 + 45 * static_cast<int>(labels.size());
  page.add_chart(chart);
  std::vector<std::string> header = {"category"};
  std::vector<bool> numeric = {false};
  for (const auto& ph : mem) header.push_back(ph.at("phase").get<std::string>()), numeric.push_back(true);
  HtmlTable t{header, {}, numeric, "", {}};
  for (const auto& name : categories) {
    std::vector<std::string> row = {name};
    for (const auto& ph : mem) {
      double bytes = 0;
      for (const auto& c : ph.at("categories"))
        if (c.at("category") == name) bytes = c.at("bytes").get<double>();
      row.push_back(format_gib(bytes));
    }
    t.rows.push_back(row);
  }
  std::vector<std::string> needed = {"needed"}, device = {"device"};
  for (const auto& ph : mem) {
    needed.push_back(format_gib(ph.at("needed_bytes").get<double>()));
    device.push_back(format_gib(ph.at("device_bytes").get<double>()));
  }
  t.rows.push_back(needed);
  t.rows.push_back(device);
  t.highlighted_rows = {t.rows.size() - 2};
  page.add_table(t);
}

void sweep_section(HtmlReport& page, const json& sw) {
  page.begin_section("sweep", "Sweep: the time–dollar frontier",
                     fmt::format("{} configurations from {} (base '{}'), {} feasible. Faster plans cost more; the "
                                 "frontier keeps the plans no other plan beats on both time and dollars.",
                                 sw.at("configurations").size(), sw.at("source_file").get<std::string>(),
                                 sw.value("base", std::string("?")), sw.value("counts", json::object()).value("feasible", 0)));
  std::map<size_t, const json*> by_index;
  for (const auto& c : sw.at("configurations")) by_index[c.at("index").get<size_t>()] = &c;
  const bool has_recommended = sw.contains("recommended") && !sw.at("recommended").is_null();
  const size_t recommended_index = has_recommended ? sw.at("recommended").get<size_t>() : 0;
  if (has_recommended) {
    const json& c = *by_index.at(recommended_index);
    const std::string basis = sw.value("constraints", json::object()).value("budget_basis", std::string("rental"));
    const auto dollars = number_or_null(c, (basis + "_usd").c_str());
    page.add_key_figures({{"recommended plan", fmt::format("#{}", recommended_index), settings_text(c)},
                          {"its time", format_duration(c.at("time_to_train_seconds").get<double>()),
                           fmt::format("{} GPUs", c.at("gpus").get<int>())},
                          {fmt::format("its {} cost", basis), dash_or(dollars, usd_text),
                           "objective: " + sw.value("objective", std::string("?"))}});
  } else {
    page.add_paragraph("The sweep recommends no plan: no feasible configuration meets its constraints.");
  }
  double largest = 0;
  for (const auto& c : sw.at("configurations"))
    if (c.at("feasible").get<bool>()) largest = std::max(largest, c.at("time_to_train_seconds").get<double>());
  const TimeScale scale = time_scale(largest);
  for (const char* basis : {"rental", "spot", "ownership"}) {
    const std::string key = std::string(basis) + "_usd";
    json all = json::array(), frontier = json::array(), marked = json::array();
    for (const auto& c : sw.at("configurations")) {
      if (!c.at("feasible").get<bool>()) continue;
      auto dollars = number_or_null(c, key.c_str());
      if (!dollars) continue;
      all.push_back({{"x", c.at("time_to_train_seconds").get<double>() / scale.seconds_per_unit}, {"y", *dollars},
                     {"name", fmt::format("#{} {}", c.at("index").get<size_t>(), settings_text(c))}});
    }
    if (all.empty()) continue;
    if (sw.at("frontier").contains(basis))
      for (const auto& i : sw.at("frontier").at(basis)) {
        const json& c = *by_index.at(i.get<size_t>());
        auto dollars = number_or_null(c, key.c_str());
        if (dollars)
          frontier.push_back({{"x", c.at("time_to_train_seconds").get<double>() / scale.seconds_per_unit}, {"y", *dollars},
                              {"name", fmt::format("frontier #{} {}", c.at("index").get<size_t>(), settings_text(c))}});
      }
    if (has_recommended) {
      const json& c = *by_index.at(recommended_index);
      if (auto dollars = number_or_null(c, key.c_str()))
        marked.push_back({{"x", c.at("time_to_train_seconds").get<double>() / scale.seconds_per_unit}, {"y", *dollars},
                          {"name", fmt::format("recommended #{} {}", recommended_index, settings_text(c))}});
    }
    ChartSpec chart;
    chart.id = std::string("frontier-") + basis;
    chart.title = fmt::format("Time against {} dollars", basis);
    chart.how_to_read = "Each grey dot is one configuration of the sweep; down and to the left is better (faster "
                        "and cheaper). The blue line joins the frontier: for each time, the cheapest plan. The "
                        "red star is the recommended plan. Hover a dot for its settings. Both axes are logarithmic.";
    chart.config = {{"type", "scatter"},
                    {"data",
                     {{"datasets",
                       {{{"label", "recommended"}, {"data", marked}, {"pointStyle", "star"}, {"pointRadius", 12},
                         {"borderWidth", 2.5}, {"borderColor", chart_colour(3)}, {"backgroundColor", chart_colour(3)}},
                        {{"label", "frontier"}, {"data", frontier}, {"showLine", true}, {"borderColor", chart_colour(0)},
                         {"backgroundColor", chart_colour(0)}, {"pointRadius", 4}},
                        {{"label", "all feasible configurations"}, {"data", all}, {"backgroundColor", "rgba(91,103,112,0.35)"},
                         {"borderColor", "rgba(91,103,112,0.6)"}, {"pointRadius", 3}}}}}},
                    {"options",
                     {{"plugins", legend_bottom()},
                      {"scales", {{"x", axis(fmt::format("time to train ({}, log scale)", scale.name), {{"type", "logarithmic"}})},
                                  {"y", axis(fmt::format("{} US dollars (log scale)", basis), {{"type", "logarithmic"}})}}}}}};
    chart.x_unit = scale.unit;
    chart.y_unit = AxisUnit::usd;
    chart.height_px = 400;
    page.add_chart(chart);
    HtmlTable t{{"#", "settings", "GPUs", "time to train", std::string(basis) + " $", "scaling eff."}, {}, {true, false, true, true, true, true}, "", {}};
    if (sw.at("frontier").contains(basis))
      for (const auto& i : sw.at("frontier").at(basis)) {
        const json& c = *by_index.at(i.get<size_t>());
        if (has_recommended && i.get<size_t>() == recommended_index) t.highlighted_rows.push_back(t.rows.size());
        t.rows.push_back({std::to_string(i.get<size_t>()), settings_text(c), std::to_string(c.at("gpus").get<int>()),
                          format_duration(c.at("time_to_train_seconds").get<double>()),
                          dash_or(number_or_null(c, key.c_str()), usd_text),
                          dash_or(number_or_null(c, "scaling_efficiency"), percent_text)});
      }
    t.caption = fmt::format("The {} frontier, fastest first{}.", basis, has_recommended ? "; the highlighted row is the recommended plan" : "");
    page.add_table(t);
  }
  const json counts = sw.value("counts", json::object());
  if (counts.contains("infeasible") && counts.at("infeasible").is_object() && !counts.at("infeasible").empty()) {
    std::vector<std::string> items;
    for (const auto& [kind, n] : counts.at("infeasible").items()) items.push_back(fmt::format("{}: {}", kind, n.dump()));
    page.add_paragraph("Configurations left out as infeasible, by reason:");
    page.add_list(items);
  }
}

}  // namespace

std::string render_scenario_report(const json& r, const std::string& chart_library) {
  const json& sc = r.at("scenario");
  HtmlReport page(fmt::format("ptsim report — {}", sc.at("name").get<std::string>()),
                  fmt::format("{} on {} × {} ({} GPUs) over {}", sc.at("model").get<std::string>(),
                              sc.at("nodes").get<int>(), sc.at("node").get<std::string>(),
                              r.at("prediction").at("gpus").get<int>(), sc.at("network").get<std::string>()));
  overview_section(page, r);
  scenario_section(page, r);
  time_section(page, r);
  step_section(page, r);
  timeline_section(page, r);
  scaling_section(page, r);
  cost_section(page, r);
  memory_section(page, r);
  if (r.contains("sweep")) sweep_section(page, r.at("sweep"));
  // The figures the page was drawn from, trace left out (it has its own block): tests and scripts read them.
  json data = r;
  data.erase("trace");
  page.set_data("ptsim-report-data", data);
  return page.render(chart_library);
}

}  // namespace ptsim::reports
