#include "embedded/selector.hpp"

#include <fmt/format.h>

#include <boost/json.hpp>

#include <algorithm>
#include <cctype>
#include <optional>
#include <set>

#include "common/utf8.hpp"
#include "embedded/store.hpp"
#include "embedded/typecheck.hpp"
#include "gpupool/names.hpp"

namespace gpupool::embedded {
namespace {

[[noreturn]] void bad_request(std::string message) { throw StatusError::bad_request(std::move(message)); }

// The label selector's lexer and parser (k8s.io/apimachinery/pkg/labels/selector.go Lexer and
// Parser, v1.32): tokens are the operators, parentheses, commas, "!", the keywords "in" and
// "notin", and identifiers (anything else up to whitespace or an operator character). The
// parser's errors are worded as there; a requirement's are prefixed "unable to parse
// requirement: ".
enum class Tok {
  EndOfString,
  ClosedPar,
  Comma,
  DoesNotExist,
  DoubleEquals,
  Equals,
  GreaterThan,
  Identifier,
  In,
  LessThan,
  NotEquals,
  NotIn,
  OpenPar
};

struct Item {
  Tok tok;
  std::string_view literal;
};

bool is_whitespace(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }
bool is_special(char c) { return c == '=' || c == '!' || c == '(' || c == ')' || c == ',' || c == '>' || c == '<'; }
std::optional<Tok> symbol_token(std::string_view s) {
  if (s == ")") return Tok::ClosedPar;
  if (s == ",") return Tok::Comma;
  if (s == "!") return Tok::DoesNotExist;
  if (s == "==") return Tok::DoubleEquals;
  if (s == "=") return Tok::Equals;
  if (s == ">") return Tok::GreaterThan;
  if (s == "<") return Tok::LessThan;
  if (s == "!=") return Tok::NotEquals;
  if (s == "(") return Tok::OpenPar;
  return std::nullopt;
}

// Lexer.Lex over the whole text. A NUL byte ends the text, as the Go lexer's read() returns 0 there.
std::vector<Item> scan(std::string_view text) {
  if (const auto nul = text.find('\0'); nul != std::string_view::npos) text = text.substr(0, nul);
  std::vector<Item> items;
  std::size_t pos = 0;
  for (;;) {
    while (pos < text.size() && is_whitespace(text[pos])) ++pos;
    if (pos == text.size()) {
      items.push_back({Tok::EndOfString, {}});
      return items;
    }
    const std::size_t start = pos;
    if (is_special(text[pos])) {
      // scanSpecialSymbol: the longest run of operator characters that is still a token ("!=",
      // "=="); every single one is a token, so one always is.
      Tok tok = *symbol_token(text.substr(pos, 1));
      ++pos;
      while (pos < text.size() && is_special(text[pos])) {
        const auto longer = symbol_token(text.substr(start, pos - start + 1));
        if (!longer) break;
        tok = *longer;
        ++pos;
      }
      items.push_back({tok, text.substr(start, pos - start)});
      continue;
    }
    while (pos < text.size() && !is_special(text[pos]) && !is_whitespace(text[pos])) ++pos;
    const std::string_view word = text.substr(start, pos - start);
    items.push_back({word == "in" ? Tok::In : word == "notin" ? Tok::NotIn : Tok::Identifier, word});
  }
}

class Parser {
 public:
  explicit Parser(std::string_view text) : items_(scan(text)) {}

  std::vector<LabelSelector::Requirement> parse() {
    std::vector<LabelSelector::Requirement> reqs;
    for (;;) {
      const Item next = lookahead(Context::Values);
      if (next.tok == Tok::EndOfString) return reqs;
      if (next.tok != Tok::Identifier && next.tok != Tok::DoesNotExist)
        bad_request(fmt::format("found '{}', expected: !, identifier, or 'end of string'", next.literal));
      try {
        reqs.push_back(requirement());
      } catch (const Failure& f) {
        bad_request("unable to parse requirement: " + f.message);
      }
      const Item after = consume(Context::Values);
      if (after.tok == Tok::EndOfString) return reqs;
      if (after.tok != Tok::Comma)
        bad_request(fmt::format("found '{}', expected: ',' or 'end of string'", after.literal));
      if (const Item n = lookahead(Context::Values); n.tok != Tok::Identifier && n.tok != Tok::DoesNotExist)
        bad_request(fmt::format("found '{}', expected: identifier after ','", n.literal));
    }
  }

