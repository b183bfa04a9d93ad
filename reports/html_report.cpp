// reports/html_report.cpp — the self-contained HTML page: layout, styles, escaping, the inlined Chart.js
// and the few lines of script that hand each chart's JSON configuration to it (see the header).
#include "reports/html_report.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "core/error.hpp"

#ifndef PTSIM_CHARTJS_PATH
#define PTSIM_CHARTJS_PATH "/usr/share/javascript/chart.js/chart.min.js"
#endif

namespace ptsim::reports {

namespace {

// Okabe & Ito (2008), "Color Universal Design": distinguishable with the common colour-vision deficiencies.
// Black is replaced by a slate grey; the order puts the most distinct colours first.
constexpr const char* kPalette[][2] = {
    {"#0072B2", "0,114,178"},   {"#E69F00", "230,159,0"},  {"#009E73", "0,158,115"}, {"#D55E00", "213,94,0"},
    {"#56B4E9", "86,180,233"},  {"#CC79A7", "204,121,167"}, {"#F0E442", "240,228,66"}, {"#5B6770", "91,103,112"},
};
constexpr size_t kPaletteSize = sizeof(kPalette) / sizeof(kPalette[0]);

const char* unit_name(AxisUnit u) {
  switch (u) {
    case AxisUnit::plain: return "plain";
    case AxisUnit::seconds: return "seconds";
    case AxisUnit::minutes: return "minutes";
    case AxisUnit::hours: return "hours";
    case AxisUnit::days: return "days";
    case AxisUnit::milliseconds: return "milliseconds";
    case AxisUnit::usd: return "usd";
    case AxisUnit::percent: return "percent";
    case AxisUnit::gib: return "gib";
    case AxisUnit::count: return "count";
  }
  return "plain";
}

// Digits grouped by thousands: 25739 → "25,739".
std::string group_thousands(double value, int decimals) {
  std::string digits = fmt::format("{:.{}f}", std::abs(value), decimals);
  const size_t dot = digits.find('.');
  std::string integer = digits.substr(0, dot), fraction = dot == std::string::npos ? "" : digits.substr(dot);
  std::string grouped;
  for (size_t i = 0; i < integer.size(); ++i) {
    if (i > 0 && (integer.size() - i) % 3 == 0) grouped += ',';
    grouped += integer[i];
  }
  return (value < 0 ? "-" : "") + grouped + fraction;
}

constexpr const char* kStyle = R"css(
:root { --ink:#1d2430; --muted:#5b6770; --rule:#d9dee3; --paper:#ffffff; --wash:#f4f6f8; --accent:#0072B2; }
* { box-sizing: border-box; }
body { margin:0; background:var(--wash); color:var(--ink);
  font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "Noto Sans", "DejaVu Sans", sans-serif; }
header.page { background:#1d2430; color:#fff; padding:28px 0 22px; }
header.page h1 { margin:0 0 4px; font-size:26px; font-weight:650; letter-spacing:-0.01em; }
header.page p { margin:0; color:#c9d1d9; }
.wrap { max-width:1120px; margin:0 auto; padding:0 28px; }
nav.toc { background:#fff; border-bottom:1px solid var(--rule); padding:8px 0; position:sticky; top:0; z-index:5; }
nav.toc .wrap { display:flex; flex-wrap:wrap; gap:4px 18px; }
nav.toc a { color:var(--accent); text-decoration:none; font-size:14px; white-space:nowrap; }
nav.toc a:hover { text-decoration:underline; }
section { background:var(--paper); border:1px solid var(--rule); border-radius:8px; margin:22px 0; padding:20px 26px 22px; }
section h2 { margin:0 0 6px; font-size:20px; font-weight:650; }
section > p.intro { margin:0 0 14px; color:var(--muted); max-width:80ch; }
p { max-width:90ch; }
.note { color:var(--muted); font-size:13px; }
.figures { display:grid; grid-template-columns:repeat(auto-fill, minmax(190px, 1fr)); gap:12px; margin:8px 0 14px; }
.figure { background:var(--wash); border-radius:6px; padding:10px 14px; }
.figure .label { color:var(--muted); font-size:12px; text-transform:uppercase; letter-spacing:0.04em; }
.figure .value { font-size:22px; font-weight:650; font-variant-numeric:tabular-nums; }
.figure .fnote { color:var(--muted); font-size:12px; }
dl.defs { display:grid; grid-template-columns:max-content 1fr; gap:4px 18px; margin:6px 0 14px; }
dl.defs dt { color:var(--muted); }
dl.defs dd { margin:0; }
table { border-collapse:collapse; margin:8px 0 6px; font-size:14px; width:100%; }
th, td { padding:6px 10px; border-bottom:1px solid var(--rule); text-align:left; vertical-align:top; }
th { background:var(--wash); font-weight:600; font-size:13px; color:#36414c; }
td.nw { white-space:nowrap; }
td.num, th.num { text-align:right; font-variant-numeric:tabular-nums; white-space:nowrap; }
tr.hl td { background:#eaf3fb; font-weight:600; }
.tablewrap { overflow-x:auto; }
figure.chart { margin:14px 0 18px; }
figure.chart h3 { margin:0 0 2px; font-size:16px; font-weight:620; }
figure.chart .how { margin:0 0 8px; color:var(--muted); font-size:13.5px; max-width:95ch; }
figure.chart .how b { color:#36414c; font-weight:600; }
.canvasbox { position:relative; width:100%; }
button.download { font:inherit; font-size:14px; padding:6px 14px; border-radius:6px; border:1px solid var(--accent);
  background:#fff; color:var(--accent); cursor:pointer; margin:4px 0 8px; }
button.download:hover { background:#eaf3fb; }
code { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size:13px; background:var(--wash); padding:1px 4px; border-radius:3px; }
footer { color:var(--muted); font-size:12.5px; padding:8px 0 30px; }
@media print { nav.toc { display:none; } section { break-inside:avoid; border:none; } body { background:#fff; } }
)css";

// The page's only script besides Chart.js: unit formatting of ticks and tooltips, then one Chart per
// <script class="ptsim-chart"> configuration; and the download buttons. No chart drawing of its own.
constexpr const char* kGlue = R"js(
(function () {
  'use strict';
  function num(v, d) { return Number(v).toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: 0 }); }
  function sig(v) { var a = Math.abs(v); return a >= 100 ? num(v, 0) : a >= 10 ? num(v, 1) : a >= 1 ? num(v, 2) : Number(v.toPrecision(2)).toString(); }
  var formats = {
    plain: function (v) { return sig(v); },
    count: function (v) { return num(v, 0); },
    seconds: function (v) { return sig(v) + ' s'; },
    milliseconds: function (v) { return sig(v) + ' ms'; },
    minutes: function (v) { return sig(v) + ' min'; },
    hours: function (v) { return sig(v) + ' h'; },
    days: function (v) { return sig(v) + ' d'; },
    usd: function (v) { var a = Math.abs(v); return a >= 1e6 ? '$' + num(v / 1e6, 2) + 'M' : a >= 1e4 ? '$' + num(v / 1e3, 1) + 'k' : '$' + num(v, 0); },
    percent: function (v) { return sig(v) + '%'; },
    gib: function (v) { return sig(v) + ' GiB'; }
  };
  Chart.defaults.font.family = getComputedStyle(document.body).fontFamily;
  Chart.defaults.font.size = 13;
  Chart.defaults.color = '#36414c';
  Chart.defaults.animation = false;
  Chart.defaults.maintainAspectRatio = false;
  Chart.defaults.plugins.legend.labels.boxWidth = 14;
  document.querySelectorAll('script.ptsim-chart').forEach(function (node) {
    var config = JSON.parse(node.textContent);
    var units = { x: formats[node.dataset.x] || formats.plain, y: formats[node.dataset.y] || formats.plain,
                  y2: formats[node.dataset.y2] || formats.plain };
    var options = config.options = config.options || {};
    options.scales = options.scales || {};
    ['x', 'y', 'y2'].forEach(function (axis) {
      var scale = options.scales[axis];
      if (!scale || scale.type === 'category') return;
      scale.ticks = scale.ticks || {};
      scale.ticks.callback = function (v) {
        // Logarithmic axes over a decade or more label 1, 2 and 5 × 10^k only; narrower ones label every tick.
        if (scale.type === 'logarithmic' && this.max / this.min >= 10) {
          var m = v / Math.pow(10, Math.floor(Math.log10(v)));
          if ([1, 2, 5].indexOf(Math.round(m)) < 0) return '';
        }
        return units[axis](v);
      };
    });
    options.plugins = options.plugins || {};
    options.plugins.tooltip = options.plugins.tooltip || {};
    options.plugins.tooltip.callbacks = {
      label: function (ctx) {
        var ds = ctx.dataset, raw = ctx.raw, valueAxis = (options.indexAxis === 'y') ? 'x' : (ds.yAxisID || 'y');
        var label = ds.label ? ds.label + ': ' : '';
        if (raw && typeof raw === 'object' && !Array.isArray(raw) && 'x' in raw && 'y' in raw) {
          var x = Array.isArray(raw.x) ? units.x(raw.x[0]) + ' – ' + units.x(raw.x[1]) + ' (' + units.x(raw.x[1] - raw.x[0]) + ')' : units.x(raw.x);
          return (raw.name ? raw.name + ' — ' : label) + (config.type === 'bar' ? x : x + ', ' + units[ds.yAxisID || 'y'](raw.y));
        }
        if (Array.isArray(raw)) return label + units[valueAxis](raw[0]) + ' – ' + units[valueAxis](raw[1]);
        return label + units[valueAxis](ctx.parsed[valueAxis === 'y2' ? 'y' : valueAxis]);
      }
    };
    new Chart(document.getElementById(node.dataset.for), config);
  });
  document.querySelectorAll('button.download').forEach(function (button) {
    button.addEventListener('click', function () {
      var text = JSON.stringify(JSON.parse(document.getElementById(button.dataset.source).textContent));
      var url = URL.createObjectURL(new Blob([text], { type: 'application/json' }));
      var a = document.createElement('a');
      a.href = url; a.download = button.dataset.filename; document.body.appendChild(a); a.click();
      setTimeout(function () { URL.revokeObjectURL(url); a.remove(); }, 1000);
    });
  });
})();
)js";

// Escaped text in which `backquoted` spans (commands, flags, file names) become <code>.
std::string inline_html(std::string_view text) {
  std::string out;
  bool in_code = false;
  size_t start = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '`') continue;
    out += html_escape(text.substr(start, i - start));
    out += in_code ? "</code>" : "<code>";
    in_code = !in_code;
    start = i + 1;
  }
  out += html_escape(text.substr(start));
  if (in_code) out += "</code>";  // an unmatched backquote: close the span it opened
  return out;
}

std::string table_html(const HtmlTable& t) {
  auto numeric = [&](size_t c) { return c < t.numeric.size() && t.numeric[c]; };
  std::string out = "<div class=\"tablewrap\"><table>\n<thead><tr>";
  for (size_t c = 0; c < t.header.size(); ++c)
    out += fmt::format("<th{}>{}</th>", numeric(c) ? " class=\"num\"" : "", html_escape(t.header[c]));
  out += "</tr></thead>\n<tbody>\n";
  for (size_t r = 0; r < t.rows.size(); ++r) {
    bool hl = false;
    for (size_t h : t.highlighted_rows) hl = hl || h == r;
    out += hl ? "<tr class=\"hl\">" : "<tr>";
    for (size_t c = 0; c < t.rows[r].size(); ++c)
      out += fmt::format("<td{}>{}</td>",
                         numeric(c) ? " class=\"num\"" : t.rows[r][c].size() <= 30 ? " class=\"nw\"" : "",
                         html_escape(t.rows[r][c]));
    out += "</tr>\n";
  }
  out += "</tbody></table></div>\n";
  if (!t.caption.empty()) out += "<p class=\"note\">" + inline_html(t.caption) + "</p>\n";
  return out;
}

}  // namespace

std::string html_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string json_for_html_script(const nlohmann::json& value) {
  // '<', '>' and '&' occur in JSON text only inside strings, where \u escapes mean the same characters.
  const std::string text = value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (c == '<') out += "\\u003c";
    else if (c == '>') out += "\\u003e";
    else if (c == '&') out += "\\u0026";
    else out += c;
  }
  return out;
}

std::string chart_library_path() {
  const char* override_path = std::getenv("PTSIM_CHARTJS");
  if (override_path && *override_path) return override_path;
  return PTSIM_CHARTJS_PATH;
}

std::string load_chart_library() {
  const std::string path = chart_library_path();
  const char* how = std::getenv("PTSIM_CHARTJS") && *std::getenv("PTSIM_CHARTJS")
                        ? "set by $PTSIM_CHARTJS"
                        : "the build's chartjs_path; $PTSIM_CHARTJS overrides it";
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw core::InputError(fmt::format("the chart library {} ({}) cannot be read: install the Debian package {} "
                                       "(tools/bootstrap.sh does), or point $PTSIM_CHARTJS at Chart.js 3 or 4 "
                                       "(chart.umd.js / chart.min.js)",
                                       path, how, kChartLibraryPackage));
  std::ostringstream text;
  text << in.rdbuf();
  std::string js = text.str();
  if (js.find("Chart") == std::string::npos || js.size() < 10000)
    throw core::InputError(fmt::format("the chart library {} ({}) is not Chart.js: install the Debian package {}",
                                       path, how, kChartLibraryPackage));
  // Inlined in a <script> element: a literal "</script" (in a string of the library) would end it early;
  // "<\/script" is the same string to JavaScript.
  for (const char* tag : {"</script", "</SCRIPT", "</Script"})
    for (size_t at = js.find(tag); at != std::string::npos; at = js.find(tag, at + 2)) js.replace(at, 2, "<\\/");
  return js;
}

std::string chart_colour(size_t i) { return kPalette[i % kPaletteSize][0]; }
std::string chart_colour(size_t i, double alpha) {
  return fmt::format("rgba({},{:.2f})", kPalette[i % kPaletteSize][1], alpha);
}

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds)) return "-";
  if (seconds >= 2 * 86400) return fmt::format("{:.2f} days", seconds / 86400);
  if (seconds >= 2 * 3600) return fmt::format("{:.1f} h", seconds / 3600);
  if (seconds >= 120) return fmt::format("{:.1f} min", seconds / 60);
  if (seconds >= 1) return fmt::format("{:.2f} s", seconds);
  return fmt::format("{:.1f} ms", seconds * 1e3);
}

std::string format_usd(double usd) {
  if (!std::isfinite(usd)) return "-";
  return fmt::format("${}", group_thousands(usd, std::abs(usd) < 100 ? 2 : 0));
}

std::string format_percent(double fraction, int decimals) { return fmt::format("{:.{}f}%", 100 * fraction, decimals); }

std::string format_gib(double bytes) { return fmt::format("{:.2f} GiB", bytes / (1024.0 * 1024 * 1024)); }

HtmlReport::HtmlReport(std::string title, std::string subtitle)
    : title_(std::move(title)), subtitle_(std::move(subtitle)) {}

HtmlReport::Section& HtmlReport::current() {
  if (sections_.empty()) sections_.push_back({"overview", "", ""});
  return sections_.back();
}

void HtmlReport::begin_section(std::string id, std::string heading, std::string intro) {
  Section s{std::move(id), std::move(heading), ""};
  if (!intro.empty()) s.body += "<p class=\"intro\">" + inline_html(intro) + "</p>\n";
  sections_.push_back(std::move(s));
}

void HtmlReport::add_paragraph(std::string text) { current().body += "<p>" + inline_html(text) + "</p>\n"; }

void HtmlReport::add_note(std::string text) { current().body += "<p class=\"note\">" + inline_html(text) + "</p>\n"; }

void HtmlReport::add_key_figures(const std::vector<KeyFigure>& figures) {
  std::string out = "<div class=\"figures\">\n";
  for (const auto& f : figures) {
    out += fmt::format("<div class=\"figure\"><div class=\"label\">{}</div><div class=\"value\">{}</div>",
                       html_escape(f.label), html_escape(f.value));
    if (!f.note.empty()) out += "<div class=\"fnote\">" + html_escape(f.note) + "</div>";
    out += "</div>\n";
  }
  current().body += out + "</div>\n";
}

void HtmlReport::add_list(const std::vector<std::string>& items) {
  std::string out = "<ul>\n";
  for (const auto& item : items) out += "<li>" + html_escape(item) + "</li>\n";
  current().body += out + "</ul>\n";
}

void HtmlReport::add_definitions(const std::vector<std::pair<std::string, std::string>>& terms) {
  std::string out = "<dl class=\"defs\">\n";
  for (const auto& [term, value] : terms)
    out += fmt::format("<dt>{}</dt><dd>{}</dd>\n", html_escape(term), html_escape(value));
  current().body += out + "</dl>\n";
}

void HtmlReport::add_table(const HtmlTable& table) { current().body += table_html(table); }

void HtmlReport::add_chart(const ChartSpec& c) {
  const std::string canvas = "chart-" + c.id;
  std::string out = "<figure class=\"chart\">\n";
  out += "<h3>" + html_escape(c.title) + "</h3>\n";
  if (!c.how_to_read.empty()) out += "<p class=\"how\"><b>How to read this:</b> " + inline_html(c.how_to_read) + "</p>\n";
  out += fmt::format("<div class=\"canvasbox\" style=\"height:{}px\"><canvas id=\"{}\" role=\"img\" aria-label=\"{}\"></canvas></div>\n",
                     c.height_px, html_escape(canvas), html_escape(c.title));
  out += fmt::format("<script type=\"application/json\" class=\"ptsim-chart\" data-for=\"{}\" data-x=\"{}\" "
                     "data-y=\"{}\" data-y2=\"{}\">{}</script>\n",
                     html_escape(canvas), unit_name(c.x_unit), unit_name(c.y_unit), unit_name(c.y2_unit),
                     json_for_html_script(c.config));
  current().body += out + "</figure>\n";
}

void HtmlReport::add_download(std::string label, std::string filename, const nlohmann::json& data) {
  const std::string id = fmt::format("download-{}", downloads_++);
  current().body += fmt::format("<script type=\"application/json\" id=\"{}\">{}</script>\n", id, json_for_html_script(data));
  current().body += fmt::format("<button class=\"download\" data-source=\"{}\" data-filename=\"{}\">{}</button>\n", id,
                                html_escape(filename), html_escape(label));
}

void HtmlReport::set_data(std::string id, nlohmann::json data) { data_.emplace_back(std::move(id), std::move(data)); }

std::string HtmlReport::render(const std::string& chart_library) const {
  std::string out = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  out += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  out += "<title>" + html_escape(title_) + "</title>\n<style>" + kStyle + "</style>\n</head>\n<body>\n";
  out += "<header class=\"page\"><div class=\"wrap\"><h1>" + html_escape(title_) + "</h1>";
  if (!subtitle_.empty()) out += "<p>" + html_escape(subtitle_) + "</p>";
  out += "</div></header>\n<nav class=\"toc\"><div class=\"wrap\">";
  for (const auto& s : sections_)
    if (!s.heading.empty())
      out += fmt::format("<a href=\"#{}\">{}</a>", html_escape(s.id), html_escape(s.heading));
  out += "</div></nav>\n<main class=\"wrap\">\n";
  for (const auto& s : sections_) {
    out += fmt::format("<section id=\"{}\">\n", html_escape(s.id));
    if (!s.heading.empty()) out += "<h2>" + html_escape(s.heading) + "</h2>\n";
    out += s.body + "</section>\n";
  }
  out += "</main>\n<footer><div class=\"wrap\">Made by ptsim. Self-contained: the charts are drawn by Chart.js, "
         "inlined in this file; nothing is fetched when it is opened.</div></footer>\n";
  for (const auto& [id, data] : data_)
    out += fmt::format("<script type=\"application/json\" id=\"{}\">{}</script>\n", html_escape(id),
                       json_for_html_script(data));
  out += "<script>\n" + chart_library + "\n</script>\n<script>" + kGlue + "</script>\n</body>\n</html>\n";
  return out;
}

}  // namespace ptsim::reports
