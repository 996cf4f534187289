// Taint/toleration rules. Rows follow k8s.io/api/core/v1/toleration_test.go (TestTolerationToleratesTaint),
// pkg/apis/core/validation (TestValidateTolerations / node taints) and kubectl's taint_test.go.
#include <doctest/doctest.h>

#include <optional>
#include <string>
#include <vector>

#include "gpupool/error.hpp"
#include "gpupool/taint.hpp"

using namespace gpupool;
using E = TaintEffect;
using Op = TolerationOperator;

namespace {
Toleration tol(std::string key, Op op, std::string value, std::optional<E> effect = std::nullopt,
               std::optional<std::int64_t> seconds = std::nullopt) {
  return Toleration{std::move(key), op, std::move(value), effect, seconds};
}
}  // namespace

TEST_CASE("taint effects") {
  CHECK(to_string(E::NoSchedule) == "NoSchedule");
  CHECK(to_string(E::PreferNoSchedule) == "PreferNoSchedule");
  CHECK(to_string(E::NoExecute) == "NoExecute");
  for (auto e : {E::NoSchedule, E::PreferNoSchedule, E::NoExecute}) CHECK(parse_taint_effect(to_string(e)) == e);
  for (const char* bad : {"", "noschedule", "NoScheduled", "Schedule"}) {
    CAPTURE(bad);
    CHECK_THROWS_AS(parse_taint_effect(bad, "spec.taints[0].effect"), ValidationError);
  }
  try {
    parse_taint_effect("Foo", "effect");
  } catch (const ValidationError& e) {
    CHECK(e.rule().find("supported values: \"NoSchedule\", \"PreferNoSchedule\", \"NoExecute\"") != std::string::npos);
  }
}

TEST_CASE("Taint::to_string is core/v1 ToString") {
  CHECK(Taint{"gpu_node", "invalid", E::NoSchedule}.to_string() == "gpu_node=invalid:NoSchedule");
  CHECK(Taint{"node-role.kubernetes.io/master", "", E::NoSchedule}.to_string() ==
        "node-role.kubernetes.io/master:NoSchedule");
  CHECK(Taint{"a", "b", E::NoExecute}.to_string() == "a=b:NoExecute");
}

TEST_CASE("Toleration::tolerates is core/v1 ToleratesTaint") {
  struct Row {
    const char* description;
    Toleration toleration;
    Taint taint;
    bool expect;
  };
  const Taint foo_bar{"foo", "bar", E::PreferNoSchedule};
  const std::vector<Row> rows = {
      {"toleration and taint have the same key and effect, and operator is Exists, and taint has no value",
       tol("foo", Op::Exists, "", E::NoSchedule), Taint{"foo", "", E::NoSchedule}, true},
      {"same key and effect, operator Exists, taint has some value", tol("foo", Op::Exists, "", E::NoSchedule),
       Taint{"foo", "bar", E::NoSchedule}, true},
      {"same effect, toleration has empty key and operator Exists (matches all keys)",
       tol("", Op::Exists, "", E::NoSchedule), Taint{"foo", "bar", E::NoSchedule}, true},
      {"same key, effect and value, operator Equal", tol("foo", Op::Equal, "bar", E::NoSchedule),
       Taint{"foo", "bar", E::NoSchedule}, true},
      {"same key and effect, different value, operator Equal", tol("foo", Op::Equal, "value1", E::NoSchedule),
       Taint{"foo", "value2", E::NoSchedule}, false},
      {"same key and effect, operator Equal, taint has no value", tol("foo", Op::Equal, "bar", E::NoSchedule),
       Taint{"foo", "", E::NoSchedule}, false},
      {"same key and value, different effect", tol("foo", Op::Equal, "bar", E::NoSchedule),
       Taint{"foo", "bar", E::PreferNoSchedule}, false},
      {"toleration without effect tolerates every effect", tol("foo", Op::Equal, "bar"), foo_bar, true},
      {"toleration without effect, NoExecute taint", tol("foo", Op::Exists, ""), Taint{"foo", "x", E::NoExecute}, true},
      {"different key", tol("gpu_node", Op::Exists, ""), Taint{"ssd_node", "invalid", E::NoSchedule}, false},
      {"tolerate everything", Toleration::all(), Taint{"node-role.kubernetes.io/master", "", E::NoSchedule}, true},
      {"Arena's short form: key only, any value and effect", tol("ssd_node", Op::Exists, ""),
       Taint{"ssd_node", "invalid", E::NoSchedule}, true},
      {"empty key with Equal: the key check is skipped and the empty values are equal", tol("", Op::Equal, ""),
       Taint{"foo", "", E::NoSchedule}, true},
      {"empty key with Equal and a value", tol("", Op::Equal, "bar"), Taint{"foo", "baz", E::NoSchedule}, false},
  };
  for (const auto& r : rows) {
    CAPTURE(r.description);
    CHECK(r.toleration.tolerates(r.taint) == r.expect);
    CHECK(tolerated(r.taint, {r.toleration}) == r.expect);
  }
  CHECK_FALSE(tolerated(foo_bar, {}));
}

