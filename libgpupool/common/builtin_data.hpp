// Built-in data files (data/<folder>/<name>.yaml) compiled into the library by
// cmake/EmbedData.cmake, so an installed gpupool needs no data directory.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace gpupool::detail {

/// Contents of data/<path> (e.g. "profiles/iiis.yaml"); an empty view when there is no such file.
std::string_view builtin_data(std::string_view path);

/// Base names without extension of the files in data/<folder>, sorted (e.g. {"generic", "iiis"}).
std::vector<std::string> builtin_data_names(std::string_view folder);

}  // namespace gpupool::detail
