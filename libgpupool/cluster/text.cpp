#include "cluster/text.hpp"

#include <algorithm>

namespace gpupool::detail {

std::string format_table(const std::vector<std::vector<std::string>>& rows, int padding) {
  std::vector<size_t> width;
  for (const auto& row : rows)
    for (size_t i = 0; i < row.size(); ++i) {
      if (width.size() <= i) width.push_back(0);
      width[i] = std::max(width[i], row[i].size());
    }
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line.append(width[i] - row[i].size() + static_cast<size_t>(padding), ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line;
    out += '\n';
  }
  return out;
}

std::string html_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string html_table(const std::vector<std::vector<std::string>>& rows) {
  std::string out = "<table>\n";
  for (size_t r = 0; r < rows.size(); ++r) {
    out += "<tr>";
    const char* cell = r == 0 ? "th" : "td";
    for (const auto& v : rows[r]) out += std::string("<") + cell + ">" + html_escape(v) + "</" + cell + ">";
    out += "</tr>\n";
  }
  return out + "</table>\n";
}

}  // namespace gpupool::detail