TEST_CASE("validate(Toleration) is ValidateTolerations") {
  struct Row {
    Toleration t;
    std::string field;  // empty: valid
    std::string rule_part;
  };
  const std::vector<Row> rows = {
      {tol("foo", Op::Exists, ""), "", ""},
      {tol("foo", Op::Equal, "bar", E::NoSchedule), "", ""},
      {tol("", Op::Exists, ""), "", ""},
      {tol("foo", Op::Exists, "", E::NoExecute, 300), "", ""},
      {tol("example.com/gpu", Op::Equal, "", E::PreferNoSchedule), "", ""},
      {tol("foo bar", Op::Exists, ""), "spec.tolerations[0].key", "name part must consist of alphanumeric"},
      {tol("", Op::Equal, ""), "spec.tolerations[0].operator",
       "operator must be Exists when `key` is empty, which means \"match all values and all keys\""},
      {tol("foo", Op::Exists, "bar"), "spec.tolerations[0].operator",
       "value must be empty when `operator` is 'Exists'"},
      {tol("foo", Op::Equal, "bar baz"), "spec.tolerations[0].operator", "a valid label must be an empty string"},
      {tol("foo", Op::Exists, "", E::NoSchedule, 300), "spec.tolerations[0].effect",
       "effect must be 'NoExecute' when `tolerationSeconds` is set"},
      {tol("foo", Op::Exists, "", std::nullopt, 300), "spec.tolerations[0].effect",
       "effect must be 'NoExecute' when `tolerationSeconds` is set"},
  };
  for (const auto& r : rows) {
    CAPTURE(r.t.to_string());
    if (r.field.empty()) {
      CHECK_NOTHROW(validate(r.t, "spec.tolerations[0]"));
      continue;
    }
    try {
      validate(r.t, "spec.tolerations[0]");
      FAIL("expected a ValidationError");
    } catch (const ValidationError& e) {
      CHECK(e.field() == r.field);
      CHECK(e.rule().find(r.rule_part) == 0);
    }
  }
}

