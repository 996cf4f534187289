// model/image_grammar.hpp — the parts of an image reference, as github.com/distribution/reference
// (regexp.go) defines them, matched by hand: a std::regex would be compiled once per process, which
// a short command (`gpupool get`) paid for on every run while reading its profile's catalog.
// tests/model/image_test.cpp checks each against the regular expression it stands for.
#pragma once

#include <string_view>

namespace gpupool::image_grammar {

/// pathComponent: [a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*
bool path_component(std::string_view s);
/// domainAndPort: host name components ([a-zA-Z0-9] or [a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9]) joined
/// by ".", or a bracketed IPv6 address \[[a-fA-F0-9:]+\]; then an optional :[0-9]+.
bool domain(std::string_view s);
/// tag: [A-Za-z0-9_][A-Za-z0-9_.-]{0,127}
bool tag(std::string_view s);
/// digest: [A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}
bool digest(std::string_view s);

}  // namespace gpupool::image_grammar