 private:
  // In Values context "in" and "notin" are identifiers ("x in (in)"); as an operator they are not.
  enum class Context { KeyAndOperator, Values };
  struct Failure {
    std::string message;
  };
  [[noreturn]] static void fail(std::string message) { throw Failure{std::move(message)}; }

  Item lookahead(Context c) const { return in_context(items_[pos_], c); }
  Item consume(Context c) { return in_context(items_[pos_++], c); }
  static Item in_context(Item item, Context c) {
    if (c == Context::Values && (item.tok == Tok::In || item.tok == Tok::NotIn)) item.tok = Tok::Identifier;
    return item;
  }

  LabelSelector::Requirement requirement() {
    using Op = LabelSelector::Op;
    // parseKeyAndInferOperator: "!key", or a key followed by the end or a comma, is unary.
    LabelSelector::Requirement r;
    Item key = consume(Context::Values);
    bool absent = false;
    if (key.tok == Tok::DoesNotExist) {
      absent = true;
      key = consume(Context::Values);
    }
    if (key.tok != Tok::Identifier) fail(fmt::format("found '{}', expected: identifier", key.literal));
    // validateLabelKey with the parser's nil path: the field prints as "<nil>".
    if (auto errs = qualified_name_errors(key.literal); !errs.empty())
      fail(fmt::format("<nil>: Invalid value: {}: {}", go_quote(key.literal), fmt::join(errs, "; ")));
    r.key = std::string(key.literal);
    const Tok next = lookahead(Context::Values).tok;
    if (absent || next == Tok::EndOfString || next == Tok::Comma) {
      r.op = absent ? Op::DoesNotExist : Op::Exists;
      return r;
    }
    const Item op = consume(Context::KeyAndOperator);
    switch (op.tok) {
      case Tok::In:
        r.op = Op::In;
        break;
      case Tok::NotIn:
        r.op = Op::NotIn;
        break;
      case Tok::Equals:
      case Tok::DoubleEquals:
        r.op = Op::Equals;
        break;
      case Tok::NotEquals:
        r.op = Op::NotEquals;
        break;
      case Tok::GreaterThan:
        r.op = Op::GreaterThan;
        break;
      case Tok::LessThan:
        r.op = Op::LessThan;
        break;
      default:
        fail(fmt::format("found '{}', expected: in, notin, =, ==, !=, gt, lt", op.literal));
    }
    std::set<std::string> values;  // sets.String: sorted, each once
    if (r.op == Op::In || r.op == Op::NotIn)
      values = value_set();
    else
      values = exact_value();
    r.values.assign(values.begin(), values.end());
    check(r);
    return r;
  }

  // parseValues: "(" a list, possibly empty or with empty members ")".
  std::set<std::string> value_set() {
    if (const Item open = consume(Context::Values); open.tok != Tok::OpenPar)
      fail(fmt::format("found '{}' expected: '('", open.literal));
    const Item first = lookahead(Context::Values);
    if (first.tok == Tok::ClosedPar) {
      consume(Context::Values);
      return {""};
    }
    if (first.tok != Tok::Identifier && first.tok != Tok::Comma)
      fail(fmt::format("found '{}', expected: ',', ')' or identifier", first.literal));
    // parseIdentifiersList: commas around or between nothing stand for the empty value.
    std::set<std::string> s;
    for (;;) {
      const Item item = consume(Context::Values);
      if (item.tok == Tok::Identifier) {
        s.emplace(item.literal);
        const Item n = lookahead(Context::Values);
        if (n.tok == Tok::Comma) continue;
        if (n.tok == Tok::ClosedPar) break;
        fail(fmt::format("found '{}', expected: ',' or ')'", n.literal));
      }
      if (item.tok != Tok::Comma) fail(fmt::format("found '{}', expected: ',', or identifier", item.literal));
      if (s.empty()) s.emplace();
      const Tok n = lookahead(Context::Values).tok;
      if (n == Tok::ClosedPar) {
        s.emplace();
        break;
      }
      if (n == Tok::Comma) {
        consume(Context::Values);
        s.emplace();
      }
    }
    consume(Context::Values);  // the ")"
    return s;
  }

