// Taints and tolerations with Kubernetes' rules. Sources (read, not copied):
//  - k8s.io/api/core/v1/toleration.go  Toleration.ToleratesTaint
//  - k8s.io/api/core/v1/taint.go       Taint.ToString, Taint.MatchTaint
//  - pkg/apis/core/validation          ValidateTolerations, validateNodeTaints
//  - kubectl pkg/cmd/taint             parseTaints / parseTaint / reorganizeTaints
//  - kube-scheduler plugins/tainttoleration (Filter; Score counts PreferNoSchedule)
#include "gpupool/taint.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <boost/json.hpp>

#include "common/join.hpp"
#include "gpupool/error.hpp"
#include "gpupool/names.hpp"

namespace gpupool {
namespace {

constexpr std::string_view kSupportedEffects = "supported values: \"NoSchedule\", \"PreferNoSchedule\", \"NoExecute\"";

[[noreturn]] void fail(std::string_view field, std::string_view value, std::string rule) {
  throw ValidationError(std::string(field), std::string(value), std::move(rule));
}

std::string sub(std::string_view field, std::string_view child) {
  std::string out(field);
  out += '.';
  out += child;
  return out;
}

bool same_effect(const Toleration& t, TaintEffect e) { return !t.effect || *t.effect == e; }

// parse_taint_effect, but the error shows the whole text the effect came from.
TaintEffect effect_in(std::string_view effect, std::string_view whole, std::string_view field) {
  try {
    return parse_taint_effect(effect, field);
  } catch (const ValidationError& e) {
    throw ValidationError(std::string(field), std::string(whole),
                          "invalid taint effect \"" + std::string(effect) + "\": " + e.rule());
  }
}

}  // namespace

std::string_view to_string(TaintEffect e) noexcept {
  switch (e) {
    case TaintEffect::NoSchedule:
      return "NoSchedule";
    case TaintEffect::PreferNoSchedule:
      return "PreferNoSchedule";
    case TaintEffect::NoExecute:
      return "NoExecute";
  }
  return "NoSchedule";
}

TaintEffect parse_taint_effect(std::string_view text, std::string_view field) {
  for (auto e : {TaintEffect::NoSchedule, TaintEffect::PreferNoSchedule, TaintEffect::NoExecute})
    if (text == to_string(e)) return e;
  if (text.empty()) fail(field, text, "taint effect is required; " + std::string(kSupportedEffects));
  fail(field, text, "unsupported taint effect; " + std::string(kSupportedEffects) + " (case matters)");
}

// core/v1 Taint.ToString: "key=value:Effect", or "key:Effect" when the value is empty.
std::string Taint::to_string() const {
  std::string out = key;
  if (!value.empty()) out += "=" + value;
  out += ':';
  out += gpupool::to_string(effect);
  return out;
}

// validateNodeTaints, for one taint: the key is a qualified name, the value a label value.
void validate(const Taint& taint, std::string_view field) {
  if (auto errs = qualified_name_errors(taint.key); !errs.empty())
    fail(sub(field, "key"), taint.key, text::join(errs, "; "));
  if (auto errs = label_value_errors(taint.value); !errs.empty())
    fail(sub(field, "value"), taint.value, text::join(errs, ";"));
}

std::vector<std::size_t> duplicate_taints(const std::vector<Taint>& taints) {
  // validateNodeTaints: "taints must be unique by key and effect pair".
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < taints.size(); ++i)
    for (std::size_t j = 0; j < i; ++j)
      if (taints[j].key == taints[i].key && taints[j].effect == taints[i].effect) {
        out.push_back(i);
        break;
      }
  return out;
}

void validate(const std::vector<Taint>& taints, std::string_view field) {
  const auto dups = duplicate_taints(taints);
  for (std::size_t i = 0; i < taints.size(); ++i) {
    std::string idx = std::string(field) + "[" + std::to_string(i) + "]";
    validate(taints[i], idx);
    if (std::find(dups.begin(), dups.end(), i) != dups.end())
      fail(idx, taints[i].to_string(), "Duplicate value: taints must be unique by key and effect pair");
  }
}

