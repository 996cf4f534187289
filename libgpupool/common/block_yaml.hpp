// common/block_yaml.hpp — a fast reader of the block-style YAML that kubeconfigs are written in.
//
// yaml-cpp scans a kubeconfig character by character through its regular-expression matchers:
// ~0.2 ms for a 2 KB file with inline certificates, a twentieth of a `gpupool get`. Kubeconfigs
// written by kubectl, kubeadm, kind, minikube and gpupool use a small part of YAML; this reader
// takes that part in one pass over the lines and builds the same yaml-cpp nodes, and hands
// anything else back (nullopt) for yaml-cpp to read. tests/common/block_yaml_test.cpp compares
// the two on generated and mutated documents.
#pragma once

#include <yaml-cpp/yaml.h>

#include <optional>
#include <string_view>

#include "gpupool/error.hpp"

namespace gpupool::detail {

/// The document `text` as YAML::Load(text) gives it, when it is written only with: block
/// mappings and block sequences (a sequence may sit at its key's indentation; `- key: value`
/// opens a mapping), plain scalars, single-quoted scalars, double-quoted scalars without
/// escapes, `{}` and `[]`, blank lines and comments. nullopt for anything else (anchors,
/// aliases, tags, other flow collections, block and multi-line scalars, escapes, document
/// markers and directives, tabs, carriage returns, duplicate or null keys, an empty document),
/// and for text that is not YAML. The nodes carry no marks (no line numbers): a caller that
/// reports lines reads the document with yaml-cpp again to word an error.
std::optional<YAML::Node> load_block_yaml(std::string_view text);

/// `read(true)`: a reading from nodes load_block_yaml gave where it took the text; when that
/// reading throws a ConfigError, `read(false)`: again from yaml-cpp's nodes, whose marks let the
/// error name its line.
template <class Read>
auto read_with_lines(Read&& read) -> decltype(read(true)) {
  try {
    return read(true);
  } catch (const ConfigError&) {
    return read(false);
  }
}

}  // namespace gpupool::detail
