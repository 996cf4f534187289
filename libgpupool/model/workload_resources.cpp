// Resources validation (pkg/apis/core/validation ValidateResourceRequirements / validateResourceName).
#include "gpupool/error.hpp"
#include "gpupool/names.hpp"
#include "gpupool/resources.hpp"

#include <fmt/format.h>

namespace gpupool {

namespace {

void non_negative(const std::optional<Quantity>& q, const std::string& field) {
  if (q && q->is_negative()) throw ValidationError(field, q->to_string(), "must be greater than or equal to 0");
}

void request_within_limit(const std::optional<Quantity>& request, const std::optional<Quantity>& limit,
                          std::string_view field, std::string_view name) {
  // "must be less than or equal to <name> limit of <limit>" (the API server's wording).
  if (request && limit && *request > *limit)
    throw ValidationError(fmt::format("{}.requests[{}]", field, name), request->to_string(),
                          fmt::format("must be less than or equal to {} limit of {}", name, limit->to_string()));
}

}  // namespace

void validate(const Resources& r, std::string_view field) {
  non_negative(r.cpu_request, fmt::format("{}.requests[cpu]", field));
  non_negative(r.cpu_limit, fmt::format("{}.limits[cpu]", field));
  non_negative(r.memory_request, fmt::format("{}.requests[memory]", field));
  non_negative(r.memory_limit, fmt::format("{}.limits[memory]", field));
  request_within_limit(r.cpu_request, r.cpu_limit, field, "cpu");
  request_within_limit(r.memory_request, r.memory_limit, field, "memory");
  if (r.gpus < 0)
    throw ValidationError(fmt::format("{}.gpus", field), std::to_string(r.gpus), "must be greater than or equal to 0");
  for (const auto& [name, q] : r.extra) {
    std::string at = fmt::format("{}.extra[{}]", field, name);
    if (name == "cpu" || name == "memory")
      throw ValidationError(at, name, "set cpu and memory through their own fields (requests and limits differ)");
    validate_qualified_name(name, at);
    if (q.is_negative()) throw ValidationError(at, q.to_string(), "must be greater than or equal to 0");
    // Extended resources (a domain outside kubernetes.io) must be whole numbers.
    bool extended = name.find('/') != std::string::npos && name.find("kubernetes.io/") == std::string::npos;
    if (extended && q.nano_value() % 1000000000 != 0)
      throw ValidationError(at, q.to_string(), "must be an integer (extended resources are counted in whole units)");
  }
}

}  // namespace gpupool
