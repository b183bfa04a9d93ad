// server/page.cpp — the what-if page (see the header).
#include "server/page.hpp"

namespace ptsim::server {

std::string render_page(const std::string& chart_library) {
  (void)chart_library;
  return "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>ptsim what-if</title></head>"
         "<body><p>ptsim serve: the API is under /api/ (docs/serve.md).</p></body></html>\n";
}

}  // namespace ptsim::server
