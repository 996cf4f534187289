#include "embedded/selector.hpp"

#include <fmt/format.h>

#include <boost/json.hpp>

#include <algorithm>
#include <cctype>
#include <optional>

#include "embedded/store.hpp"

namespace gpupool::embedded {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// Splits on commas that are not inside parentheses ("a in (x,y),b" -> "a in (x,y)", "b").
std::vector<std::string_view> split_top(std::string_view s) {
  std::vector<std::string_view> out;
  int depth = 0;
  std::size_t start = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '(') ++depth;
    if (s[i] == ')') --depth;
    if (s[i] == ',' && depth == 0) {
      out.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  }
  out.push_back(s.substr(start));
  return out;
}

bool label_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' || c == '/';
}

bool valid_token(std::string_view s, bool allow_empty) {
  if (s.empty()) return allow_empty;
  return std::all_of(s.begin(), s.end(), label_char);
}

[[noreturn]] void bad(std::string_view what, std::string_view text) {
  throw StatusError::bad_request("unable to parse requirement: " + std::string(what) + ": \"" + std::string(text) +
                                 "\"");
}

}  // namespace

LabelSelector LabelSelector::parse(std::string_view text) {
  LabelSelector sel;
  if (trim(text).empty()) return sel;
  for (auto part : split_top(text)) {
    part = trim(part);
    if (part.empty()) bad("empty requirement", text);
    Requirement r;
    if (part.front() == '!') {
      r.key = std::string(trim(part.substr(1)));
      r.op = Op::DoesNotExist;
      if (!valid_token(r.key, false)) bad("invalid label key", part);
      sel.reqs_.push_back(std::move(r));
      continue;
    }
    std::size_t pos;
    if ((pos = part.find("!=")) != std::string_view::npos) {
      r.key = std::string(trim(part.substr(0, pos)));
      r.op = Op::NotEquals;
      r.values.emplace_back(trim(part.substr(pos + 2)));
    } else if ((pos = part.find("==")) != std::string_view::npos) {
      r.key = std::string(trim(part.substr(0, pos)));
      r.op = Op::Equals;
      r.values.emplace_back(trim(part.substr(pos + 2)));
    } else if ((pos = part.find('=')) != std::string_view::npos) {
      r.key = std::string(trim(part.substr(0, pos)));
      r.op = Op::Equals;
      r.values.emplace_back(trim(part.substr(pos + 1)));
    } else if (auto open = part.find('('); open != std::string_view::npos) {
      // labels/selector.go parseIdentifiersList: an unclosed list runs to the end of the text,
      // where the lexer's EndOfString token is the literal ''.
      if (part.back() != ')')
        throw StatusError::bad_request("unable to parse requirement: found '', expected: ',' or ')'");
      auto head = trim(part.substr(0, open));
      auto sp = head.find_last_of(" \t");
      if (sp == std::string_view::npos) bad("expected 'in' or 'notin'", part);
      auto op = trim(head.substr(sp + 1));
      r.key = std::string(trim(head.substr(0, sp)));
      if (op == "in")
        r.op = Op::In;
      else if (op == "notin")
        r.op = Op::NotIn;
      else
        bad("expected 'in' or 'notin'", part);
      auto inner = part.substr(open + 1, part.size() - open - 2);
      for (auto v : split_top(inner)) {
        v = trim(v);
        if (!valid_token(v, true)) bad("invalid label value", part);
        r.values.emplace_back(v);
      }
    } else {
      // labels.Parser: a key followed by anything but a comma or the end wants an operator; the
      // lexer's next token is read as one ("a b": found 'b').
      if (const auto ws = part.find_first_of(" \t\n\r"); ws != std::string_view::npos) {
        const std::string_view rest = trim(part.substr(ws));
        const auto stop = rest.find_first_of(" \t\n\r!=(),");
        const std::string lit(rest.substr(0, stop == std::string_view::npos ? rest.size() : stop));
        throw StatusError::bad_request(
            fmt::format("unable to parse requirement: found '{}', expected: in, notin, =, ==, !=, gt, lt", lit));
      }
      r.key = std::string(part);
      r.op = Op::Exists;
    }
    if (!valid_token(r.key, false)) bad("invalid label key", part);
    for (const auto& v : r.values)
      if (!valid_token(v, true)) bad("invalid label value", part);
    sel.reqs_.push_back(std::move(r));
  }
  return sel;
}

namespace {

/// Whether every requirement holds; `value_of(key)` is the label's value, nullopt when absent.
template <class ValueOf>
bool all_hold(const std::vector<LabelSelector::Requirement>& reqs, ValueOf&& value_of) {
  using Op = LabelSelector::Op;
  for (const auto& r : reqs) {
    const std::optional<std::string_view> value = value_of(r.key);
    const bool has = value.has_value();
    const auto in_values = [&] { return has && std::find(r.values.begin(), r.values.end(), *value) != r.values.end(); };
    switch (r.op) {
      case Op::Equals:
      case Op::In:
        if (!in_values()) return false;
        break;
      case Op::NotEquals:
      case Op::NotIn:
        if (in_values()) return false;
        break;
      case Op::Exists:
        if (!has) return false;
        break;
      case Op::DoesNotExist:
        if (has) return false;
        break;
    }
  }
  return true;
}

}  // namespace

bool LabelSelector::matches(const std::map<std::string, std::string>& labels) const {
  return all_hold(reqs_, [&](const std::string& key) -> std::optional<std::string_view> {
    const auto it = labels.find(key);
    if (it == labels.end()) return std::nullopt;
    return std::string_view(it->second);
  });
}

bool LabelSelector::matches_labels_of(const boost::json::object& object) const {
  const boost::json::object* labels = nullptr;
  if (const auto* md = object.if_contains("metadata"); md && md->is_object())
    if (const auto* l = md->as_object().if_contains("labels"); l && l->is_object()) labels = &l->as_object();
  // labels_of()'s view: only string values are labels.
  return all_hold(reqs_, [&](const std::string& key) -> std::optional<std::string_view> {
    const boost::json::value* v = labels ? labels->if_contains(key) : nullptr;
    if (!v || !v->is_string()) return std::nullopt;
    return std::string_view(v->get_string());
  });
}

FieldSelector FieldSelector::parse(std::string_view text) {
  FieldSelector sel;
  if (trim(text).empty()) return sel;
  for (auto part : split_top(text)) {
    part = trim(part);
    Requirement r;
    std::size_t pos;
    if ((pos = part.find("!=")) != std::string_view::npos) {
      r.negate = true;
      r.path = std::string(trim(part.substr(0, pos)));
      r.value = std::string(trim(part.substr(pos + 2)));
    } else if ((pos = part.find("==")) != std::string_view::npos) {
      r.path = std::string(trim(part.substr(0, pos)));
      r.value = std::string(trim(part.substr(pos + 2)));
    } else if ((pos = part.find('=')) != std::string_view::npos) {
      r.path = std::string(trim(part.substr(0, pos)));
      r.value = std::string(trim(part.substr(pos + 1)));
    } else {
      // fields/selector.go: "invalid selector: '%s'; can't understand '%s'"
      throw StatusError::bad_request("invalid selector: '" + std::string(text) + "'; can't understand '" +
                                     std::string(part) + "'");
    }
    if (r.path.empty())
      throw StatusError::bad_request("invalid selector: '" + std::string(text) + "'; can't understand '" +
                                     std::string(part) + "'");
    sel.reqs_.push_back(std::move(r));
  }
  return sel;
}

}  // namespace gpupool::embedded
