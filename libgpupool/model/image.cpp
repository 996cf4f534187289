#include "gpupool/image.hpp"

#include "common/ascii.hpp"
#include "gpupool/error.hpp"
#include "model/image_grammar.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace gpupool {

namespace {

using ascii::alnum;
using ascii::alpha;
using ascii::digit;
using ascii::hex_digit;
using ascii::lower_alnum;

/// Advances `i` over the characters of `s` that `in` accepts; true when it moved.
template <typename Pred>
bool span(std::string_view s, std::size_t& i, Pred in) {
  const std::size_t from = i;
  while (i < s.size() && in(s[i])) ++i;
  return i > from;
}

bool has_upper(std::string_view s) {
  return std::any_of(s.begin(), s.end(), [](char c) { return c >= 'A' && c <= 'Z'; });
}

// normalize.go splitDockerDomain: the first component names a registry only when it looks like a
// host ("." or ":" in it, "localhost", or upper-case letters, which no repository path may have).
bool looks_like_domain(std::string_view first) {
  return first.find_first_of(".:") != std::string_view::npos || first == "localhost" || has_upper(first);
}

[[noreturn]] void fail(std::string_view field, std::string_view text, std::string rule) {
  throw ValidationError(std::string(field), std::string(text), std::move(rule));
}

}  // namespace

namespace image_grammar {

bool path_component(std::string_view s) {
  std::size_t i = 0;
  if (!span(s, i, lower_alnum)) return false;
  while (i < s.size()) {
    // A separator: ".", "_", "__" or a run of dashes; then letters and digits again.
    if (s[i] == '.') {
      ++i;
    } else if (s[i] == '_') {
      ++i;
      if (i < s.size() && s[i] == '_') ++i;
    } else if (!span(s, i, [](char c) { return c == '-'; })) {
      return false;
    }
    if (!span(s, i, lower_alnum)) return false;
  }
  return true;
}

bool domain(std::string_view s) {
  std::size_t i = 0;
  if (!s.empty() && s[0] == '[') {
    ++i;
    if (!span(s, i, [](char c) { return hex_digit(c) || c == ':'; }) || i >= s.size() || s[i] != ']') return false;
    ++i;
  } else {
    while (true) {  // a component: letters, digits and dashes, not starting or ending with a dash
      const std::size_t from = i;
      if (!span(s, i, [](char c) { return alnum(c) || c == '-'; }) || s[from] == '-' || s[i - 1] == '-') return false;
      if (i < s.size() && s[i] == '.') {
        ++i;
        continue;
      }
      break;
    }
  }
  if (i < s.size() && s[i] == ':') {
    ++i;
    if (!span(s, i, digit)) return false;
  }
  return i == s.size();
}

bool tag(std::string_view s) {
  if (s.empty() || s.size() > 128 || !(alnum(s[0]) || s[0] == '_')) return false;
  return std::all_of(s.begin() + 1, s.end(), [](char c) { return alnum(c) || c == '_' || c == '.' || c == '-'; });
}

bool digest(std::string_view s) {
  const auto colon = s.find(':');
  if (colon == std::string_view::npos) return false;
  const std::string_view algorithm = s.substr(0, colon), encoded = s.substr(colon + 1);
  if (encoded.size() < 32 || !std::all_of(encoded.begin(), encoded.end(), hex_digit)) return false;
  std::size_t i = 0;
  while (true) {  // components of a letter and then letters and digits, joined by one of - _ + .
    if (i >= algorithm.size() || !alpha(algorithm[i])) return false;
    ++i;
    span(algorithm, i, alnum);
    if (i == algorithm.size()) return true;
    const char sep = algorithm[i];
    if (sep != '-' && sep != '_' && sep != '+' && sep != '.') return false;
    ++i;
  }
}

}  // namespace image_grammar