TEST_CASE("validate(Taint) and node taint lists") {
  CHECK_NOTHROW(validate(Taint{"gpu_node", "invalid", E::NoSchedule}));
  CHECK_NOTHROW(validate(Taint{"node-role.kubernetes.io/master", "", E::NoSchedule}));
  struct Row {
    Taint t;
    std::string field;
  };
  for (const auto& r : std::vector<Row>{{{"", "x", E::NoSchedule}, "spec.taints[0].key"},
                                        {{"-bad", "x", E::NoSchedule}, "spec.taints[0].key"},
                                        {{"a/b/c", "", E::NoSchedule}, "spec.taints[0].key"},
                                        {{"ok", "bad value", E::NoSchedule}, "spec.taints[0].value"},
                                        {{"ok", std::string(64, 'v'), E::NoSchedule}, "spec.taints[0].value"}}) {
    CAPTURE(r.t.key);
    try {
      validate(r.t, "spec.taints[0]");
      FAIL("expected a ValidationError");
    } catch (const ValidationError& e) {
      CHECK(e.field() == r.field);
    }
  }
  std::vector<Taint> dup = {{"a", "1", E::NoSchedule}, {"a", "2", E::NoExecute}, {"a", "3", E::NoSchedule}};
  try {
    validate(dup);
    FAIL("expected a ValidationError");
  } catch (const ValidationError& e) {
    CHECK(e.field() == "spec.taints[2]");
    CHECK(e.rule().find("taints must be unique by key and effect pair") != std::string::npos);
  }
  dup.pop_back();
  CHECK_NOTHROW(validate(dup));
}

TEST_CASE("kubectl taint syntax") {
  struct Row {
    std::string text;
    bool ok;
    Taint taint;
    bool remove;
    bool effect_given;
  };
  const std::vector<Row> rows = {
      {"gpu_node=invalid:NoSchedule", true, {"gpu_node", "invalid", E::NoSchedule}, false, true},
      {"ssd_node=invalid:NoSchedule", true, {"ssd_node", "invalid", E::NoSchedule}, false, true},
      {"dedicated:NoExecute", true, {"dedicated", "", E::NoExecute}, false, true},
      {"example.com/gpu=a100:PreferNoSchedule", true, {"example.com/gpu", "a100", E::PreferNoSchedule}, false, true},
      {"foo=:NoSchedule", true, {"foo", "", E::NoSchedule}, false, true},
      {"gpu_node-", true, {"gpu_node", "", E::NoSchedule}, true, false},
      {"gpu_node:NoSchedule-", true, {"gpu_node", "", E::NoSchedule}, true, true},
      {"gpu_node=invalid:NoExecute-", true, {"gpu_node", "", E::NoExecute}, true, true},
      {"gpu_node", false, {}, false, false},           // adding needs an effect
      {"gpu_node=invalid", false, {}, false, false},   // '=' is not allowed in a key
      {"gpu_node=invalid:", false, {}, false, false},  // empty effect
      {"gpu_node=invalid:noschedule", false, {}, false, false},
      {"a=b=c:NoSchedule", false, {}, false, false},
      {"a:NoSchedule:NoExecute", false, {}, false, false},
      {"=b:NoSchedule", false, {}, false, false},
      {"bad key:NoSchedule", false, {}, false, false},
      {"k=bad value:NoSchedule", false, {}, false, false},
      {"k=-v:NoSchedule", false, {}, false, false},
      {"-", false, {}, false, false},
      {"", false, {}, false, false},
      {"gpu_node=invalid-", false, {}, false, false},
  };
  for (const auto& r : rows) {
    CAPTURE(r.text);
    if (!r.ok) {
      CHECK_THROWS_AS(parse_taint_change(r.text, "taint"), ValidationError);
      continue;
    }
    TaintChange c = parse_taint_change(r.text, "taint");
    CHECK(c.taint == r.taint);
    CHECK(c.remove == r.remove);
    if (r.remove) CHECK(c.effect_given == r.effect_given);
    if (r.remove)
      CHECK_THROWS_AS(parse_taint(r.text), ValidationError);
    else
      CHECK(parse_taint(r.text) == r.taint);
  }
  try {
    parse_taint_change("bad key:NoSchedule", "args[1]");
  } catch (const ValidationError& e) {
    CHECK(e.field() == "args[1]");
    CHECK(e.value() == "bad key:NoSchedule");
    CHECK(e.rule().find("invalid taint spec: name part must consist of alphanumeric characters") == 0);
  }
}