  // parseExactValue: one identifier, or nothing before the end or a comma (the empty value).
  std::set<std::string> exact_value() {
    if (const Tok n = lookahead(Context::Values).tok; n == Tok::EndOfString || n == Tok::Comma) return {""};
    const Item v = consume(Context::Values);
    if (v.tok != Tok::Identifier) fail(fmt::format("found '{}', expected: identifier", v.literal));
    return {std::string(v.literal)};
  }

  // NewRequirement's checks of the values (the key passed above), every error gathered as an
  // aggregate: one prints alone, several as "[a, b]".
  static void check(const LabelSelector::Requirement& r) {
    using Op = LabelSelector::Op;
    std::vector<std::string> errs;
    for (std::size_t i = 0; i < r.values.size(); ++i)
      if ((r.op == Op::GreaterThan || r.op == Op::LessThan) && !go_parse_int(r.values[i]))
        errs.push_back(
            fmt::format("values[{}]: Invalid value: {}: for 'Gt', 'Lt' operators, the value must be an integer", i,
                        go_quote(r.values[i])));
    for (std::size_t i = 0; i < r.values.size(); ++i)
      if (auto e = label_value_errors(r.values[i]); !e.empty())
        errs.push_back(
            fmt::format("values[{}][{}]: Invalid value: {}: {}", i, r.key, go_quote(r.values[i]), fmt::join(e, "; ")));
    if (errs.size() == 1) fail(errs.front());
    if (!errs.empty()) fail(fmt::format("[{}]", fmt::join(errs, ", ")));
  }

  std::vector<Item> items_;
  std::size_t pos_ = 0;
};

}  // namespace

LabelSelector LabelSelector::parse(std::string_view text) {
  LabelSelector sel;
  sel.reqs_ = Parser(text).parse();
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
      case Op::GreaterThan:
      case Op::LessThan: {
        // Requirement.Matches: both sides read as base-10 int64; a label that is not one matches neither.
        if (!has || r.values.size() != 1) return false;
        const std::optional<std::int64_t> label = go_parse_int(*value), bound = go_parse_int(r.values.front());
        if (!label || !bound) return false;
        if (r.op == Op::GreaterThan ? label.value() <= bound.value() : label.value() >= bound.value()) return false;
        break;
      }
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

namespace {

// fields.splitTerms: commas not escaped by a backslash separate the terms (escapes kept).
std::vector<std::string_view> split_terms(std::string_view text) {
  std::vector<std::string_view> terms;
  if (text.empty()) return terms;
  std::size_t start = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\\')
      ++i;  // whatever follows is data (a rune's later bytes are never ',' or '\\')
    else if (text[i] == ',') {
      terms.push_back(text.substr(start, i - start));
      start = i + 1;
    }
  }
  terms.push_back(text.substr(start));
  return terms;
}

// fields.UnescapeValue: "\\", "\\," and "\\=" stand for the character; any other escape, or a bare
// ',' or '=', is refused. Read rune by rune, as Go ranges over the string (an invalid byte is U+FFFD).
std::string unescape_value(std::string_view raw) {
  if (raw.find_first_of("\\,=") == std::string_view::npos) return std::string(raw);
  const std::string s = utf8::to_valid(raw);
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == ',' || c == '=')
      throw StatusError::bad_request(
          fmt::format("invalid field selector: unescaped character in value: {}", static_cast<int>(c)));
    if (c != '\\') {
      out += c;
      continue;
    }
    if (i + 1 == s.size()) throw StatusError::bad_request("invalid field selector: invalid escape sequence: \\");
    const char next = s[i + 1];
    if (next != '\\' && next != ',' && next != '=')
      throw StatusError::bad_request("invalid field selector: invalid escape sequence: \\" +
                                     std::string(s.substr(i + 1, utf8::sequence(s, i + 1))));
    out += next;
    ++i;
  }
  return out;
}

}  // namespace

FieldSelector FieldSelector::parse(std::string_view text) {
  // fields.parseSelector: the terms in sorted order (so the first refused one is the first in
  // that order, and the field label check after this meets them in it too), empty ones skipped;
  // each split at the first "!=", "==" or "=", neither side trimmed.
  FieldSelector sel;
  std::vector<std::string_view> terms = split_terms(text);
  std::sort(terms.begin(), terms.end());
  for (const std::string_view term : terms) {
    if (term.empty()) continue;
    std::size_t at = 0, len = 0;
    for (; at < term.size(); ++at) {
      const std::string_view rest = term.substr(at);
      if (rest.starts_with("!=") || rest.starts_with("==")) {
        len = 2;
        break;
      }
      if (rest.starts_with("=")) {
        len = 1;
        break;
      }
    }
    if (len == 0)
      throw StatusError::bad_request(fmt::format("invalid selector: '{}'; can't understand '{}'", text, term));
    Requirement r;
    r.path = std::string(term.substr(0, at));
    r.negate = term[at] == '!';
    r.value = unescape_value(term.substr(at + len));
    sel.reqs_.push_back(std::move(r));
  }
  return sel;
}

