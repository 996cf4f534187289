#include "embedded/protobuf.hpp"

#include <fmt/format.h>

#include "embedded/store.hpp"
#include "model/kube_protobuf.hpp"

namespace gpupool::embedded {

bool is_kubernetes_protobuf(std::string_view body) { return protobuf::is_kubernetes_protobuf(body); }

namespace {

boost::json::object decode_as_api_server(std::string_view body, boost::json::object (*decode)(std::string_view)) {
  try {
    return decode(body);
  } catch (const protobuf::DecodeError& e) {
    if (!e.unknown_kind())
      throw StatusError::bad_request(fmt::format("the protobuf body could not be decoded: {}", e.what()));
    throw StatusError(
        415, "UnsupportedMediaType",
        fmt::format("the body of the request was in an unknown format - accepted media types include: "
                    "application/json, application/yaml (protobuf is decoded for {}; not {} {})",
                    protobuf::object_kinds(), e.api_version().empty() ? "<no apiVersion>" : e.api_version(), e.kind()));
  }
}

}  // namespace

boost::json::object decode_kubernetes_protobuf(std::string_view body) {
  return decode_as_api_server(body, protobuf::decode_object);
}

boost::json::object decode_kubernetes_protobuf_delete_options(std::string_view body) {
  return decode_as_api_server(body, protobuf::decode_delete_options);
}

}  // namespace gpupool::embedded