ImageRef ImageRef::parse(std::string_view text, std::string_view field) {
  constexpr std::string_view kForm = "expected [registry[:port]/]path[:tag][@sha256:digest]";
  if (text.empty()) fail(field, text, fmt::format("an image reference must not be empty ({})", kForm));
  if (text.find_first_of(" \t\r\n") != std::string_view::npos)
    fail(field, text, fmt::format("an image reference contains no whitespace ({})", kForm));
  ImageRef ref;
  std::string_view rest = text;
  if (auto at = rest.find('@'); at != std::string_view::npos) {
    ref.digest = std::string(rest.substr(at + 1));
    rest = rest.substr(0, at);
    if (!image_grammar::digest(ref.digest))
      fail(field, text,
           fmt::format("digest \"{}\" must be <algorithm>:<hex>, e.g. sha256: and 64 hex digits", ref.digest));
    if (ref.digest.rfind("sha256:", 0) == 0) {
      std::string_view hex = std::string_view(ref.digest).substr(7);
      bool ok = hex.size() == 64 && std::all_of(hex.begin(), hex.end(), [](char c) {
                  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
                });
      if (!ok) fail(field, text, "a sha256 digest has exactly 64 lowercase hex digits");
    }
  }
  auto last_slash = rest.rfind('/');
  auto colon = rest.rfind(':');
  if (colon != std::string_view::npos && (last_slash == std::string_view::npos || colon > last_slash)) {
    ref.tag = std::string(rest.substr(colon + 1));
    rest = rest.substr(0, colon);
    if (!image_grammar::tag(ref.tag))
      fail(field, text,
           fmt::format("tag \"{}\" must be 1 to 128 of [A-Za-z0-9_.-], not starting with '.' or '-'", ref.tag));
  }
  if (rest.empty()) fail(field, text, fmt::format("the repository name is missing ({})", kForm));
  if (auto slash = rest.find('/'); slash != std::string_view::npos && looks_like_domain(rest.substr(0, slash))) {
    ref.domain = std::string(rest.substr(0, slash));
    rest = rest.substr(slash + 1);
    if (!image_grammar::domain(ref.domain))
      fail(field, text,
           fmt::format("registry \"{}\" must be a host name or IP address with an optional :port", ref.domain));
  }
  ref.path = std::string(rest);
  if (has_upper(ref.path)) fail(field, text, "the repository path must be lowercase");
  if (ref.domain.size() + ref.path.size() + (ref.domain.empty() ? 0 : 1) > 255)
    fail(field, text, "the repository name must not be more than 255 characters");
  std::size_t start = 0;
  while (true) {
    auto end = ref.path.find('/', start);
    std::string component = ref.path.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (!image_grammar::path_component(component))
      fail(field, text,
           fmt::format("path component \"{}\" must be lowercase letters and digits, separated by '.', '_', '__' "
                       "or dashes, starting and ending with a letter or digit",
                       component));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  // normalize.go: a bare 64-hex name would be mistaken for an image ID.
  if (ref.domain.empty() && ref.path.size() == 64 && std::all_of(ref.path.begin(), ref.path.end(), [](char c) {
        return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
      }))
    fail(field, text, "a repository name cannot be a 64-character hexadecimal string (that is an image ID)");
  return ref;
}

std::string ImageRef::registry() const {
  if (domain.empty() || domain == "index.docker.io") return "docker.io";
  return domain;
}

std::string ImageRef::repository() const {
  if (registry() == "docker.io" && path.find('/') == std::string::npos) return "library/" + path;
  return path;
}

std::string ImageRef::normalized() const {
  std::string out = registry() + "/" + repository();
  if (!tag.empty()) out += ":" + tag;
  if (tag.empty() && digest.empty()) out += ":latest";
  if (!digest.empty()) out += "@" + digest;
  return out;
}

std::string ImageRef::to_string() const {
  std::string out = domain.empty() ? path : domain + "/" + path;
  if (!tag.empty()) out += ":" + tag;
  if (!digest.empty()) out += "@" + digest;
  return out;
}

const CatalogImage* ImageCatalog::find(std::string_view name) const {
  for (const auto& image : images)
    if (image.name == name) return &image;
  return nullptr;
}

std::string ImageCatalog::resolve(std::string_view text, std::string_view field) const {
  ImageRef ref = ImageRef::parse(text, field);
  const CatalogImage* entry = nullptr;
  if (ref.domain.empty() && ref.path.find('/') == std::string::npos) {
    entry = find(ref.path);
  } else if (!prefix.empty()) {
    std::string written = ref.domain.empty() ? ref.path : ref.domain + "/" + ref.path;
    if (written.size() > prefix.size() && written.compare(0, prefix.size(), prefix) == 0 &&
        written[prefix.size()] == '/')
      entry = find(std::string_view(written).substr(prefix.size() + 1));
  }
  if (entry == nullptr) return std::string(text);
  bool known = !ref.tag.empty() && std::find(entry->tags.begin(), entry->tags.end(), ref.tag) != entry->tags.end();
  if (!known && !(ref.tag.empty() && !ref.digest.empty())) {
    std::string tags = fmt::format("{}", fmt::join(entry->tags, ", "));
    if (ref.tag.empty())
      fail(field, text, fmt::format("catalogued image {} needs a tag; available tags: {}", entry->name, tags));
    fail(field, text, fmt::format("image {} has no tag \"{}\"; available tags: {}", entry->name, ref.tag, tags));
  }
  std::string out = prefix.empty() ? entry->name : prefix + "/" + entry->name;
  if (!ref.tag.empty()) out += ":" + ref.tag;
  if (!ref.digest.empty()) out += "@" + ref.digest;
  return out;
}

}  // namespace gpupool