namespace {
// kubectl's parseTaint: "<key>=<value>:<effect>", "<key>:<effect>" or "<key>". The effect is
// optional here; callers decide whether it is required.
struct ParsedTaint {
  Taint taint;
  bool has_effect = false;
};

ParsedTaint parse_taint_spec(std::string_view spec, std::string_view whole, std::string_view field) {
  ParsedTaint out;
  std::string_view key = spec, value;
  std::size_t colon = spec.find(':');
  if (colon != std::string_view::npos) {
    if (spec.find(':', colon + 1) != std::string_view::npos)
      fail(field, whole, "invalid taint spec: use key=value:Effect, key:Effect, key- or key:Effect-");
    std::string_view effect = spec.substr(colon + 1);
    out.taint.effect = effect_in(effect, whole, field);
    out.has_effect = true;
    std::string_view kv = spec.substr(0, colon);
    std::size_t eq = kv.find('=');
    key = kv.substr(0, eq);
    if (eq != std::string_view::npos) {
      value = kv.substr(eq + 1);
      if (value.find('=') != std::string_view::npos)
        fail(field, whole, "invalid taint spec: a taint has at most one '=' (key=value:Effect)");
      if (auto errs = label_value_errors(value); !errs.empty())
        fail(field, whole, "invalid taint spec: " + text::join(errs, "; "));
    }
  }
  if (auto errs = qualified_name_errors(key); !errs.empty())
    fail(field, whole, "invalid taint spec: " + text::join(errs, "; "));
  out.taint.key = std::string(key);
  out.taint.value = std::string(value);
  return out;
}
}  // namespace

TaintChange parse_taint_change(std::string_view text, std::string_view field) {
  TaintChange change;
  if (text.ends_with('-')) {
    ParsedTaint p = parse_taint_spec(text.substr(0, text.size() - 1), text, field);
    change.remove = true;
    change.effect_given = p.has_effect;
    change.taint = Taint{p.taint.key, "", p.taint.effect};  // kubectl keeps only key and effect
    return change;
  }
  ParsedTaint p = parse_taint_spec(text, text, field);
  if (!p.has_effect)
    fail(field, text, "invalid taint spec: adding a taint needs an effect (key=value:Effect or key:Effect)");
  change.taint = std::move(p.taint);
  return change;
}

Taint parse_taint(std::string_view text, std::string_view field) {
  TaintChange c = parse_taint_change(text, field);
  if (c.remove) fail(field, text, "a taint to add cannot end with '-' (that form removes a taint)");
  return c.taint;
}

std::vector<Taint> apply_taint_changes(std::vector<Taint> taints, const std::vector<TaintChange>& changes,
                                       bool overwrite) {
  std::vector<Taint> to_add;
  std::vector<const TaintChange*> to_remove;
  for (const auto& c : changes) {
    if (c.remove) {
      to_remove.push_back(&c);
      continue;
    }
    // parseTaints: "duplicated taints with the same key and effect"
    for (const auto& t : to_add)
      if (t.key == c.taint.key && t.effect == c.taint.effect)
        fail("taint", c.taint.to_string(), "duplicated taints with the same key and effect");
    if (!overwrite) {
      for (const auto& t : taints)
        if (t.key == c.taint.key && t.effect == c.taint.effect)
          fail("taint", c.taint.to_string(),
               "the node already has a taint with this key and effect and --overwrite is false");
    }
    to_add.push_back(c.taint);
  }
  // reorganizeTaints: the new taints first, then the old ones no new taint matches (key + effect).
  std::vector<Taint> result = std::move(to_add);
  std::size_t added = result.size();
  for (auto& old : taints) {
    bool replaced = std::any_of(result.begin(), result.begin() + static_cast<std::ptrdiff_t>(added),
                                [&](const Taint& t) { return t.key == old.key && t.effect == old.effect; });
    if (!replaced) result.push_back(std::move(old));
  }
  // deleteTaints: each removal must find something.
  for (const TaintChange* r : to_remove) {
    auto before = result.size();
    std::erase_if(result, [&](const Taint& t) {
      return t.key == r->taint.key && (!r->effect_given || t.effect == r->taint.effect);
    });
    if (result.size() == before) {
      std::string shown = r->taint.key + ":" + (r->effect_given ? std::string(to_string(r->taint.effect)) : "");
      fail("taint", shown, "taint \"" + shown + "\" not found");
    }
  }
  return result;
}

