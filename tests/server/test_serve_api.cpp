// tests/server/test_serve_api.cpp — `ptsim serve`'s API over HTTP, as a client sees it: the server is the
// built binary started with --port 0 (the URL it prints says where), talked to with cpp-httplib's client.
// A valid predict answers exactly what `ptsim predict --format json` prints (every field but the
// simulator's wall time, which is a measurement); bad JSON, unknown fields, oversize bodies, file paths,
// unknown scenarios and bad edits are 4xx with the CLI's message and the field to blame; the server keeps
// answering after each; concurrent requests agree; SIGTERM stops it with exit 0.
#include <doctest/doctest.h>
#include <httplib.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/run_command.hpp"

using nlohmann::json;
using ptsim::test::run_ptsim;

namespace {

// `ptsim serve --port 0` as a child process; the first line it prints names the port.
struct Server {
  pid_t pid = -1;
  int port = 0;
  FILE* out = nullptr;

  explicit Server(const char* timeout = "30") {
    int fds[2];
    REQUIRE(pipe(fds) == 0);
    pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      dup2(fds[1], STDOUT_FILENO);
      close(fds[0]);
      close(fds[1]);
      execl(PTSIM_BINARY, PTSIM_BINARY, "serve", "--port", "0", "--quiet", "--max-sweep", "8", "--timeout", timeout,
            static_cast<char*>(nullptr));
      _exit(127);
    }
    close(fds[1]);
    out = fdopen(fds[0], "r");
    char line[512] = {};
    REQUIRE_MESSAGE(std::fgets(line, sizeof line, out) != nullptr, "ptsim serve printed nothing");
    const std::string text = line;
    const size_t at = text.find("http://127.0.0.1:");
    REQUIRE_MESSAGE(at != std::string::npos, "ptsim serve printed: " << text);
    port = std::stoi(text.substr(at + 17));
  }
  // SIGTERM; the exit status (0 expected) and what it printed after its first line.
  std::pair<int, std::string> stop() {
    kill(pid, SIGTERM);
    std::string rest;
    char buffer[512];
    while (std::fgets(buffer, sizeof buffer, out)) rest += buffer;
    int status = 0;
    waitpid(pid, &status, 0);
    pid = -1;
    return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, rest};
  }
  ~Server() {
    if (pid > 0) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
    if (out) std::fclose(out);
  }
};

Server& server() {
  static Server s;
  return s;
}

struct Answer {
  int status = 0;
  json body;
};

Answer post(const std::string& path, const std::string& body, const std::string& type = "application/json") {
  httplib::Client client("127.0.0.1", server().port);
  client.set_read_timeout(60, 0);
  auto res = client.Post(path.c_str(), body, type.c_str());
  REQUIRE_MESSAGE(res, "no answer to POST " << path);
  Answer a{res->status, json::parse(res->body, nullptr, false)};
  REQUIRE_MESSAGE(!a.body.is_discarded(), "POST " << path << " answered non-JSON: " << res->body);
  return a;
}

Answer get(const std::string& path, const httplib::Headers& headers = {}) {
  httplib::Client client("127.0.0.1", server().port);
  auto res = client.Get(path.c_str(), headers);
  REQUIRE_MESSAGE(res, "no answer to GET " << path);
  return {res->status, json::parse(res->body, nullptr, false)};
}

// The server still answers a good request (after a bad one).
void still_serving() {
  const Answer a = get("/api/scenarios");
  CHECK(a.status == 200);
  CHECK(a.body.at("scenarios").size() >= 9);
}

// What `ptsim predict` prints on stderr for these arguments, without "error: " (its exit code must be 2).
std::string cli_error(const std::string& args) {
  const auto r = run_ptsim("predict " + args);
  REQUIRE_MESSAGE(r.exit_code == 2, "ptsim predict " << args << " exit " << r.exit_code << ": " << r.output);
  std::string text = r.output;
  if (text.rfind("error: ", 0) == 0) text = text.substr(7);
  while (!text.empty() && text.back() == '\n') text.pop_back();
  return text;
}

