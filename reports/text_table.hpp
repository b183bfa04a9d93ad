// reports/text_table.hpp — aligned plain-text tables for terminal output (header-only).
#pragma once
#include <algorithm>
#include <string>
#include <vector>

namespace ptsim::reports {

class TextTable {
 public:
  explicit TextTable(std::vector<std::string> header) : rows_{std::move(header)} {}
  void add_row(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  // First column left-aligned, the rest right-aligned (numbers).
  std::string render() const {
    std::vector<size_t> width;
    for (const auto& row : rows_)
      for (size_t c = 0; c < row.size(); ++c) {
        if (width.size() <= c) width.push_back(0);
        width[c] = std::max(width[c], row[c].size());
      }
    std::string out;
    for (size_t r = 0; r < rows_.size(); ++r) {
      for (size_t c = 0; c < rows_[r].size(); ++c) {
        const std::string& cell = rows_[r][c];
        std::string pad(width[c] - cell.size(), ' ');
        out += c == 0 ? cell + pad : pad + cell;
        if (c + 1 < rows_[r].size()) out += "  ";
      }
      out += "\n";
      if (r == 0) {
        size_t total = 0;
        for (size_t c = 0; c < width.size(); ++c) total += width[c] + (c + 1 < width.size() ? 2 : 0);
        out += std::string(total, '-') + "\n";
      }
    }
    return out;
  }

 private:
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace ptsim::reports
