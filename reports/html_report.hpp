// reports/html_report.hpp — the HTML renderer behind `ptsim report` and `ptsim validate --report`: one
// self-contained page (styles, data, the chart library and the charts inlined; nothing fetched when it
// is opened), built from sections of text, key figures, HTML tables and Chart.js charts.
// Charts are Chart.js configurations (plain JSON) drawn by Chart.js itself (Debian's libjs-chart.js, read
// at run time and inlined); the page adds only the unit formatting of axes and tooltips. Every string is
// HTML-escaped when rendered; data embedded in <script> blocks is escaped so that no text can close them.
// Not here: what a report shows (reports/scenario_report.hpp, reports/validation_report.hpp), files
// (the callers write the result with core::write_file_atomic).
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ptsim::reports {

// Text → HTML text or attribute value: & < > " ' escaped.
std::string html_escape(std::string_view text);
// JSON that is safe inside <script type="application/json">: '<', '>' and '&' written as \u003c etc.
// (valid JSON; JSON.parse gives the original strings back).
std::string json_for_html_script(const nlohmann::json& value);

// The Chart.js file inlined into reports: $PTSIM_CHARTJS if set, else the path chosen at build time
// (meson option chartjs_path; default /usr/share/javascript/chart.js/chart.min.js from libjs-chart.js).
std::string chart_library_path();
// Its text. core::InputError (exit 2) naming the path, the environment variable and the package to
// install when the file is missing, unreadable or not Chart.js.
std::string load_chart_library();
// The Debian package that ships it (named in messages and in tools/bootstrap.sh).
inline constexpr const char* kChartLibraryPackage = "libjs-chart.js";

// How the page formats a chart axis's numbers (ticks and tooltips).
enum class AxisUnit { plain, seconds, minutes, hours, days, milliseconds, usd, percent, gib, count };

struct ChartSpec {
  std::string id;            // unique in the page (letters, digits, '-')
  std::string title;
  std::string how_to_read;   // one or two sentences under the title
  nlohmann::json config;     // a Chart.js configuration: {type, data, options}
  AxisUnit x_unit = AxisUnit::plain;
  AxisUnit y_unit = AxisUnit::plain;
  AxisUnit y2_unit = AxisUnit::plain;  // the axis with id "y2", when the chart has one
  int height_px = 320;
};

struct HtmlTable {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;  // text; rendered escaped
  std::vector<bool> numeric;                   // per column: right-aligned, tabular figures (default: no)
  std::string caption;                         // optional, under the table
  std::vector<size_t> highlighted_rows;        // e.g. the scenario's own row in a node ladder
};

struct KeyFigure {
  std::string label;  // "time to train"
  std::string value;  // "12.3 days"
  std::string note;   // "± …", "vs published …" (optional)
};

// A report page, section by section. add_* append to the current section (begin_section first).
class HtmlReport {
 public:
  HtmlReport(std::string title, std::string subtitle);

  void begin_section(std::string id, std::string heading, std::string intro = "");
  void add_paragraph(std::string text);
  void add_note(std::string text);  // small, muted text
  void add_key_figures(const std::vector<KeyFigure>& figures);
  void add_list(const std::vector<std::string>& items);  // a bulleted list
  void add_definitions(const std::vector<std::pair<std::string, std::string>>& terms);  // term → value list
  void add_table(const HtmlTable& table);
  void add_chart(const ChartSpec& chart);
  // A button that saves `data` as `filename` from the page itself (a Blob; no network).
  void add_download(std::string label, std::string filename, const nlohmann::json& data);
  // Machine-readable data in <script type="application/json" id="ID"> (tests and scripts read it).
  void set_data(std::string id, nlohmann::json data);

  // The whole page, with `chart_library` (load_chart_library()) inlined.
  std::string render(const std::string& chart_library) const;

 private:
  struct Section {
    std::string id, heading;
    std::string body;  // rendered HTML
  };
  Section& current();
  std::string title_, subtitle_;
  std::vector<Section> sections_;
  std::vector<std::pair<std::string, nlohmann::json>> data_;
  int downloads_ = 0;
};

// The palette charts use (colour-blind-safe, Okabe–Ito order), as CSS colours; `i` wraps around.
std::string chart_colour(size_t i);
// The same with transparency `alpha` (0–1), for fills.
std::string chart_colour(size_t i, double alpha);

// Figures as people read them: "12.3 days", "47.2 min", "$25,739", "71.5%", "15.2 GiB".
std::string format_duration(double seconds);
std::string format_usd(double usd);
std::string format_percent(double fraction, int decimals = 1);
std::string format_gib(double bytes);

}  // namespace ptsim::reports
