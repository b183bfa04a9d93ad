// server/http_server.cpp — routes, limits and checks on cpp-httplib (see the header).
#include "server/http_server.hpp"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <httplib.h>

#include <algorithm>
#include <cstdio>
#include <thread>

#include "core/error.hpp"
#include "server/job_runner.hpp"

namespace ptsim::server {

namespace {

constexpr const char* kJson = "application/json";

size_t cores() { return std::max(1u, std::thread::hardware_concurrency()); }

std::string describe_bytes(size_t bytes) {
  return bytes >= (1 << 20) && bytes % (1 << 20) == 0 ? fmt::format("{} MiB", bytes >> 20)
                                                       : fmt::format("{} bytes", bytes);
}

// The text of an error httplib itself answers (no route, a body too big, a malformed request).
std::string library_error_message(const httplib::Request& req, int status, size_t max_body) {
  switch (status) {
    case 404:
      return fmt::format("no such page or method: {} {} (this server answers GET /, GET /api/profiles, GET "
                         "/api/scenarios, POST /api/predict, POST /api/report, POST /api/sweep; docs/serve.md)",
                         req.method, req.path);
    case 413:
      return fmt::format("request body: {} is more than the {} this server accepts (ptsim serve --max-body-bytes)",
                         req.has_header("Content-Length") ? req.get_header_value("Content-Length") + " bytes"
                                                          : std::string("the body"),
                         describe_bytes(max_body));
    case 414: return "the request's URL is too long";
    case 408: return "the request was not received in time";
    default: return fmt::format("the request could not be handled (HTTP {})", status);
  }
}

// The Host header's host part ("127.0.0.1:8080" → "127.0.0.1", "[::1]:80" → "::1").
std::string host_of(const std::string& header) {
  if (!header.empty() && header.front() == '[') {
    const size_t end = header.find(']');
    return end == std::string::npos ? header : header.substr(1, end - 1);
  }
  const size_t colon = header.find(':');
  return colon == std::string::npos ? header : header.substr(0, colon);
}

}  // namespace

bool is_loopback_host(const std::string& host) {
  if (host == "localhost" || host == "::1") return true;
  in_addr v4{};
  return inet_pton(AF_INET, host.c_str(), &v4) == 1 && (ntohl(v4.s_addr) >> 24) == 127;
}

struct HttpServer::Impl {
  const Api& api;
  std::string page;
  ServeOptions options;
  httplib::Server server;
  JobRunner jobs;

  Impl(const Api& a, std::string html, ServeOptions o)
      : api(a), page(std::move(html)), options(std::move(o)),
        jobs(options.max_jobs ? options.max_jobs : std::max<size_t>(4, 2 * cores()), options.timeout) {}

  void reply(httplib::Response& res, const ApiResponse& answer) {
    res.status = answer.status;
    res.set_content(answer.body, kJson);
  }

  // A POST route: JSON in, the API's answer out, computed under the JobRunner's limit.
  void post(const std::string& path, ApiResponse (Api::*call)(const std::string&) const) {
    server.Post(path, [this, call](const httplib::Request& req, httplib::Response& res) {
      const std::string type = req.get_header_value("Content-Type");
      if (type.rfind(kJson, 0) != 0) {
        reply(res, {415, error_body(fmt::format("request body: expected Content-Type: application/json, got '{}'", type),
                                    "body")});
        return;
      }
      std::string body = req.body;
      reply(res, jobs.run([this, call, body = std::move(body)] { return (api.*call)(body); }));
    });
  }

  void get(const std::string& path, ApiResponse (Api::*call)() const) {
    server.Get(path, [this, call](const httplib::Request&, httplib::Response& res) { reply(res, (api.*call)()); });
  }

  // Refuses a request whose Host is not this server's loopback name while bound to loopback.
  bool host_allowed(const httplib::Request& req) const {
    if (!is_loopback_host(options.host)) return true;  // serving a network on purpose (--host)
    const std::string host = host_of(req.get_header_value("Host"));
    return is_loopback_host(host) || host == options.host;
  }