TEST_CASE("apply_taint_changes follows kubectl's reorganizeTaints") {
  const Taint gpu{"gpu_node", "invalid", E::NoSchedule};
  const Taint gpu_exec{"gpu_node", "x", E::NoExecute};
  const Taint ssd{"ssd_node", "invalid", E::NoSchedule};
  auto changes = [](std::vector<std::string> specs) {
    std::vector<TaintChange> out;
    for (auto& s : specs) out.push_back(parse_taint_change(s));
    return out;
  };
  struct Row {
    const char* what;
    std::vector<Taint> before;
    std::vector<std::string> specs;
    std::vector<Taint> after;
  };
  const std::vector<Row> rows = {
      {"add to an empty node", {}, {"gpu_node=invalid:NoSchedule"}, {gpu}},
      {"new taints come first", {ssd}, {"gpu_node=invalid:NoSchedule"}, {gpu, ssd}},
      {"same key and effect replaces the value",
       {gpu, ssd},
       {"gpu_node=valid:NoSchedule"},
       {{"gpu_node", "valid", E::NoSchedule}, ssd}},
      {"same key, other effect is another taint", {gpu}, {"gpu_node=x:NoExecute"}, {gpu_exec, gpu}},
      {"remove by key and effect", {gpu, gpu_exec, ssd}, {"gpu_node:NoSchedule-"}, {gpu_exec, ssd}},
      {"remove every effect of a key", {gpu, gpu_exec, ssd}, {"gpu_node-"}, {ssd}},
      {"value is ignored when removing", {gpu, ssd}, {"ssd_node=other:NoSchedule-"}, {gpu}},
      {"add and remove together", {gpu}, {"ssd_node=invalid:NoSchedule", "gpu_node-"}, {ssd}},
  };
  for (const auto& r : rows) {
    CAPTURE(r.what);
    CHECK(apply_taint_changes(r.before, changes(r.specs)) == r.after);
  }
  try {
    apply_taint_changes({ssd}, changes({"gpu_node:NoSchedule-"}));
    FAIL("expected a ValidationError");
  } catch (const ValidationError& e) {
    CHECK(e.rule() == "taint \"gpu_node:NoSchedule\" not found");
  }
  try {
    apply_taint_changes({ssd}, changes({"gpu_node-"}));
    FAIL("expected a ValidationError");
  } catch (const ValidationError& e) {
    CHECK(e.rule() == "taint \"gpu_node:\" not found");
  }
  CHECK_THROWS_AS(apply_taint_changes({}, changes({"a=1:NoSchedule", "a=2:NoSchedule"})), ValidationError);
  CHECK_THROWS_AS(apply_taint_changes({gpu}, changes({"gpu_node=valid:NoSchedule"}), false), ValidationError);
  CHECK(apply_taint_changes({gpu}, changes({"ssd_node=invalid:NoSchedule"}), false) == std::vector<Taint>{ssd, gpu});
}