TaintOutcome taint_node(std::string_view node, const std::vector<Taint>& taints,
                        const std::vector<TaintChange>& changes, bool overwrite) {
  if (!overwrite)
    for (const auto& c : changes) {
      if (c.remove) continue;
      for (const auto& old : taints)
        if (old.key == c.taint.key && old.effect == c.taint.effect)
          throw Error(fmt::format("node {} already has {} taint(s) with same effect(s) and --overwrite is false", node,
                                  c.taint.key));
    }
  std::size_t added_count = 0;
  for (const auto& c : changes) added_count += c.remove ? 0 : 1;
  bool removed_any = false;
  for (const auto& c : changes) removed_any = removed_any || c.remove;
  TaintOutcome out;
  try {
    out.taints = apply_taint_changes(taints, changes, true);
  } catch (const ValidationError& e) {
    // deleteTaints: `taint "key" not found` (key, or key:Effect when an effect was given).
    if (e.rule().rfind("taint \"", 0) == 0 && e.rule().find("\" not found") != std::string::npos) {
      std::string shown = e.value();
      if (!shown.empty() && shown.back() == ':') shown.pop_back();
      throw Error(fmt::format("taint \"{}\" not found", shown));
    }
    throw;
  }
  // addTaints: "added" when the old taints plus the new ones are more than the old ones.
  std::size_t kept_old = 0;
  for (const auto& old : taints) {
    bool replaced = false;
    for (const auto& c : changes)
      if (!c.remove && c.taint.key == old.key && c.taint.effect == old.effect) replaced = true;
    kept_old += replaced ? 0 : 1;
  }
  const bool added = taints.size() != kept_old + added_count;
  out.operation = (added && removed_any) || overwrite ? "modified" : added ? "tainted" : "untainted";
  return out;
}

// core/v1 ToleratesTaint:
//   "if len(t.Effect) > 0 && t.Effect != taint.Effect { return false }
//    if len(t.Key) > 0 && t.Key != taint.Key { return false }
//    empty operator means Equal: t.Value == taint.Value; Exists: true"
bool Toleration::tolerates(const Taint& taint) const {
  if (effect && *effect != taint.effect) return false;
  if (!key.empty() && key != taint.key) return false;
  return op == TolerationOperator::Exists || value == taint.value;
}

std::string Toleration::to_string() const {
  std::string out;
  if (key.empty() && op == TolerationOperator::Exists) {
    out = effect ? "all taints with effect " + std::string(gpupool::to_string(*effect)) : "all taints";
  } else if (op == TolerationOperator::Exists) {
    out = key;
    if (effect) out += ":" + std::string(gpupool::to_string(*effect));
    out += effect ? " (any value)" : " (any value, any effect)";
  } else {
    out = key + "=" + value;
    if (effect)
      out += ":" + std::string(gpupool::to_string(*effect));
    else
      out += " (any effect)";
  }
  if (toleration_seconds) out += " for " + std::to_string(*toleration_seconds) + "s";
  return out;
}

Toleration Toleration::all() {
  Toleration t;
  t.op = TolerationOperator::Exists;
  return t;
}