json without_wall_time(json j) {
  j.erase("simulator_wall_seconds");
  return j;
}

void check_error(const Answer& a, int status, const std::string& message, const json& field) {
  CHECK(a.status == status);
  CHECK(a.body.value("error", "") == message);
  CHECK(a.body.at("field") == field);
  still_serving();
}

}  // namespace

TEST_CASE("POST /api/predict answers what ptsim predict --format json prints") {
  const auto cli = run_ptsim("predict --scenario t4-academic-cluster --set cluster.network=ib-edr --set cluster.nodes=16 --format json");
  REQUIRE(cli.exit_code == 0);
  const Answer a = post("/api/predict", R"({"scenario": "t4-academic-cluster",
                                            "set": {"cluster.network": "ib-edr", "cluster.nodes": 16}})");
  REQUIRE(a.status == 200);
  // Exactly equal: the same library call on the same inputs; only the measured wall time differs.
  CHECK(without_wall_time(a.body) == without_wall_time(json::parse(cli.output)));
  CHECK(a.body.at("network") == "ib-edr");
  CHECK(a.body.at("gpus") == 128);  // 16 nodes × 8 T4
}

TEST_CASE("the node menu: another node type takes its own stack and prices, as ptsim predict --set does") {
  const auto cli = run_ptsim("predict --scenario t4-academic-cluster --set cluster.node=dgx-a100 --format json");
  REQUIRE(cli.exit_code == 0);
  const Answer a = post("/api/predict", R"({"scenario": "t4-academic-cluster", "set": {"cluster.node": "dgx-a100"}})");
  REQUIRE(a.status == 200);
  CHECK(without_wall_time(a.body) == without_wall_time(json::parse(cli.output)));
  CHECK(a.body.at("stack") == "pytorch-ngc20.06");  // the A100 40 GB's stack, not the scenario's T4/V100 one
  CHECK(a.body.at("what_if_notes").size() == 3);    // stack, rental, purchase (docs/sweep.md "Node-type what-ifs")
  CHECK(a.body.at("prices").at("used").at(0).at("item") == "aws-p4d-24xlarge-on-demand-per-gpu");
}

TEST_CASE("an inline scenario object predicts like the same scenario in a file") {
  const auto cli = run_ptsim("predict --scenario dgx2-single-node --format json");
  REQUIRE(cli.exit_code == 0);
  std::FILE* f = std::fopen((std::string(PTSIM_SOURCE_DIR) + "/reports/scenarios/dgx2-single-node.json").c_str(), "r");
  REQUIRE(f);
  std::string text;
  char buffer[4096];
  for (size_t n; (n = std::fread(buffer, 1, sizeof buffer, f)) > 0;) text.append(buffer, n);
  std::fclose(f);
  const Answer a = post("/api/predict", json{{"scenario", json::parse(text)}}.dump());
  REQUIRE(a.status == 200);
  CHECK(without_wall_time(a.body) == without_wall_time(json::parse(cli.output)));
}

TEST_CASE("bad request bodies are 400 with the reader's message, and the server keeps serving") {
  SUBCASE("not JSON") {
    const Answer a = post("/api/predict", R"({"scenario": )");
    CHECK(a.status == 400);
    CHECK(a.body.value("error", "").rfind("request body: not valid JSON", 0) == 0);
    CHECK(a.body.at("field") == "body");
    still_serving();
  }
  SUBCASE("not an object") {
    check_error(post("/api/predict", "[1, 2]"), 400, "request body: must be a JSON object, got array", "body");
  }
  SUBCASE("duplicate keys") {
    const Answer a = post("/api/predict", R"({"scenario": "t4-academic-cluster", "scenario": "dgx2-single-node"})");
    CHECK(a.status == 400);
    CHECK(a.body.value("error", "").find("duplicate key 'scenario'") != std::string::npos);
    still_serving();
  }
  SUBCASE("an unknown field") {
    check_error(post("/api/predict", R"({"scenario": "t4-academic-cluster", "sett": {}})"), 400,
                "request body: unknown field 'sett' in the document (check the spelling; see docs/json-formats.md)", "sett");
  }
  SUBCASE("no scenario") {
    const Answer a = post("/api/predict", R"({"set": {}})");
    CHECK(a.status == 400);
    CHECK(a.body.at("field") == "scenario");
    still_serving();
  }
  SUBCASE("not application/json") {
    const Answer a = post("/api/predict", R"({"scenario": "t4-academic-cluster"})", "text/plain");
    CHECK(a.status == 415);
    still_serving();
  }
}