TEST_CASE("--toleration forms") {
  struct Row {
    std::string text;
    std::optional<Toleration> expect;  // nullopt: an error
  };
  const std::vector<Row> rows = {
      {"ssd_node", tol("ssd_node", Op::Exists, "")},
      {"all", Toleration::all()},
      {"gpu_node=invalid:NoSchedule", tol("gpu_node", Op::Equal, "invalid", E::NoSchedule)},
      {"gpu_node:NoSchedule", tol("gpu_node", Op::Exists, "", E::NoSchedule)},
      {"gpu_node=invalid", tol("gpu_node", Op::Equal, "invalid")},
      {"gpu_node=invalid:NoSchedule,Equal", tol("gpu_node", Op::Equal, "invalid", E::NoSchedule)},
      {"gpu_node:NoExecute,Exists", tol("gpu_node", Op::Exists, "", E::NoExecute)},
      {"gpu_node,Exists", tol("gpu_node", Op::Exists, "")},
      {"gpu_node=,Equal", tol("gpu_node", Op::Equal, "")},
      {":NoSchedule", tol("", Op::Exists, "", E::NoSchedule)},
      {"node-role.kubernetes.io/master:NoSchedule",
       tol("node-role.kubernetes.io/master", Op::Exists, "", E::NoSchedule)},
      {"node.kubernetes.io/unreachable:NoExecute:Exists:60",
       tol("node.kubernetes.io/unreachable", Op::Exists, "", E::NoExecute, 60)},
      {"dedicated=teamA:NoSchedule:Equal", tol("dedicated", Op::Equal, "teamA", E::NoSchedule)},
      {"dedicated=teamA:NoExecute:Equal:300", tol("dedicated", Op::Equal, "teamA", E::NoExecute, 300)},
      {"gpu_node:NoSchedule:Exists", tol("gpu_node", Op::Exists, "", E::NoSchedule)},
      {"", std::nullopt},
      {"dedicated=teamA:NoSchedule:Equal:300", std::nullopt},  // tolerationSeconds needs NoExecute
      {"dedicated=teamA:NoExecute:Equal:soon", std::nullopt},
      {"dedicated=teamA:NoExecute:Equal,Equal", std::nullopt},  // operator given twice
      {"dedicated=teamA:NoExecute:Maybe", std::nullopt},
      {"gpu_node=invalid:NoSchedule,Exists", std::nullopt},  // Exists with a value
      {"gpu_node=invalid:NoSchedule,equal", std::nullopt},   // operator is case-sensitive
      {"gpu_node=invalid:Never", std::nullopt},
      {"gpu node", std::nullopt},
      {"=invalid", std::nullopt},  // empty key needs Exists
      {"a=b=c", std::nullopt},
      {"a:NoSchedule:NoExecute", std::nullopt},  // not an operator
      {"gpu_node=bad value", std::nullopt},
      {"ALL", tol("ALL", Op::Exists, "")},  // only lower-case "all" is special
  };
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& r = rows[i];
    CAPTURE(r.text);
    if (!r.expect) {
      try {
        parse_toleration(r.text, "toleration[2]");
        FAIL("expected a ValidationError");
      } catch (const ValidationError& e) {
        CHECK(e.field() == "toleration[2]");
        CHECK(e.value() == r.text);
      }
      continue;
    }
    Toleration t = parse_toleration(r.text);
    CHECK(t == *r.expect);
    CHECK_NOTHROW(validate(t));
  }
}

TEST_CASE("parse_tolerations accumulates, collapses duplicates and names the bad one") {
  auto ts = parse_tolerations({"gpu_node", "ssd_node", "gpu_node", "all"});
  REQUIRE(ts.size() == 3);
  CHECK(ts[0] == tol("gpu_node", Op::Exists, ""));
  CHECK(ts[1] == tol("ssd_node", Op::Exists, ""));
  CHECK(ts[2] == Toleration::all());
  try {
    parse_tolerations({"ssd_node", "gpu_node", "gpu_node=x:Bad"}, "--toleration");
    FAIL("expected a ValidationError");
  } catch (const ValidationError& e) {
    CHECK(e.field() == "--toleration[2]");
    CHECK(e.value() == "gpu_node=x:Bad");
  }
  CHECK(parse_tolerations({}).empty());
}

TEST_CASE("Toleration::to_string") {
  CHECK(tol("ssd_node", Op::Exists, "").to_string() == "ssd_node (any value, any effect)");
  CHECK(tol("gpu_node", Op::Equal, "invalid", E::NoSchedule).to_string() == "gpu_node=invalid:NoSchedule");
  CHECK(tol("gpu_node", Op::Equal, "invalid").to_string() == "gpu_node=invalid (any effect)");
  CHECK(tol("gpu_node", Op::Exists, "", E::NoSchedule).to_string() == "gpu_node:NoSchedule (any value)");
  CHECK(Toleration::all().to_string() == "all taints");
  CHECK(tol("", Op::Exists, "", E::NoExecute, 60).to_string() == "all taints with effect NoExecute for 60s");
}