  void set_up() {
    server.new_task_queue = [n = options.threads ? options.threads : std::max<size_t>(8, 2 * cores())] {
      return new httplib::ThreadPool(n);
    };
    server.set_payload_max_length(options.max_body_bytes);
    server.set_read_timeout(5, 0);
    server.set_write_timeout(5, 0);
    server.set_keep_alive_timeout(5);
    server.set_default_headers({{"Cache-Control", "no-store"}, {"X-Content-Type-Options", "nosniff"}});
    server.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
      if (host_allowed(req)) return httplib::Server::HandlerResponse::Unhandled;
      reply(res, {403, error_body(fmt::format("Host '{}' is not this server: while bound to {} it answers requests "
                                              "addressed to localhost only (ptsim serve --host to serve a network)",
                                              req.get_header_value("Host"), options.host))});
      return httplib::Server::HandlerResponse::Handled;
    });
    server.Get("/", [this](const httplib::Request&, httplib::Response& res) {
      res.set_header("Content-Security-Policy",
                     "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
                     "img-src data: blob:; connect-src 'self'; base-uri 'none'; form-action 'none'");
      res.set_content(page, "text/html; charset=utf-8");
    });
    get("/api/profiles", &Api::profiles);
    get("/api/scenarios", &Api::scenarios);
    post("/api/predict", &Api::predict);
    post("/api/report", &Api::report);
    post("/api/sweep", &Api::sweep);
    server.set_error_handler(httplib::Server::HandlerWithResponse([this](const httplib::Request& req, httplib::Response& res) {
      if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;  // an API answer: keep it
      res.set_content(error_body(library_error_message(req, res.status, options.max_body_bytes)), kJson);
      return httplib::Server::HandlerResponse::Handled;
    }));
    server.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
      std::string what = "unknown exception";
      try {
        if (ep) std::rethrow_exception(ep);
      } catch (const std::exception& e) {
        what = e.what();
      } catch (...) {
      }
      res.status = 500;
      res.set_content(error_body("internal error: " + what), kJson);
    });
    if (options.log_requests)
      server.set_logger([](const httplib::Request& req, const httplib::Response& res) {
        if (req.path.rfind("/api/", 0) == 0 || res.status >= 400)
          std::fprintf(stderr, "%s %s -> %d\n", req.method.c_str(), req.path.c_str(), res.status);
      });
  }
};

HttpServer::HttpServer(const Api& api, std::string page_html, ServeOptions options)
    : impl_(std::make_unique<Impl>(api, std::move(page_html), std::move(options))) {
  impl_->set_up();
}

HttpServer::~HttpServer() = default;

void HttpServer::bind() {
  const auto& o = impl_->options;
  if (o.port == 0) {
    port_ = impl_->server.bind_to_any_port(o.host);
    if (port_ <= 0) throw core::InputError(fmt::format("--host {}: cannot listen there (not an address of this machine?)", o.host));
  } else {
    if (!impl_->server.bind_to_port(o.host, o.port))
      throw core::InputError(fmt::format("--host {} --port {}: cannot listen there (the port is in use, needs root, or "
                                         "the host is not an address of this machine; --port 0 picks a free one)",
                                         o.host, o.port));
    port_ = o.port;
  }
}

std::string HttpServer::url() const {
  const std::string& host = impl_->options.host;
  return fmt::format("http://{}:{}/", host.find(':') != std::string::npos ? "[" + host + "]" : host, port_);
}

void HttpServer::run() { impl_->server.listen_after_bind(); }
void HttpServer::stop() { impl_->server.stop(); }
bool HttpServer::wait_for_jobs(std::chrono::milliseconds limit) const { return impl_->jobs.wait_idle(limit); }

}  // namespace ptsim::server