TEST_CASE("a body over the limit is 413, and the server keeps serving") {
  const std::string big = R"({"scenario": "t4-academic-cluster", "comment": ")" + std::string(2 << 20, 'x') + "\"}";
  const Answer a = post("/api/predict", big);
  CHECK(a.status == 413);
  CHECK(a.body.value("error", "").find("more than the 1 MiB this server accepts") != std::string::npos);
  still_serving();
}

TEST_CASE("the client cannot name a file: paths are refused before any file is read") {
  // "reports/scenarios/t4-academic-cluster" is a file `ptsim predict` would read (relative to the source tree).
  for (const std::string name : {"../../etc/passwd", "/etc/passwd", "reports/scenarios/t4-academic-cluster",
                                 ".hidden", "t4-academic-cluster/..", "C:\\x"}) {
    CAPTURE(name);
    const Answer a = post("/api/predict", json{{"scenario", name}}.dump());
    CHECK(a.status == 400);
    CHECK(a.body.value("error", "").rfind("unknown scenario '" + name + "': not a shipped scenario, and the server reads no files", 0) == 0);
    CHECK(a.body.at("field") == "scenario");
  }
  // A model is a built-in name too: a path in the scenario or in an edit would be read by the simulator.
  const Answer edit = post("/api/predict", R"({"scenario": "t4-academic-cluster", "set": {"model": "/etc/passwd"}})");
  CHECK(edit.status == 400);
  CHECK(edit.body.value("error", "").rfind("unknown model '/etc/passwd': not a built-in model", 0) == 0);
  CHECK(edit.body.at("field") == "set.model");
  const Answer inline_model = post("/api/predict", R"({"scenario": {"model": "models/bert-large.json", "phases": [{"steps": 1}]}})");
  CHECK(inline_model.status == 400);
  CHECK(inline_model.body.at("field") == "scenario");
  const Answer sweep = post("/api/sweep", R"({"base": "t4-academic-cluster", "axes": [{"key": "model", "values": ["bert-base", "/etc/passwd"]}]})");
  CHECK(sweep.status == 400);
  CHECK(sweep.body.at("field") == "axes");
  still_serving();
}

TEST_CASE("unknown scenarios and bad edits: the CLI's message, blamed on their field") {
  check_error(post("/api/predict", R"({"scenario": "no-such-scenario"})"), 400,
              cli_error("--scenario no-such-scenario"), "scenario");
  check_error(post("/api/predict", R"({"scenario": "t4-academic-cluster", "set": {"cluster.nodes": 4, "cluster.network": "no-such-net"}})"),
              400, cli_error("--scenario t4-academic-cluster --set cluster.nodes=4 --set cluster.network=no-such-net"),
              "set.cluster.network");
  check_error(post("/api/predict", R"({"scenario": "t4-academic-cluster", "set": {"phases.0.micro_batch": 0}})"), 400,
              cli_error("--scenario t4-academic-cluster --set phases.0.micro_batch=0"), "set.phases.0.micro_batch");
  check_error(post("/api/predict", R"({"scenario": "t4-academic-cluster", "set": {"recipe.precision": "fp4"}})"), 400,
              cli_error("--scenario t4-academic-cluster --set recipe.precision=fp4"), "set.recipe.precision");
  check_error(post("/api/predict", R"({"scenario": "t4-academic-cluster", "set": {"cluster.node": "dgx-1",
      "prices.rental": "gcp-t4-on-demand-2020"}})"), 400,
              cli_error("--scenario t4-academic-cluster --set cluster.node=dgx-1 --set prices.rental=gcp-t4-on-demand-2020"),
              "set.cluster.node");  // a T4 price the user named, for a V100 node: the first edit without which the rest read
  // Edits that only read together (a node and its prices) are not blamed for another edit's error.
  const Answer together = post("/api/predict", R"({"scenario": "t4-academic-cluster", "set": {"cluster.node": "dgx-1",
      "prices.rental": "", "prices.purchase": "dgx-1-purchase", "cluster.nodes": 0}})");
  CHECK(together.status == 400);
  CHECK(together.body.at("field") == "set.cluster.nodes");
}

