// server/page.hpp — the what-if page `ptsim serve` answers at GET /: one self-contained HTML document
// (styles, script and Chart.js inlined; it fetches nothing but this server's /api/*). Pick a shipped
// scenario, change the cluster, recipe and prices, and see time, dollars, efficiency and the charts follow;
// "compare" pins one configuration and shows the next one's difference. docs/serve.md.
#pragma once
#include <string>

namespace ptsim::server {

// The page with `chart_library` (reports::load_chart_library()) inlined; with "" the page works without
// charts and says which package to install.
std::string render_page(const std::string& chart_library);

}  // namespace ptsim::server
