// Plain-text tables (kubectl's tabwriter layout) and HTML escaping for the facade's displays.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace gpupool::detail {

/// Left-aligned columns separated by at least `padding` spaces (kubectl uses 3, arena 2); no
/// trailing spaces.
std::string format_table(const std::vector<std::vector<std::string>>& rows, int padding);
/// An HTML <table> with a header row; cells are escaped.
std::string html_table(const std::vector<std::vector<std::string>>& rows);
std::string html_escape(std::string_view text);

}  // namespace gpupool::detail