TEST_CASE("a configuration that does not fit memory is 422 with the simulator's message") {
  const Answer a = post("/api/predict", R"({"scenario": "t4-academic-cluster", "set": {"phases.0.micro_batch": 4096}})");
  CHECK(a.status == 422);
  CHECK(a.body.at("infeasible") == "memory");
  CHECK(a.body.value("error", "") == cli_error("--scenario t4-academic-cluster --set phases.0.micro_batch=4096"));
  CHECK(a.body.value("over_bytes", 0.0) > 0);
  still_serving();
}

TEST_CASE("POST /api/report carries predict's figures and a step split that adds up") {
  const auto cli = run_ptsim("predict --scenario t4-academic-cluster --set cluster.network=ib-edr --format json");
  REQUIRE(cli.exit_code == 0);
  const Answer a = post("/api/report", R"({"scenario": "t4-academic-cluster", "set": {"cluster.network": "ib-edr"}})");
  REQUIRE(a.status == 200);
  CHECK(a.body.at("schema") == "ptsim.report.v1");
  CHECK(without_wall_time(a.body.at("prediction")) == without_wall_time(json::parse(cli.output)));
  CHECK_FALSE(a.body.contains("scaling"));
  for (const auto& step : a.body.at("step_breakdown")) {
    double sum = 0;
    for (const auto& part : step.at("parts")) sum += part.at("seconds").get<double>();
    // The parts are the iteration split (reports/scenario_report.cpp): equal to rounding.
    CHECK(sum == doctest::Approx(step.at("iteration_seconds").get<double>()).epsilon(1e-9));
  }
  const Answer ladder = post("/api/report", R"({"scenario": "t4-academic-cluster", "ladder": [16, 32]})");
  REQUIRE(ladder.status == 200);
  CHECK(ladder.body.at("scaling").at("rungs").size() == 2);
  check_error(post("/api/report", R"({"scenario": "t4-academic-cluster", "ladder": [0]})"), 400,
              "request body: field 'ladder': 0 is not a node count in [1, 100000]", "ladder");
}

TEST_CASE("POST /api/sweep: what ptsim sweep prints, up to the server's limit") {
  const auto cli = run_ptsim("sweep --scenario t4-academic-cluster --vary cluster.nodes=8,16 "
                             "--vary cluster.network=10gbe-tcp,ib-edr --format json --no-progress");
  REQUIRE(cli.exit_code == 0);
  const Answer a = post("/api/sweep", R"({"base": "t4-academic-cluster", "axes": [
      {"key": "cluster.nodes", "values": [8, 16]}, {"key": "cluster.network", "values": ["10gbe-tcp", "ib-edr"]}]})");
  REQUIRE(a.status == 200);
  const json expected = json::parse(cli.output);
  CHECK(a.body.at("configurations") == expected.at("configurations"));
  CHECK(a.body.at("frontier") == expected.at("frontier"));
  CHECK(a.body.at("recommended") == expected.at("recommended"));
  // This server was started with --max-sweep 8: 9 configurations are refused.
  check_error(post("/api/sweep", R"({"base": "t4-academic-cluster", "axes": [{"key": "cluster.nodes", "range": "1..9"}]})"),
              400, "request body: the axes make 9 configurations; this server evaluates at most 8 per request "
                   "(ptsim serve --max-sweep N raises it; ptsim sweep has no limit)", "axes");
}

