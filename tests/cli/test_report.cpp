// tests/cli/test_report.cpp — `ptsim report` and `ptsim validate --report` as a user runs them: the page
// has every section, its embedded figures are the ones `ptsim predict --format json` prints for the same
// scenario (to 1e-9: the report shares one PredictionCache, docs/report.md), a step's parts add up to its
// iteration, nothing in it points at the network, text from user files is escaped, and bad inputs (a
// malformed --sweep, a missing chart library) are exit 2 naming what was wrong, with no file written.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>

#include "tests/support/run_command.hpp"
#include "tests/support/temp_dir.hpp"

namespace fs = std::filesystem;
using nlohmann::json;
using ptsim::test::run_ptsim;

namespace {

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_text(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

std::string quote(const fs::path& p) {
  std::string out = "'";
  out += p.string();
  out += "'";
  return out;
}

// The JSON of <script type="application/json" id="ID"> in a page.
json embedded_json(const std::string& html, const std::string& id) {
  const std::string open = "<script type=\"application/json\" id=\"" + id + "\">";
  const size_t start = html.find(open);
  REQUIRE_MESSAGE(start != std::string::npos, "no embedded data block " << id);
  const size_t body = start + open.size();
  const size_t end = html.find("</script>", body);
  REQUIRE(end != std::string::npos);
  return json::parse(html.substr(body, end - body));
}

bool close(double a, double b, double rel = 1e-9) { return std::abs(a - b) <= rel * std::max(std::abs(a), std::abs(b)); }

// A scenario of the T4 cluster with names that try to inject markup; bert-tiny keeps it fast.
const char* kHostileScenario = R"({
  "name": "<script>alert(\"pwned\")</script> & <b>co</b>",
  "description": "<img src=x onerror=alert(1)> 'single' & \"double\"",
  "assumptions": ["<u>an assumption</u> with </script> inside"],
  "model": "bert-tiny",
  "cluster": {"node": "t4-8x-pcie", "nodes": 2, "network": "10gbe-tcp"},
  "recipe": {"precision": "fp16", "optimizer": "lamb"},
  "phases": [{"name": "phase <i>one</i>", "seq_len": 128, "micro_batch": 32, "steps": 1000}],
  "prices": {"rental": "gcp-t4-on-demand-2020", "purchase": "t4-8x-node-purchase"}
})";

// The shipped T4 scenario's report on a short ladder (made once; the other cases read it).
struct T4Report {
  fs::path dir = ptsim::test::process_temp_dir("report_t4");
  fs::path html = dir / "t4.html";
  std::string text;
  int exit_code = -1;
  std::string output;
  T4Report() {
    auto r = run_ptsim("report --scenario t4-academic-cluster --ladder 8,16,32,64 --out " + quote(html));
    exit_code = r.exit_code;
    output = r.output;
    text = read_text(html);
  }
};
const T4Report& t4_report() {
  static const T4Report r;
  return r;
}

}  // namespace