// ValidateTolerations, for one toleration: the key, the empty key's operator, the seconds'
// effect, the operator and its value, then the effect.
std::vector<FieldRuleError> toleration_errors(std::string_view key, std::string_view op, std::string_view value,
                                              std::string_view effect, bool has_toleration_seconds,
                                              std::string_view field) {
  std::vector<FieldRuleError> out;
  auto add = [&](std::string_view child, std::string_view shown, std::string detail,
                 std::vector<std::string> supported = {}) {
    out.push_back({sub(field, child), std::string(shown), std::move(detail), std::move(supported)});
  };
  if (!key.empty())
    for (auto& m : qualified_name_errors(key)) add("key", key, std::move(m));
  if (key.empty() && op != "Exists")
    add("operator", op, "operator must be Exists when `key` is empty, which means \"match all values and all keys\"");
  if (has_toleration_seconds && effect != "NoExecute")
    add("effect", effect, "effect must be 'NoExecute' when `tolerationSeconds` is set");
  if (op.empty() || op == "Equal") {
    if (auto errs = label_value_errors(value); !errs.empty()) add("operator", value, text::join(errs, ";"));
  } else if (op == "Exists") {
    if (!value.empty()) add("operator", value, "value must be empty when `operator` is 'Exists'");
  } else {
    add("operator", op, "", {"Equal", "Exists"});
  }
  if (!effect.empty() && effect != "NoSchedule" && effect != "PreferNoSchedule" && effect != "NoExecute")
    add("effect", effect, "", {"NoSchedule", "PreferNoSchedule", "NoExecute"});
  return out;
}

void validate(const Toleration& t, std::string_view field) {
  const auto errs =
      toleration_errors(t.key, t.op == TolerationOperator::Exists ? "Exists" : "Equal", t.value,
                        t.effect ? gpupool::to_string(*t.effect) : "", t.toleration_seconds.has_value(), field);
  if (!errs.empty()) fail(errs.front().field, errs.front().value, errs.front().detail);
}

// The forms users type after --toleration (see taint.hpp):
//   all | key | key=value | key:Effect | key=value:Effect | any of those + ",Equal" or ",Exists"
Toleration parse_toleration(std::string_view text, std::string_view field) {
  if (text == "all") return Toleration::all();
  if (text.empty()) fail(field, text, "a toleration is required: use key, key=value:Effect, key:Effect or all");
  Toleration t;
  std::string_view rest = text;
  std::optional<TolerationOperator> op;
  auto parse_op = [&](std::string_view o) {
    if (o == "Equal") return TolerationOperator::Equal;
    if (o == "Exists") return TolerationOperator::Exists;
    fail(field, text, "unsupported operator \"" + std::string(o) + "\"; supported values: \"Equal\", \"Exists\"");
  };
  if (std::size_t comma = rest.find(','); comma != std::string_view::npos) {  // Arena's legacy ",operator"
    op = parse_op(rest.substr(comma + 1));
    rest = rest.substr(0, comma);
  }
  if (std::size_t colon = rest.find(':'); colon != std::string_view::npos) {
    // Arena's newer forms: key[=value]:effect[:operator[:tolerationSeconds]]
    std::string_view parts = rest.substr(colon + 1);
    rest = rest.substr(0, colon);
    std::string_view e = parts.substr(0, parts.find(':'));
    if (!e.empty()) t.effect = effect_in(e, text, field);
    if (std::size_t c2 = parts.find(':'); c2 != std::string_view::npos) {
      std::string_view more = parts.substr(c2 + 1);
      std::string_view o = more.substr(0, more.find(':'));
      if (op) fail(field, text, "give the operator once (key=value:Effect:Operator or key=value:Effect,Operator)");
      op = parse_op(o);
      if (std::size_t c3 = more.find(':'); c3 != std::string_view::npos) {
        std::string_view secs = more.substr(c3 + 1);
        std::int64_t v = 0;
        bool neg = !secs.empty() && secs[0] == '-';
        std::string_view digits = neg ? secs.substr(1) : secs;
        if (digits.empty() || digits.size() > 18 || digits.find_first_not_of("0123456789") != std::string_view::npos)
          fail(field, text, "tolerationSeconds must be an integer number of seconds");
        for (char c : digits) v = v * 10 + (c - '0');
        t.toleration_seconds = neg ? -v : v;
      }
    }
  }
  bool has_value = false;
  if (std::size_t eq = rest.find('='); eq != std::string_view::npos) {
    t.value = std::string(rest.substr(eq + 1));
    if (t.value.find('=') != std::string::npos) fail(field, text, "a toleration has at most one '=' (key=value)");
    has_value = true;
    rest = rest.substr(0, eq);
  }
  t.key = std::string(rest);
  // Without an operator: key=value means Equal, a bare key means Exists (Arena's --toleration key).
  t.op = op.value_or(has_value ? TolerationOperator::Equal : TolerationOperator::Exists);
  try {
    validate(t, field);
  } catch (const ValidationError& e) {
    fail(field, text, e.field() == field ? e.rule() : std::string(e.field()) + ": " + e.rule());
  }
  return t;
}

