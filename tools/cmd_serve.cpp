// tools/cmd_serve.cpp — `ptsim serve`: the what-if page and its JSON API on a local HTTP server until
// Ctrl-C or SIGTERM. Flags here; everything else in server/ (docs/serve.md).
#include <fmt/format.h>

#include <csignal>
#include <cstdio>
#include <thread>

#include "core/error.hpp"
#include "tools/cli_support.hpp"
#include "tools/commands.hpp"

#ifdef PTSIM_HAVE_SERVE
#include <pthread.h>

#include "hwprofiles/profiles.hpp"
#include "reports/html_report.hpp"
#include "server/api.hpp"
#include "server/http_server.hpp"
#include "server/page.hpp"
#endif

namespace ptsim::tools {

int run_serve_command(int argc, char** argv) {
  CLI::App app{"Serve the what-if page and its JSON API (predict, report, sweep, profiles, scenarios) on a local "
               "HTTP server until Ctrl-C (docs/serve.md)", "serve"};
  std::string host = "127.0.0.1";
  int port = 8080;
  double timeout_seconds = 30;
  size_t max_body_bytes = 1 << 20;
  size_t max_sweep = 64;
  size_t max_jobs = 0;
  bool quiet = false;
  app.add_option("--port", port, "TCP port; 0 picks a free one (the URL is printed)")->check(CLI::Range(0, 65535))
      ->capture_default_str();
  app.add_option("--host", host, "address to listen on; anything but loopback serves your network (no authentication)")
      ->capture_default_str();
  app.add_option("--timeout", timeout_seconds, "seconds one computation may take before the answer is 504")
      ->check(number_between(0.1, 3600.0))->capture_default_str();
  app.add_option("--max-body-bytes", max_body_bytes, "largest request body accepted (413 above)")
      ->check(CLI::Range(size_t{1024}, size_t{64} << 20))->capture_default_str();
  app.add_option("--max-sweep", max_sweep, "most configurations one POST /api/sweep may ask for (400 above)")
      ->check(CLI::Range(size_t{1}, size_t{100000}))->capture_default_str();
  app.add_option("--max-jobs", max_jobs, "computations at once, counting ones past their time limit (0: 2 x cores)")
      ->check(CLI::Range(size_t{0}, size_t{1024}));
  app.add_flag("--quiet", quiet, "no line per API request on stderr");
  if (auto code = parse_or_exit(app, argc, argv)) return *code;
#ifndef PTSIM_HAVE_SERVE
  (void)quiet;
  throw core::InputError("ptsim serve: this ptsim was built without cpp-httplib: install libcpp-httplib-dev "
                         "(tools/bootstrap.sh does) and rebuild (meson setup --reconfigure build)");
#else
  // Signals are taken by one thread with sigwait (below), so none lands inside the server's threads.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  std::string chart_library;
  try {
    chart_library = reports::load_chart_library();
  } catch (const core::InputError& e) {
    fmt::print(stderr, "warning: the page will have no charts: {}\n", e.what());
  }
  server::ApiLimits limits;
  limits.max_sweep_configurations = max_sweep;
  const server::Api api(hwprofiles::load_profiles(), limits);
  server::ServeOptions options;
  options.host = host;
  options.port = port;
  options.timeout = std::chrono::milliseconds(static_cast<long long>(timeout_seconds * 1000));
  options.max_body_bytes = max_body_bytes;
  options.max_jobs = max_jobs;
  options.log_requests = !quiet;
  server::HttpServer http(api, server::render_page(chart_library), options);
  http.bind();

  std::thread stopper([&] {
    int signal = 0;
    sigwait(&stop_signals, &signal);
    http.stop();
  });
  fmt::print("ptsim serve: the what-if page is at {} (Ctrl-C stops it)\n", http.url());
  std::fflush(stdout);
  if (!server::is_loopback_host(host))
    fmt::print(stderr, "warning: serving {} to the network without authentication\n", host);
  http.run();
  pthread_kill(stopper.native_handle(), SIGTERM);  // run() may have ended on its own: wake the stopper
  stopper.join();
  const bool idle = http.wait_for_jobs(std::chrono::milliseconds(2000));
  fmt::print("ptsim serve: stopped\n");
  std::fflush(stdout);
  // A computation past its time limit may still run on a detached thread: leave without destructors.
  if (!idle) std::quick_exit(0);
  return 0;
#endif
}

}  // namespace ptsim::tools
