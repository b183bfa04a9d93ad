// reports/calibration_report.cpp — render_calibration_report (see the header): per fit, the prediction
// error of every run (published mode) or op kind (measured mode) before and after the fit as paired bars,
// the fitted values, and the numbers in tables.
#include "reports/calibration_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "reports/html_report.hpp"

namespace ptsim::reports {

namespace {

using nlohmann::json;

struct Item {
  std::string label, role;
  double measured = 0, before = 0, after = 0;
};

double error_percent(double predicted, double measured) { return 100 * (predicted / measured - 1); }

std::string values_text(const json& values) {
  std::vector<std::string> parts;
  for (const auto& [parameter, value] : values.items()) parts.push_back(fmt::format("{} = {:.4g}", parameter, value.get<double>()));
  return parts.empty() ? "(none)" : fmt::format("{}", fmt::join(parts, ", "));
}

// Paired bars of the error before and after the fit, one row per item.
ChartSpec error_chart(const std::string& id, const std::string& title, const std::vector<Item>& items) {
  json labels = json::array(), before = json::array(), after = json::array();
  double extent = 5;
  for (const auto& it : items) {
    labels.push_back(it.role.empty() ? it.label : fmt::format("{} ({})", it.label, it.role));
    const double b = error_percent(it.before, it.measured), a = error_percent(it.after, it.measured);
    before.push_back(b);
    after.push_back(a);
    extent = std::max({extent, std::abs(b), std::abs(a)});
  }
  const double limit = std::ceil(extent * 1.1 / 5) * 5;
  ChartSpec c;
  c.id = id;
  c.title = title;
  c.how_to_read = "One row per item: the grey bar is the prediction's error before the fit, the blue bar after it "
                  "((predicted − measured) ÷ measured). Bars that shrink towards the zero line are what the fit "
                  "fixed; held-out items were not used by the fit, so they show whether it generalises.";
  c.config = {{"type", "bar"},
              {"data",
               {{"labels", labels},
                {"datasets",
                 {{{"label", "before the fit"}, {"data", before}, {"backgroundColor", "rgba(91,103,112,0.45)"}},
                  {{"label", "after the fit"}, {"data", after}, {"backgroundColor", chart_colour(0)}}}}}},
              {"options",
               {{"indexAxis", "y"},
                {"plugins", {{"legend", {{"position", "bottom"}}}}},
                {"scales",
                 {{"x", {{"type", "linear"}, {"min", -limit}, {"max", limit},
                         {"title", {{"display", true}, {"text", "prediction error (% of measured)"}}},
                         {"grid", {{"color", "#e6e9ed"}}}}},
                  {"y", {{"type", "category"}, {"grid", {{"display", false}}}}}}}}}};
  c.x_unit = AxisUnit::percent;
  c.height_px = 110 + 44 * static_cast<int>(items.size());
  return c;
}

HtmlTable items_table(const std::vector<Item>& items, const std::string& first, const std::string& unit,
                      double scale) {
  HtmlTable t{{first, "role", "measured " + unit, "before", "error", "after", "error"},
              {},
              {false, false, true, true, true, true, true},
              "",
              {}};
  for (const auto& it : items)
    t.rows.push_back({it.label, it.role.empty() ? "-" : it.role, fmt::format("{:.3f}", it.measured * scale),
                      fmt::format("{:.3f}", it.before * scale), fmt::format("{:+.1f}%", error_percent(it.before, it.measured)),
                      fmt::format("{:.3f}", it.after * scale), fmt::format("{:+.1f}%", error_percent(it.after, it.measured))});
  return t;
}

void published_page(HtmlReport& page, const json& c) {
  for (const auto& g : c.at("groups")) {
    const std::string group = g.at("group").get<std::string>();
    page.begin_section("group-" + group, "Fit group " + group, g.value("why", std::string()));
    page.add_definitions({{"fitted values", values_text(g.at("values"))}, {"runs file", c.value("runs_file", std::string())}});
    std::vector<Item> items;
    for (const auto& r : g.at("runs"))
      items.push_back({r.at("id").get<std::string>(), r.at("role").get<std::string>(), r.at("measured").get<double>(),
                       r.at("predicted_before").get<double>(), r.at("predicted_after").get<double>()});
    page.add_chart(error_chart("fit-" + group, "Published single-GPU throughputs: error before and after the fit", items));
    HtmlTable t = items_table(items, "run", "seq/s", 1);
    t.caption = "Throughputs in sequences per second; role 'fit' runs set the parameters, 'holdout' runs test them.";
    page.add_table(t);
  }
}

void measured_page(HtmlReport& page, const json& c) {
  page.begin_section("fit", fmt::format("Fit of {} to measured per-op times", c.at("device").get<std::string>()),
                     "Per-op times measured by `ptsim train --op-times` on this machine against the simulator's "
                     "prediction of the same ops, before and after the fit.");
  std::vector<std::pair<std::string, std::string>> terms = {{"fitted values", values_text(c.at("values"))}};
  terms.emplace_back("fitted on", fmt::format("{}", fmt::join(c.at("files").get<std::vector<std::string>>(), ", ")));
  if (!c.at("holdout_files").empty())
    terms.emplace_back("held out", fmt::format("{}", fmt::join(c.at("holdout_files").get<std::vector<std::string>>(), ", ")));
  page.add_definitions(terms);
  if (c.value("kept_prior", false))
    page.add_paragraph("The fit would have made the fit step's error worse, so the prior parameters were kept: the "
                       "'after' figures below are the prior ones, and --write writes nothing.");
  std::vector<Item> kinds, steps;
  for (const auto& k : c.at("kinds"))
    kinds.push_back({k.at("kind").get<std::string>(), "", k.at("measured_seconds").get<double>(),
                     k.at("predicted_before").get<double>(), k.at("predicted_after").get<double>()});
  for (const auto& s : c.at("steps"))
    steps.push_back({s.at("what").get<std::string>(), "", s.at("measured_seconds").get<double>(),
                     s.at("predicted_before").get<double>(), s.at("predicted_after").get<double>()});
  page.add_chart(error_chart("fit-steps", "The whole step: error before and after the fit", steps));
  page.add_table(items_table(steps, "step", "s", 1));
  page.add_chart(error_chart("fit-kinds", "Per op kind: error before and after the fit", kinds));
  HtmlTable t = items_table(kinds, "op kind", "ms/step", 1e3);
  t.caption = "Milliseconds per optimizer step, summed over the ops of each kind.";
  page.add_table(t);
}

}  // namespace

std::string render_calibration_report(const json& c, const std::string& chart_library) {
  const bool published = c.at("mode") == "published";
  HtmlReport page(published ? "ptsim calibrate published — the compute model against published runs"
                            : "ptsim calibrate measured — the device profile against measured op times",
                  "Measured against predicted, before and after the fit.");
  if (published) published_page(page, c);
  else measured_page(page, c);
  page.set_data("ptsim-calibration-data", c);
  return page.render(chart_library);
}

}  // namespace ptsim::reports