TEST_CASE("GET routes, an unknown route, and a foreign Host header") {
  const Answer profiles = get("/api/profiles");
  CHECK(profiles.status == 200);
  CHECK(profiles.body.at("networks").size() >= 9);
  // Every shipped stack (hwprofiles/stacks), with the GPU families it was fitted on (docs/stacks.md).
  bool ngc19 = false;
  for (const auto& st : profiles.body.at("stacks"))
    if (st.at("name") == "pytorch-apex-ngc19.07") ngc19 = !st.at("fitted_families").empty();
  CHECK(ngc19);
  const Answer missing = get("/api/nothing");
  CHECK(missing.status == 404);
  CHECK(missing.body.value("error", "").rfind("no such page or method: GET /api/nothing", 0) == 0);
  // DNS rebinding: a page on evil.example resolving to 127.0.0.1 sends its own name as Host.
  const Answer foreign = get("/api/scenarios", {{"Host", "evil.example:80"}});
  CHECK(foreign.status == 403);
  httplib::Client client("127.0.0.1", server().port);
  auto page = client.Get("/");
  REQUIRE(page);
  CHECK(page->status == 200);
  CHECK(page->get_header_value("Content-Type").rfind("text/html", 0) == 0);
  CHECK(page->get_header_value("Content-Security-Policy").find("connect-src 'self'") != std::string::npos);
  CHECK(page->body.find("http://") == std::string::npos);  // nothing fetched from elsewhere
  still_serving();
}

TEST_CASE("concurrent predictions agree with each other") {
  std::vector<json> answers(8);
  std::vector<int> statuses(8, 0);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < answers.size(); ++i)
    threads.emplace_back([&, i] {
      httplib::Client client("127.0.0.1", server().port);
      client.set_read_timeout(60, 0);
      const std::string network = i % 2 ? "ib-edr" : "10gbe-tcp";
      auto res = client.Post("/api/predict", json{{"scenario", "t4-academic-cluster"}, {"set", {{"cluster.network", network}}}}.dump(),
                             "application/json");
      if (!res) return;
      statuses[i] = res->status;
      answers[i] = without_wall_time(json::parse(res->body));
    });
  for (auto& t : threads) t.join();
  for (size_t i = 0; i < answers.size(); ++i) {
    CAPTURE(i);
    CHECK(statuses[i] == 200);
    CHECK(answers[i] == answers[i % 2]);
  }
  CHECK(answers[0] != answers[1]);
}

TEST_CASE("a computation past the time limit is 504; the server keeps serving and still stops on SIGTERM") {
  Server quick("0.5");
  httplib::Client client("127.0.0.1", quick.port);
  client.set_read_timeout(60, 0);
  // 20,000 T4 nodes: about 3 s of simulation on this project's 2-core machines, well past 0.5 s.
  auto slow = client.Post("/api/predict", R"({"scenario": "t4-academic-cluster", "set": {"cluster.nodes": 20000}})",
                          "application/json");
  REQUIRE(slow);
  CHECK(slow->status == 504);
  CHECK(json::parse(slow->body).value("error", "").find("longer than the server's limit of 0.5 s per request") != std::string::npos);
  CHECK(json::parse(slow->body).value("error", "").find("ptsim serve --timeout SECONDS") != std::string::npos);
  auto scenarios = client.Get("/api/scenarios");
  REQUIRE(scenarios);
  CHECK(scenarios->status == 200);
  const std::pair<int, std::string> stopped = quick.stop();  // with the abandoned computation still running
  CHECK(stopped.first == 0);
  CHECK(stopped.second.find("ptsim serve: stopped") != std::string::npos);
}

TEST_CASE("flags that do not apply are exit 2; SIGTERM stops the server with exit 0") {
  CHECK(run_ptsim("serve --port 0 --scenario t4-academic-cluster").exit_code == 2);
  CHECK(run_ptsim("serve --port 0 extra").exit_code == 2);
  CHECK(run_ptsim("serve --port 70000").exit_code == 2);
  const std::pair<int, std::string> stopped = server().stop();
  CHECK(stopped.first == 0);
  CHECK(stopped.second.find("ptsim serve: stopped") != std::string::npos);
}