void FieldSelector::convert(std::vector<std::string> labels, std::string group_resource) {
  for (std::size_t i = 0; i < reqs_.size() && i < labels.size(); ++i) reqs_[i].path = std::move(labels[i]);
  group_resource_ = std::move(group_resource);
}

bool FieldSelector::matches(const json::object& object) const {
  return matches([&](const std::string& label) { return selectable_field(group_resource_, object, label); });
}

std::string selectable_field(std::string_view group_resource, const json::object& object, std::string_view label) {
  std::string value = field_value(object, label);
  if (!value.empty()) return value;
  if (group_resource == "pods" && label == "spec.hostNetwork")
    return "false";  // pkg/registry/core/pod/strategy.go ToSelectableFields: "default to false"
  if (group_resource == "nodes" && label == "spec.unschedulable")
    return "false";  // pkg/registry/core/node/strategy.go NodeToSelectableFields: fmt.Sprint of the bool
  if (group_resource == "jobs.batch" && label == "status.successful") {
    // pkg/registry/batch/job/strategy.go JobToSelectableFields: strconv.Itoa(Status.Succeeded).
    value = field_value(object, "status.succeeded");
    return value.empty() ? "0" : value;
  }
  if (group_resource == "events" && label == "source") {
    // pkg/registry/core/event/strategy.go ToSelectableFields: Source.Component, else
    // ReportingController (core/v1's reportingComponent).
    value = field_value(object, "source.component");
    return value.empty() ? field_value(object, "reportingComponent") : value;
  }
  return value;
}

std::optional<std::string> label_selector_string(const json::value* selector) {
  if (!selector || !selector->is_object()) return std::string();
  const json::object& sel = selector->as_object();
  struct Req {
    std::string key, text;
  };
  std::vector<Req> reqs;
  auto str = [](const json::value& v) { return v.is_string() ? std::string(v.as_string()) : std::string(); };
  if (const auto* ml = sel.if_contains("matchLabels"); ml && ml->is_object())
    for (const auto& [k, v] : ml->as_object()) reqs.push_back({std::string(k), std::string(k) + "=" + str(v)});
  if (const auto* me = sel.if_contains("matchExpressions"); me && me->is_array())
    for (const auto& e : me->as_array()) {
      if (!e.is_object()) return std::nullopt;
      const json::object& expr = e.as_object();
      const std::string key = expr.contains("key") ? str(expr.at("key")) : std::string();
      const std::string op = expr.contains("operator") ? str(expr.at("operator")) : std::string();
      std::vector<std::string> values;
      if (const auto* vs = expr.if_contains("values"); vs && vs->is_array())
        for (const auto& v : vs->as_array()) values.push_back(str(v));
      // labels.NewRequirement: In/NotIn need values, Exists/DoesNotExist take none.
      if (op == "In" || op == "NotIn") {
        if (values.empty()) return std::nullopt;
        std::sort(values.begin(), values.end());  // Requirement.String's safeSort
        std::string joined;
        for (const auto& v : values) joined += (joined.empty() ? "" : ",") + v;
        reqs.push_back({key, key + (op == "In" ? " in (" : " notin (") + joined + ")"});
      } else if (op == "Exists" || op == "DoesNotExist") {
        if (!values.empty()) return std::nullopt;
        reqs.push_back({key, (op == "Exists" ? "" : "!") + key});
      } else {
        return std::nullopt;
      }
    }
  // sort.Sort(ByKey) over so few requirements is Go's insertion sort: stable.
  std::stable_sort(reqs.begin(), reqs.end(), [](const Req& a, const Req& b) { return a.key < b.key; });
  std::string out;
  for (const auto& r : reqs) out += (out.empty() ? "" : ",") + r.text;
  return out;
}

}  // namespace gpupool::embedded
