// The block-style YAML reader (block_yaml.hpp). Each rule cites the part of yaml-cpp 0.7's
// scanner it stands in for (exp.h: PlainScalar, EndScalar, Comment; scanscalar.cpp; the null
// strings of node/convert IsNullString), so that a document either reads as yaml-cpp reads it or
// is handed back.
#include "common/block_yaml.hpp"

#include <string>
#include <vector>

namespace gpupool::detail {
namespace {

using Node = YAML::Node;

struct Line {
  int indent;             // spaces before the content
  std::string_view body;  // the content, from its first non-space character
};

bool is_sequence_item(std::string_view b) { return b == "-" || (b.size() > 1 && b[0] == '-' && b[1] == ' '); }

std::string_view trim_right(std::string_view s) {
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

std::string_view trim_left(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  return s;
}

/// What may follow a scalar on its line: nothing, or blanks and a comment (`#` after a blank).
bool only_comment(std::string_view rest) {
  if (rest.empty()) return true;
  if (rest.front() != ' ') return false;
  rest = trim_left(rest);
  return rest.empty() || rest.front() == '#';
}

/// Exp::PlainScalar: a plain scalar does not start with an indicator, nor with `-`, `?` or `:`
/// followed by a blank or the end.
bool plain_start(std::string_view s) {
  if (s.empty()) return false;
  if (std::string_view(",[]{}#&*!|>'\"%@`").find(s[0]) != std::string_view::npos) return false;
  if ((s[0] == '-' || s[0] == '?' || s[0] == ':') && (s.size() == 1 || s[1] == ' ')) return false;
  return true;
}

/// IsNullString: plain `~`, `null`, `Null`, `NULL` read as null nodes.
bool null_word(std::string_view s) { return s == "~" || s == "null" || s == "Null" || s == "NULL"; }

/// A quoted scalar at the start of `s`: its value, and where it ended (after the closing quote).
/// nullopt: not closed on this line, or a double-quoted one with an escape.
std::optional<std::pair<std::string, std::size_t>> quoted(std::string_view s) {
  const char q = s[0];
  std::string out;
  std::size_t i = 1;
  while (true) {
    const std::size_t e = s.find(q, i);
    if (e == std::string_view::npos) return std::nullopt;
    if (q == '"' && s.substr(i, e - i).find('\\') != std::string_view::npos) return std::nullopt;
    out.append(s.substr(i, e - i));
    if (q == '\'' && e + 1 < s.size() && s[e + 1] == '\'') {  // '' stands for '
      out.push_back('\'');
      i = e + 2;
      continue;
    }
    return std::pair(std::move(out), e + 1);
  }
}

/// A value written on its key's (or its dash's) line. nullopt: not in the subset.
std::optional<Node> scalar(std::string_view s) {
  if (s[0] == '\'' || s[0] == '"') {
    auto q = quoted(s);
    if (!q || !only_comment(s.substr(q->second))) return std::nullopt;
    return Node(q->first);
  }
  // Flow collections: only the empty ones.
  if (s[0] == '{' || s[0] == '[') {
    const std::string_view c = s.substr(0, 2);
    if ((c != "{}" && c != "[]") || !only_comment(s.substr(2))) return std::nullopt;
    return Node(c == "{}" ? YAML::NodeType::Map : YAML::NodeType::Sequence);
  }
  if (!plain_start(s)) return std::nullopt;
  // Exp::Comment ends a plain scalar at a blank followed by `#`; Exp::EndScalar at `:` followed
  // by a blank or the end, which would make this a mapping: not in a value here.
  if (const auto c = s.find(" #"); c != std::string_view::npos) s = s.substr(0, c);
  s = trim_right(s);
  if (s.find(": ") != std::string_view::npos || s.back() == ':') return std::nullopt;
  if (null_word(s)) return Node(YAML::NodeType::Null);
  return Node(std::string(s));
}

/// A `key: rest` line. `is_key` false: the line holds no key (a scalar, for a sequence item).
struct KeyLine {
  bool is_key = false;
  std::string key;
  std::string_view rest;
};

std::optional<KeyLine> key_line(std::string_view b) {
  KeyLine k;
  if (b[0] == '\'' || b[0] == '"') {
    auto q = quoted(b);
    if (!q) return std::nullopt;
    const std::string_view after = b.substr(q->second);
    if (after.empty() || after[0] != ':') return k;  // a quoted scalar, not a key
    if (after.size() > 1 && after[1] != ' ') return std::nullopt;
    k.is_key = true;
    k.key = std::move(q->first);
    k.rest = after.substr(1);
    return k;
  }
  std::size_t p = 0;
  while (true) {
    p = b.find(':', p);
    if (p == std::string_view::npos) return k;  // no key
    if (p + 1 == b.size() || b[p + 1] == ' ') break;
    ++p;
  }
  const std::string_view key = trim_right(b.substr(0, p));
  if (!plain_start(key) || key.find(" #") != std::string_view::npos || null_word(key)) return std::nullopt;
  k.is_key = true;
  k.key = std::string(key);
  k.rest = b.substr(p + 1);
  return k;
}

class Reader {
 public:
  bool split(std::string_view text) {
    if (text.size() >= 3 && text.substr(0, 3) == "\xEF\xBB\xBF") return false;  // a byte order mark
    for (unsigned char c : text)
      if ((c < 0x20 && c != '\n') || c == 0x7f) return false;  // tabs, CR, control characters
    std::size_t pos = 0;
    while (pos < text.size()) {
      std::size_t e = text.find('\n', pos);
      if (e == std::string_view::npos) e = text.size();
      const std::string_view l = text.substr(pos, e - pos);
      pos = e + 1;
      const std::size_t indent = l.find_first_not_of(' ');
      if (indent == std::string_view::npos || l[indent] == '#') continue;  // blank, or a comment
      if (indent == 0 && (l.substr(0, 3) == "---" || l.substr(0, 3) == "...")) return false;
      lines_.push_back({static_cast<int>(indent), l.substr(indent)});
    }
    return !lines_.empty();
  }

  std::optional<Node> document() {
    if (lines_.front().indent != 0) return std::nullopt;
    auto root = block(0);
    if (!root || at_ != lines_.size()) return std::nullopt;
    return root;
  }

 private:
  bool more() const { return at_ < lines_.size(); }

  std::optional<Node> block(int indent) {
    if (is_sequence_item(lines_[at_].body)) return sequence(indent);
    return mapping(indent);
  }

  /// The value of a key or a dash whose line holds none: the more indented block below, a
  /// sequence at the key's own indentation (`parent_indent`, keys only), or null.
  std::optional<Node> value_below(int parent_indent, bool sequence_may_align) {
    if (!more()) return Node(YAML::NodeType::Null);
    const Line& next = lines_[at_];
    if (next.indent > parent_indent) return block(next.indent);
    if (sequence_may_align && next.indent == parent_indent && is_sequence_item(next.body))
      return sequence(parent_indent);
    return Node(YAML::NodeType::Null);
  }

  std::optional<Node> mapping(int indent) {
    Node m(YAML::NodeType::Map);
    std::vector<std::string> keys;
    while (more() && lines_[at_].indent == indent && !is_sequence_item(lines_[at_].body)) {
      auto k = key_line(lines_[at_].body);
      if (!k || !k->is_key) return std::nullopt;
      for (const auto& seen : keys)
        if (seen == k->key) return std::nullopt;  // a duplicate: left to yaml-cpp
      ++at_;
      const std::string_view rest = trim_left(k->rest);
      std::optional<Node> value;
      if (rest.empty() || rest[0] == '#')
        value = value_below(indent, true);
      else if (k->rest[0] != ' ')
        return std::nullopt;
      else
        value = scalar(rest);
      if (!value) return std::nullopt;
      m.force_insert(k->key, *value);
      keys.push_back(std::move(k->key));
    }
    if (more() && lines_[at_].indent > indent) return std::nullopt;  // a continuation line, or bad indentation
    return m;
  }

  std::optional<Node> sequence(int indent) {
    Node s(YAML::NodeType::Sequence);
    while (more() && lines_[at_].indent == indent && is_sequence_item(lines_[at_].body)) {
      const std::string_view after_dash = lines_[at_].body.substr(1);
      const std::string_view rest = trim_left(after_dash);
      std::optional<Node> item;
      if (rest.empty() || rest[0] == '#') {
        ++at_;
        item = value_below(indent, false);
      } else if (is_sequence_item(rest)) {
        return std::nullopt;  // `- - x`
      } else {
        auto k = key_line(rest);
        if (!k) return std::nullopt;
        if (k->is_key) {
          // `- key: value`: a mapping whose keys line up with this one.
          lines_[at_] = {indent + static_cast<int>(after_dash.size() - rest.size()) + 1, rest};
          item = mapping(lines_[at_].indent);
        } else {
          item = scalar(rest);
          ++at_;
        }
      }
      if (!item) return std::nullopt;
      s.push_back(*item);
    }
    if (more() && lines_[at_].indent > indent) return std::nullopt;
    return s;
  }

  std::vector<Line> lines_;
  std::size_t at_ = 0;
};

}  // namespace

std::optional<YAML::Node> load_block_yaml(std::string_view text) {
  Reader r;
  if (!r.split(text)) return std::nullopt;
  return r.document();
}

}  // namespace gpupool::detail