TEST_CASE("ptsim report: every section, and the figures ptsim predict prints") {
  const T4Report& r = t4_report();
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(r.output.find("wrote") != std::string::npos);
  for (const char* id : {"overview", "scenario", "time", "step", "timeline", "scaling", "cost", "memory"})
    CHECK_MESSAGE(r.text.find(std::string("<section id=\"") + id + "\">") != std::string::npos, "section " << id);
  for (const char* chart : {"chart-time-by-phase", "chart-step-split", "chart-timeline", "chart-scaling", "chart-cost",
                            "chart-break-even", "chart-memory"})
    CHECK_MESSAGE(r.text.find(std::string("id=\"") + chart + "\"") != std::string::npos, "chart " << chart);
  CHECK(r.text.find("How to read this") != std::string::npos);
  CHECK(r.text.find("Chart.js v") != std::string::npos);  // the library itself, inlined
  // The page names the command that prints the same figures.
  CHECK(r.text.find("<code>ptsim predict --scenario t4-academic-cluster --format json</code>") != std::string::npos);

  const json data = embedded_json(r.text, "ptsim-report-data");
  CHECK(data.at("schema") == "ptsim.report.v1");
  auto predicted = run_ptsim("predict --scenario t4-academic-cluster --format json");
  REQUIRE(predicted.exit_code == 0);
  const json p = json::parse(predicted.output);
  const json& q = data.at("prediction");
  CHECK(close(q.at("time_to_train_seconds").get<double>(), p.at("time_to_train_seconds").get<double>()));
  CHECK(close(q.at("cost").at("rental_usd").get<double>(), p.at("cost").at("rental_usd").get<double>()));
  CHECK(close(q.at("scaling_efficiency").get<double>(), p.at("scaling_efficiency").get<double>()));
  REQUIRE(q.at("phases").size() == p.at("phases").size());
  for (size_t i = 0; i < p.at("phases").size(); ++i)
    CHECK(close(q.at("phases")[i].at("iteration_seconds").get<double>(), p.at("phases")[i].at("iteration_seconds").get<double>()));
  // The key figure on the page is that time, formatted (12 days of 2020 T4s are printed in days).
  const double days = p.at("time_to_train_seconds").get<double>() / 86400;
  char expected[64];
  std::snprintf(expected, sizeof expected, "%.2f days", days);
  CHECK(r.text.find(expected) != std::string::npos);

  // A step's parts add up to the phase's iteration (the split hides nothing and counts nothing twice).
  REQUIRE(data.at("step_breakdown").size() == p.at("phases").size());
  for (size_t i = 0; i < p.at("phases").size(); ++i) {
    double sum = 0;
    for (const auto& part : data.at("step_breakdown")[i].at("parts")) sum += part.at("seconds").get<double>();
    CHECK(close(sum, p.at("phases")[i].at("iteration_seconds").get<double>(), 1e-6));
  }
  // The ladder's own rung is the scenario's prediction; bigger clusters finish sooner.
  const json& rungs = data.at("scaling").at("rungs");
  REQUIRE(rungs.size() == 4);
  CHECK(rungs[2].at("nodes") == 32);
  CHECK(close(rungs[2].at("time_to_train_seconds").get<double>(), p.at("time_to_train_seconds").get<double>()));
  for (size_t i = 1; i < rungs.size(); ++i)
    CHECK(rungs[i].at("time_to_train_seconds").get<double>() < rungs[i - 1].at("time_to_train_seconds").get<double>());
  // Memory per GPU: the categories plus reserved are what predict reports for the largest phase.
  double largest = 0;
  for (const auto& m : data.at("memory")) {
    double sum = 0;
    for (const auto& c : m.at("categories")) sum += c.at("bytes").get<double>();
    CHECK(close(sum, m.at("needed_bytes").get<double>(), 1e-9));
    CHECK(m.at("needed_bytes").get<double>() <= m.at("device_bytes").get<double>());
    largest = std::max(largest, sum);
  }
  CHECK(close(largest, p.at("memory_per_gpu_bytes").get<double>(), 1e-9));
  // The trace is embedded for the download button, with its events.
  CHECK(r.text.find("Save the trace") != std::string::npos);
  CHECK(r.text.find("ui.perfetto.dev") != std::string::npos);
}