TEST_CASE("TaintToleration filter and score") {
  const Taint master{"node-role.kubernetes.io/master", "", E::NoSchedule};
  const Taint gpu{"gpu_node", "invalid", E::NoSchedule};
  const Taint ssd{"ssd_node", "invalid", E::NoSchedule};
  const Taint soft{"soft", "x", E::PreferNoSchedule};
  const Taint soft2{"soft2", "", E::PreferNoSchedule};
  const Taint evict{"evict", "now", E::NoExecute};
  struct Row {
    std::vector<Taint> taints;
    std::vector<Toleration> tolerations;
    std::optional<Taint> first;
    int prefer;
  };
  const std::vector<Row> rows = {
      {{}, {}, std::nullopt, 0},
      {{master}, {}, master, 0},
      {{gpu, ssd}, {}, gpu, 0},  // the first in the node's order
      {{gpu, ssd}, {tol("gpu_node", Op::Exists, "")}, ssd, 0},
      {{ssd}, {tol("ssd_node", Op::Exists, "")}, std::nullopt, 0},
      {{soft}, {}, std::nullopt, 1},  // PreferNoSchedule never filters
      {{soft, soft2, gpu}, {tol("gpu_node", Op::Equal, "invalid", E::NoSchedule)}, std::nullopt, 2},
      {{soft, soft2}, {tol("soft", Op::Exists, "")}, std::nullopt, 1},
      // a toleration for another effect does not count for scoring
      {{soft}, {tol("soft", Op::Exists, "", E::NoSchedule)}, std::nullopt, 1},
      {{soft}, {tol("soft", Op::Equal, "x", E::PreferNoSchedule)}, std::nullopt, 0},
      {{evict}, {}, evict, 0},  // NoExecute filters
      {{evict, master}, {Toleration::all()}, std::nullopt, 0},
      {{soft, soft2}, {Toleration::all()}, std::nullopt, 0},
  };
  for (std::size_t i = 0; i < rows.size(); ++i) {
    CAPTURE(i);
    const auto& r = rows[i];
    CHECK(first_untolerated_filtering_taint(r.taints, r.tolerations) == r.first);
    CHECK(count_intolerable_prefer_no_schedule(r.taints, r.tolerations) == r.prefer);
  }
}

TEST_CASE("taint_node: kubectl taint's refusals and the word it prints") {
  auto changes = [](std::initializer_list<const char*> specs) {
    std::vector<TaintChange> out;
    for (const char* s : specs) out.push_back(parse_taint_change(s));
    return out;
  };
  const Taint b1{"b", "1", TaintEffect::NoSchedule};
  // kubectl v1.32 against a real API server printed each of these.
  CHECK(taint_node("n", {}, changes({"b=1:NoSchedule"}), false).operation == "tainted");
  CHECK_THROWS_WITH_AS(taint_node("n", {b1}, changes({"b=2:NoSchedule"}), false),
                       "node n already has b taint(s) with same effect(s) and --overwrite is false", Error);
  const auto replaced = taint_node("n", {b1}, changes({"b=2:NoSchedule"}), true);
  CHECK(replaced.operation == "modified");
  REQUIRE(replaced.taints.size() == 1);
  CHECK(replaced.taints[0].value == "2");
  CHECK(taint_node("n", {b1}, changes({"b-"}), false).operation == "untainted");
  CHECK(taint_node("n", {b1}, changes({"b-"}), false).taints.empty());
  CHECK_THROWS_WITH_AS(taint_node("n", {}, changes({"b-"}), false), "taint \"b\" not found", Error);
  CHECK_THROWS_WITH_AS(taint_node("n", {}, changes({"b:NoSchedule-"}), false), "taint \"b:NoSchedule\" not found",
                       Error);
  // Adding one and removing another: "modified" (reorganizeTaints: added && deleted).
  CHECK(taint_node("n", {b1}, changes({"c=1:NoExecute", "b-"}), false).operation == "modified");
  // Another effect of the same key is a new taint, not an overwrite.
  CHECK(taint_node("n", {b1}, changes({"b=1:NoExecute"}), false).operation == "tainted");
}