std::vector<TaintChange> parse_taint_changes(const std::vector<std::string>& texts, std::string_view field) {
  std::vector<TaintChange> out;
  out.reserve(texts.size());
  for (std::size_t i = 0; i < texts.size(); ++i)
    out.push_back(parse_taint_change(texts[i], std::string(field) + "[" + std::to_string(i) + "]"));
  return out;
}

std::vector<Toleration> parse_tolerations(const std::vector<std::string>& texts, std::string_view field) {
  std::vector<Toleration> out;
  out.reserve(texts.size());
  for (std::size_t i = 0; i < texts.size(); ++i) {
    Toleration t = parse_toleration(texts[i], std::string(field) + "[" + std::to_string(i) + "]");
    if (std::find(out.begin(), out.end(), t) == out.end()) out.push_back(std::move(t));
  }
  return out;
}

bool tolerated(const Taint& taint, const std::vector<Toleration>& tolerations) {
  return std::any_of(tolerations.begin(), tolerations.end(), [&](const Toleration& t) { return t.tolerates(taint); });
}

// TaintToleration Filter: v1helper.FindMatchingUntoleratedTaint with DoNotScheduleTaintsFilterFunc
// (only NoSchedule and NoExecute taints count), first in the node's order.
std::optional<Taint> first_untolerated_filtering_taint(const std::vector<Taint>& taints,
                                                       const std::vector<Toleration>& tolerations) {
  for (const auto& taint : taints) {
    if (taint.effect == TaintEffect::PreferNoSchedule) continue;
    if (!tolerated(taint, tolerations)) return taint;
  }
  return std::nullopt;
}

// TaintToleration Score: countIntolerableTaintsPreferNoSchedule, using only the tolerations whose
// effect is empty or PreferNoSchedule (getAllTolerationPreferNoSchedule).
int count_intolerable_prefer_no_schedule(const std::vector<Taint>& taints, const std::vector<Toleration>& tolerations) {
  int n = 0;
  for (const auto& taint : taints) {
    if (taint.effect != TaintEffect::PreferNoSchedule) continue;
    bool ok = std::any_of(tolerations.begin(), tolerations.end(), [&](const Toleration& t) {
      return same_effect(t, TaintEffect::PreferNoSchedule) && t.tolerates(taint);
    });
    if (!ok) ++n;
  }
  return n;
}

boost::json::array tolerations_json(const std::vector<Toleration>& tolerations) {
  boost::json::array a;
  for (const auto& t : tolerations) {
    boost::json::object o;
    if (!t.key.empty()) o["key"] = t.key;
    o["operator"] = t.op == TolerationOperator::Exists ? "Exists" : "Equal";
    if (!t.value.empty()) o["value"] = t.value;
    if (t.effect) o["effect"] = to_string(*t.effect);
    if (t.toleration_seconds) o["tolerationSeconds"] = *t.toleration_seconds;
    a.push_back(std::move(o));
  }
  return a;
}

}  // namespace gpupool
