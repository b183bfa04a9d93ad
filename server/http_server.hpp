// server/http_server.hpp — `ptsim serve`'s HTTP side (cpp-httplib): the routes, the limits and the safety
// checks around the API (server/api.hpp) and the page (server/page.hpp).
//   GET /                the what-if page        GET /api/profiles, GET /api/scenarios
//   POST /api/predict, /api/report, /api/sweep   (Content-Type: application/json)
// Safe by default (docs/serve.md): binds 127.0.0.1 unless told otherwise; bodies over max_body_bytes are
// 413; socket reads and writes time out; each computation is limited by a JobRunner; a request whose Host
// header is not this loopback address is refused while bound to loopback (a web page elsewhere cannot reach
// the API through DNS rebinding); the page may connect to this server only (Content-Security-Policy).
// Every error is a JSON body {"error", "field"}; the server keeps serving after each.
#pragma once
#include <chrono>
#include <memory>
#include <string>

#include "server/api.hpp"

namespace ptsim::server {

struct ServeOptions {
  std::string host = "127.0.0.1";
  int port = 8080;                               // 0: any free port (bound_port() says which)
  size_t max_body_bytes = 1 << 20;               // 1 MiB: a big inline scenario is ~10 KB
  std::chrono::milliseconds timeout{30'000};     // per computation
  size_t max_jobs = 0;                           // computations at once (0: 2 × cores, at least 4)
  size_t threads = 0;                            // connection threads (0: max(8, 2 × cores))
  bool log_requests = true;                      // one line per API request on stderr
};

class HttpServer {
 public:
  HttpServer(const Api& api, std::string page_html, ServeOptions options);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds the address; core::InputError (exit 2) naming it when it cannot (in use, not an address here).
  void bind();
  int bound_port() const { return port_; }
  std::string url() const;
  // Serves until stop() (from another thread: the signal thread of tools/cmd_serve.cpp).
  void run();
  void stop();
  // Computations still running after run() returns (abandoned past their time limit); waits up to `limit`.
  bool wait_for_jobs(std::chrono::milliseconds limit) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  int port_ = 0;
};

// True for 127.0.0.0/8, ::1 and "localhost".
bool is_loopback_host(const std::string& host);

}  // namespace ptsim::server
