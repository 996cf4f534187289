// gpupool/image.hpp — container image references and a site's image catalog.
//
// References follow the distribution reference grammar (github.com/distribution/reference,
// reference.go and normalize.go):
//   reference := name [":" tag] ["@" digest]
//   name      := [domain "/"] path-component ["/" path-component]*
//   domain    := host [":" port]      (the first component is a domain only when it contains "." or
//                                      ":" or is "localhost"; otherwise the image is on Docker Hub)
//   path-component := [a-z0-9]+ ([_.]|__|[-]*) [a-z0-9]+ ...
//   tag       := [\w][\w.-]{0,127}
//   digest    := algorithm ":" hex    (sha256 needs exactly 64 lowercase hex digits)
// Docker Hub defaults: no domain -> "docker.io"; a single path component -> "library/<name>".
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpupool {

/// A parsed image reference. Fields hold what was written; the accessors apply Docker's defaults.
struct ImageRef {
  std::string domain;  ///< "registry[:port]" as written; empty when none was given
  std::string path;    ///< repository path as written ("ubuntu", "library/ubuntu", "team/app")
  std::string tag;     ///< empty when none was given
  std::string digest;  ///< "sha256:<64 hex>", empty when none was given

  /// Parses `text`; throws ValidationError(field, text, rule) naming the broken rule.
  static ImageRef parse(std::string_view text, std::string_view field = "image");

  /// "docker.io" when no domain was given.
  std::string registry() const;
  /// Path with Docker Hub's "library/" prefix applied ("ubuntu" -> "library/ubuntu").
  std::string repository() const;
  /// Fully qualified form: registry/repository[:tag][@digest], tag "latest" when neither tag nor
  /// digest was given (as `docker pull` does).
  std::string normalized() const;
  /// The reference as written (domain/path[:tag][@digest]).
  std::string to_string() const;
  bool operator==(const ImageRef&) const = default;
};

/// One image of a site's catalog (the guide's table: name, tags, GPU support, notes).
struct CatalogImage {
  std::string name;               ///< repository name below the catalog's prefix: "ubuntu-pytorch"
  std::vector<std::string> tags;  ///< tags that exist: {"1.5.0"}
  bool gpu = false;               ///< supports GPUs
  std::string cuda;               ///< CUDA version, e.g. "10.1" (empty when none)
  std::string framework;          ///< e.g. "pytorch 1.5.0"
  std::string notes;
  bool operator==(const CatalogImage&) const = default;
};

/// A registry prefix plus the images it offers. Resolves shorthand ("ubuntu-pytorch:1.5.0") to the
/// full reference ("harbor.iiis.co/library/ubuntu-pytorch:1.5.0").
struct ImageCatalog {
  std::string prefix;  ///< "registry[:port]/project", e.g. "harbor.iiis.co/library"; may be empty
  std::vector<CatalogImage> images;
  bool operator==(const ImageCatalog&) const = default;

  /// The entry named `name`, if any.
  const CatalogImage* find(std::string_view name) const;
  /// Resolves what a user typed:
  ///  - a name without domain that the catalog lists ("ubuntu-pytorch:1.5.0") -> prefix/name:tag;
  ///  - a full reference under the prefix is checked the same way;
  ///  - for a catalogued image, a tag the catalog does not list (or no tag) is a ValidationError
  ///    listing the tags that exist;
  ///  - anything else passes through unchanged (parsed and validated, text kept as written).
  std::string resolve(std::string_view text, std::string_view field = "image") const;
};

}  // namespace gpupool
