// gpupool/manifest.hpp — Kubernetes manifests as text: YAML (multi-document) and JSON, both ways.
//
// Writing: to_yaml() emits one document per object separated by "---"; to_json() emits a single
// object, or a v1 List for several. Both are what `kubectl apply -f` accepts. Key order is kept as
// in the objects. Strings that a YAML reader would take for another type ("1.14.1" is fine, but
// "10000", "true", "1e3", "0x1F", "~", "yes") are quoted, so types survive the round trip.
//
// Reading: parse_manifests() takes YAML or JSON, one or many documents (a v1 List is expanded into
// its items), and keeps every field, including those gpupool does not model. YAML scalars resolve
// like the YAML 1.2 core schema (which is what Kubernetes' YAML-to-JSON conversion produces for
// these forms): quoted -> string; plain true/false -> bool; null/~/empty -> null; integers ->
// int64; decimals with "." or an exponent -> double; anything else -> string.
#pragma once

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace gpupool {

/// YAML text, documents separated by "---".
std::string to_yaml(const std::vector<boost::json::object>& objects);
std::string to_yaml(const boost::json::value& value);

/// Indented JSON; several objects become {"apiVersion":"v1","kind":"List","items":[...]}.
std::string to_json(const std::vector<boost::json::object>& objects);
std::string to_json(const boost::json::value& value);

/// Reads YAML or JSON text (JSON is YAML too) into objects. Empty documents are skipped. A
/// document that is not a mapping, or malformed text, is a ConfigError naming `filename` and line.
std::vector<boost::json::object> parse_manifests(std::string_view text, std::string_view filename = "<manifest>");

/// Reads one YAML (or JSON) document of any shape into a JSON value with the same scalar rules
/// (null for empty text). More than one document, or malformed text, is a ConfigError.
boost::json::value parse_yaml(std::string_view text, std::string_view filename = "<yaml>");

}  // namespace gpupool