TEST_CASE("ptsim report: the page fetches nothing from the network") {
  const T4Report& r = t4_report();
  REQUIRE(r.exit_code == 0);
  // No element loads anything: no src= or href= to a URL, no <link>, no CSS url(...) import.
  const std::regex external(R"((src|href)\s*=\s*["']?\s*(https?:)?//)", std::regex::icase);
  CHECK_FALSE(std::regex_search(r.text, external));
  CHECK(r.text.find("<link") == std::string::npos);
  CHECK(r.text.find("@import") == std::string::npos);
  const std::regex css_url(R"(url\(\s*["']?(https?:)?//)", std::regex::icase);
  CHECK_FALSE(std::regex_search(r.text, css_url));
  CHECK(r.text.find("<script src") == std::string::npos);
}

TEST_CASE("ptsim report: text from a scenario file is escaped") {
  const fs::path dir = ptsim::test::process_temp_dir("report_escape");
  write_text(dir / "hostile.json", kHostileScenario);
  const fs::path html = dir / "hostile.html";
  auto r = run_ptsim("report --scenario " + quote(dir / "hostile.json") + " --ladder 1,2 --out " + quote(html));
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const std::string text = read_text(html);
  CHECK(text.find("<script>alert") == std::string::npos);
  CHECK(text.find("<img src=x") == std::string::npos);
  CHECK(text.find("<b>co</b>") == std::string::npos);
  CHECK(text.find("<u>an assumption") == std::string::npos);
  CHECK(text.find("phase <i>one</i>") == std::string::npos);
  CHECK(text.find("&lt;script&gt;alert(&quot;pwned&quot;)&lt;/script&gt; &amp; &lt;b&gt;co&lt;/b&gt;") != std::string::npos);
  CHECK(text.find("&lt;img src=x onerror=alert(1)&gt; &#39;single&#39; &amp; &quot;double&quot;") != std::string::npos);
  // Every <script> element the page opens is closed once: no embedded string ended one early.
  size_t opened = 0, closed = 0;
  for (size_t at = text.find("<script"); at != std::string::npos; at = text.find("<script", at + 1)) ++opened;
  for (size_t at = text.find("</script>"); at != std::string::npos; at = text.find("</script>", at + 1)) ++closed;
  CHECK(opened == closed);
  // The embedded data gives the original strings back.
  const json data = embedded_json(text, "ptsim-report-data");
  CHECK(data.at("scenario").at("name") == "<script>alert(\"pwned\")</script> & <b>co</b>");
  CHECK(data.at("scenario").at("assumptions")[0] == "<u>an assumption</u> with </script> inside");
}

TEST_CASE("ptsim report --sweep: the frontier of a sweep, and malformed sweep files") {
  const fs::path dir = ptsim::test::process_temp_dir("report_sweep");
  const fs::path sweep = dir / "sweep.json";
  write_text(dir / "base.json", kHostileScenario);
  auto s = run_ptsim("sweep --scenario " + quote(dir / "base.json") +
                     " --vary cluster.nodes=1,2,4 --vary cluster.network=10gbe-tcp,ib-edr --format json --no-progress --out " +
                     quote(sweep));
  INFO(s.output);
  REQUIRE(s.exit_code == 0);
  const json sweep_json = json::parse(read_text(sweep));
  const fs::path html = dir / "with-sweep.html";
  auto r = run_ptsim("report --scenario " + quote(dir / "base.json") + " --ladder 1,2 --sweep " + quote(sweep) +
                     " --out " + quote(html));
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const std::string text = read_text(html);
  CHECK(text.find("<section id=\"sweep\">") != std::string::npos);
  CHECK(text.find("id=\"chart-frontier-rental\"") != std::string::npos);
  const json data = embedded_json(text, "ptsim-report-data");
  CHECK(data.at("sweep").at("configurations").size() == sweep_json.at("configurations").size());
  CHECK(data.at("sweep").at("recommended") == sweep_json.at("recommended"));
  if (!sweep_json.at("recommended").is_null())
    CHECK(text.find("recommended plan") != std::string::npos);

  struct Bad {
    const char* name;
    std::string text;
    const char* expected;  // in the message, besides the file name
  };
  json wrong_schema = sweep_json;
  wrong_schema["schema"] = "ptsim.sweep.v0";
  json bad_index = sweep_json;
  bad_index["recommended"] = 999999;
  json bad_time = sweep_json;
  for (auto& c : bad_time["configurations"])
    if (c.at("feasible").get<bool>()) c["time_to_train_seconds"] = "soon";
  const Bad cases[] = {
      {"truncated.json", "{\"schema\": \"ptsim.sweep.v1\", \"configurations\": [", "truncated.json"},
      {"array.json", "[1, 2, 3]", "not a JSON object"},
      {"schema.json", wrong_schema.dump(), "schema"},
      {"index.json", bad_index.dump(), "recommended"},
      {"time.json", bad_time.dump(), "time_to_train_seconds"},
  };
  for (const auto& bad : cases) {
    CAPTURE(bad.name);
    write_text(dir / bad.name, bad.text);
    const fs::path out = dir / (std::string(bad.name) + ".html");
    auto b = run_ptsim("report --scenario " + quote(dir / "base.json") + " --sweep " + quote(dir / bad.name) +
                       " --out " + quote(out));
    INFO(b.output);
    CHECK(b.exit_code == 2);
    CHECK(b.output.find(bad.name) != std::string::npos);
    CHECK(b.output.find(bad.expected) != std::string::npos);
    CHECK_FALSE(fs::exists(out));
  }
  auto missing = run_ptsim("report --scenario " + quote(dir / "base.json") + " --sweep " + quote(dir / "nope.json") +
                           " --out " + quote(dir / "nope.html"));
  CHECK(missing.exit_code == 2);
  CHECK(missing.output.find("nope.json") != std::string::npos);
}

TEST_CASE("ptsim report: without the chart library, exit 2 naming the package; nothing written") {
  const fs::path dir = ptsim::test::process_temp_dir("report_nolib");
  write_text(dir / "base.json", kHostileScenario);
  const fs::path out = dir / "r.html";
  auto r = run_ptsim("report --scenario " + quote(dir / "base.json") + " --out " + quote(out),
                     "PTSIM_CHARTJS=" + (dir / "no-such-chart.js").string());
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("libjs-chart.js") != std::string::npos);
  CHECK(r.output.find("no-such-chart.js") != std::string::npos);
  CHECK(r.output.find("PTSIM_CHARTJS") != std::string::npos);
  CHECK_FALSE(fs::exists(out));
  // A file that is not Chart.js is refused too.
  write_text(dir / "not-chart.js", "console.log('hello');\n");
  auto n = run_ptsim("report --scenario " + quote(dir / "base.json") + " --out " + quote(out),
                     "PTSIM_CHARTJS=" + (dir / "not-chart.js").string());
  CHECK(n.exit_code == 2);
  CHECK(n.output.find("not Chart.js") != std::string::npos);
  // validate --report checks the library before its predictions.
  auto v = run_ptsim("validate --report " + quote(dir / "v.html"), "PTSIM_CHARTJS=" + (dir / "no-such-chart.js").string());
  CHECK(v.exit_code == 2);
  CHECK(v.output.find("libjs-chart.js") != std::string::npos);
  CHECK_FALSE(fs::exists(dir / "v.html"));
}

TEST_CASE("ptsim report: bad flags and targets") {
  const fs::path dir = ptsim::test::process_temp_dir("report_flags");
  write_text(dir / "base.json", kHostileScenario);
  auto no_out = run_ptsim("report --scenario " + quote(dir / "base.json"));
  CHECK(no_out.exit_code == 2);
  CHECK(no_out.output.find("--out") != std::string::npos);
  auto ladder = run_ptsim("report --scenario " + quote(dir / "base.json") + " --ladder 1,two --out " + quote(dir / "x.html"));
  CHECK(ladder.exit_code == 2);
  CHECK(ladder.output.find("'two'") != std::string::npos);
  auto dir_target = run_ptsim("report --scenario " + quote(dir / "base.json") + " --out " + quote(dir));
  CHECK(dir_target.exit_code == 2);
  CHECK(dir_target.output.find("--out") != std::string::npos);
  auto bad_set = run_ptsim("report --scenario " + quote(dir / "base.json") + " --set cluster.network=no-such-net --out " +
                           quote(dir / "y.html"));
  CHECK(bad_set.exit_code == 2);
  CHECK(bad_set.output.find("no-such-net") != std::string::npos);
  CHECK_FALSE(fs::exists(dir / "y.html"));
  // --format json writes the figures the page is drawn from.
  auto j = run_ptsim("report --scenario " + quote(dir / "base.json") + " --ladder 1,2 --format json --out " +
                     quote(dir / "r.json"));
  REQUIRE(j.exit_code == 0);
  const json data = json::parse(read_text(dir / "r.json"));
  CHECK(data.at("schema") == "ptsim.report.v1");
  CHECK(data.at("scaling").at("rungs").size() == 2);
}

TEST_CASE("ptsim validate --report: predicted against published with the tolerance bands") {
  const fs::path dir = ptsim::test::process_temp_dir("report_validate");
  const fs::path html = dir / "validate.html";
  auto r = run_ptsim("validate --report " + quote(html) + " --format json");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const json printed = json::parse(r.output);
  const std::string text = read_text(html);
  CHECK(text.find("id=\"chart-published-errors\"") != std::string::npos);
  CHECK(text.find("id=\"chart-single-gpu\"") != std::string::npos);
  CHECK(text.find("tolerance band") != std::string::npos);
  const json data = embedded_json(text, "ptsim-validation-data");
  REQUIRE(data.at("published_results").size() == printed.at("published_results").size());
  for (size_t i = 0; i < printed.at("published_results").size(); ++i) {
    const json& a = printed.at("published_results")[i];
    const json& b = data.at("published_results")[i];
    CHECK(a.at("scenario") == b.at("scenario"));
    CHECK(a.at("published") == b.at("published"));
    CHECK(a.at("within_tolerance") == b.at("within_tolerance"));
  }
  CHECK(data.at("single_gpu_runs").size() == printed.at("single_gpu_runs").size());
  CHECK(data.at("stacks") == printed.at("stacks"));  // the per-stack fit and held-out errors, as printed
  CHECK(text.find("Per software stack") != std::string::npos);
  CHECK(text.find("pytorch-ngc21.11-lddl") != std::string::npos);
  const std::regex external(R"((src|href)\s*=\s*["']?\s*(https?:)?//)", std::regex::icase);
  CHECK_FALSE(std::regex_search(text, external));
}

TEST_CASE("ptsim calibrate --report: measured against predicted, before and after the fit") {
  const fs::path dir = ptsim::test::process_temp_dir("report_calibrate");
  auto r = run_ptsim("calibrate published --format json --report " + quote(dir / "published.html"));
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const json printed = json::parse(r.output);
  const std::string text = read_text(dir / "published.html");
  const json data = embedded_json(text, "ptsim-calibration-data");
  CHECK(data.at("mode") == "published");
  REQUIRE(data.at("groups").size() == printed.size());
  for (size_t i = 0; i < printed.size(); ++i) {
    const std::string group = printed[i].at("group").get<std::string>();
    CHECK(data.at("groups")[i].at("group") == group);
    CHECK(data.at("groups")[i].at("runs").size() == printed[i].at("runs").size());
    CHECK(text.find("id=\"chart-fit-" + group + "\"") != std::string::npos);
    for (size_t k = 0; k < printed[i].at("runs").size(); ++k)
      CHECK(close(data.at("groups")[i].at("runs")[k].at("predicted_after").get<double>(),
                  printed[i].at("runs")[k].at("predicted_after").get<double>()));
  }

  // Measured mode, on per-op times that are the T4 prediction scaled by 1.25 and relabelled "measured": the
  // fit must then move the step's error from about -20% towards zero, and the page must say so.
  auto p = run_ptsim("predict --gpu t4 --model bert-tiny --micro-batch 8 --op-times " + quote(dir / "predicted.json"));
  REQUIRE(p.exit_code == 0);
  json times = json::parse(read_text(dir / "predicted.json"));
  times["source"] = "measured";
  std::function<void(json&)> scale = [&](json& j) {
    if (j.is_object()) {
      for (auto& [key, value] : j.items()) {
        if (value.is_number_float() && key.find("seconds") != std::string::npos) value = value.get<double>() * 1.25;
        else scale(value);
      }
    } else if (j.is_array()) {
      for (auto& v : j) scale(v);
    }
  };
  scale(times);
  write_text(dir / "measured.json", times.dump());
  auto m = run_ptsim("calibrate measured --profile t4 --op-times " + quote(dir / "measured.json") + " --report " +
                     quote(dir / "measured.html"));
  INFO(m.output);
  REQUIRE(m.exit_code == 0);
  const std::string mtext = read_text(dir / "measured.html");
  CHECK(mtext.find("id=\"chart-fit-kinds\"") != std::string::npos);
  const json mdata = embedded_json(mtext, "ptsim-calibration-data");
  CHECK(mdata.at("mode") == "measured");
  CHECK_FALSE(mdata.at("kinds").empty());
  const json& step = mdata.at("steps")[0];
  const double before = step.at("predicted_before").get<double>() / step.at("measured_seconds").get<double>() - 1;
  const double after = step.at("predicted_after").get<double>() / step.at("measured_seconds").get<double>() - 1;
  CHECK(before == doctest::Approx(-0.2).epsilon(0.02));
  CHECK(std::abs(after) < std::abs(before));
}
