// gpupool/taint.hpp — node taints and pod tolerations with Kubernetes' exact matching rules.
//
// Rules (quoted where implemented, in libgpupool/model/taint.cpp):
//  - core/v1 Toleration.ToleratesTaint (k8s.io/api/core/v1/toleration.go): effects must match unless
//    the toleration's effect is empty; keys must match unless the toleration's key is empty with
//    operator Exists; Exists matches any value, Equal (or empty operator) needs equal values.
//  - scheduler TaintToleration plugin: only NoSchedule and NoExecute taints filter nodes;
//    PreferNoSchedule only lowers the score.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/fwd.hpp>

namespace gpupool {

enum class TaintEffect { NoSchedule, PreferNoSchedule, NoExecute };

/// "NoSchedule" etc.; parse_taint_effect throws ValidationError for anything else.
std::string_view to_string(TaintEffect e) noexcept;
TaintEffect parse_taint_effect(std::string_view text, std::string_view field = "effect");

struct Taint {
  std::string key;
  std::string value;  ///< may be empty
  TaintEffect effect = TaintEffect::NoSchedule;

  /// kubectl's form: "key=value:Effect" or "key:Effect".
  std::string to_string() const;
  bool operator==(const Taint&) const = default;
};

/// Validates key (qualified name: optional DNS-subdomain prefix "/" + name of at most 63 chars),
/// value (label value rules). Throws ValidationError naming the field.
void validate(const Taint& taint, std::string_view field = "taint");
/// Validates a node's taint list (validateNodeTaints): each taint as above (fields "<field>[i].key"...)
/// and "taints must be unique by key and effect pair".
void validate(const std::vector<Taint>& taints, std::string_view field = "spec.taints");
/// The rule's one home: the indexes of the taints whose key and effect an earlier taint has.
std::vector<std::size_t> duplicate_taints(const std::vector<Taint>& taints);

/// One argument of `kubectl taint nodes NODE ...`: a taint to add, or a removal.
struct TaintChange {
  Taint taint;               ///< for a removal only key (and effect if given) are meaningful
  bool remove = false;       ///< "key-" or "key:Effect-"
  bool effect_given = true;  ///< false for "key-": removes every effect of that key
};
/// Parses kubectl's taint syntax: "key=value:Effect", "key:Effect", "key-", "key:Effect-",
/// "key=value:Effect-". Throws ValidationError for anything malformed.
TaintChange parse_taint_change(std::string_view text, std::string_view field = "taint");
/// Parses the changes of one `kubectl taint` command line, in order; the field of the i-th text is
/// "<field>[i]".
std::vector<TaintChange> parse_taint_changes(const std::vector<std::string>& texts, std::string_view field = "taint");
/// Parses a taint to add (removal forms are rejected).
Taint parse_taint(std::string_view text, std::string_view field = "taint");
/// Applies changes to a node's taint list as kubectl's reorganizeTaints does: the added taints come
/// first, then the old ones no added taint matches by key+effect (so adding an existing key+effect
/// replaces its value, unless `overwrite` is false: then that is an error, as without
/// `kubectl taint --overwrite`); removals then delete by key+effect, or every effect of the key for
/// "key-"; removing something absent is an error (`taint "key:Effect" not found`). Two added taints
/// with the same key+effect are an error.
std::vector<Taint> apply_taint_changes(std::vector<Taint> taints, const std::vector<TaintChange>& changes,
                                       bool overwrite = true);

/// What `kubectl taint nodes NODE CHANGES... [--overwrite]` does to the node (kubectl's
/// pkg/cmd/taint: validateNoTaintOverwrites, reorganizeTaints): the new taint list, and the word
/// kubectl prints, "tainted", "untainted" or "modified" ("modified" with --overwrite, or when the
/// change both adds and removes). Without `overwrite`, adding a key+effect the node has is refused
/// (`node N already has KEY taint(s) with same effect(s) and --overwrite is false`); removing what
/// the node does not have is refused (`taint "KEY[:Effect]" not found`). Both are gpupool::Error;
/// malformed changes are ValidationError, as in apply_taint_changes.
struct TaintOutcome {
  std::vector<Taint> taints;
  std::string operation;
};
TaintOutcome taint_node(std::string_view node, const std::vector<Taint>& taints,
                        const std::vector<TaintChange>& changes, bool overwrite);

enum class TolerationOperator { Equal, Exists };

struct Toleration {
  std::string key;  ///< empty with Exists: tolerates every taint
  TolerationOperator op = TolerationOperator::Equal;
  std::string value;
  std::optional<TaintEffect> effect;               ///< nullopt: every effect
  std::optional<std::int64_t> toleration_seconds;  ///< only meaningful with NoExecute

  /// core/v1 ToleratesTaint.
  bool tolerates(const Taint& taint) const;
  /// A readable form ("ssd_node (any value, any effect)", "gpu_node=invalid:NoSchedule").
  std::string to_string() const;
  bool operator==(const Toleration&) const = default;

  /// Tolerates every taint ("--toleration all").
  static Toleration all();
};

/// Validates a toleration as the API server does (apis/core/validation ValidateTolerations):
/// Exists requires an empty value; an empty key requires Exists; tolerationSeconds only with
/// effect NoExecute; key is a qualified name; an Equal value is a label value. Fields are
/// "<field>.key", "<field>.operator", "<field>.effect" as the API server names them.
void validate(const Toleration& toleration, std::string_view field = "toleration");

/// One error of a Kubernetes field.ErrorList: the field, the value it shows and the detail;
/// `supported` holds the values an "Unsupported value" error lists (empty for "Invalid value").
struct FieldRuleError {
  std::string field, value, detail;
  std::vector<std::string> supported;
  bool operator==(const FieldRuleError&) const = default;
};

/// ValidateTolerations for one toleration as the API holds it (`op` "" means Equal, `effect` ""
/// any): every error in Kubernetes' order. validate(Toleration) throws the first of them; the
/// embedded API server reports them all.
std::vector<FieldRuleError> toleration_errors(std::string_view key, std::string_view op, std::string_view value,
                                              std::string_view effect, bool has_toleration_seconds,
                                              std::string_view field);

/// Parses what users type after --toleration:
///  - "ssd_node"                 -> key ssd_node, Exists, any effect (Arena's short form)
///  - "all"                      -> Toleration::all()
///  - "key=value:Effect"         -> Equal
///  - "key:Effect"               -> Exists with that effect
///  - "key=value"                -> Equal, any effect
///  - "key=value:effect,operator" (Arena's long form; operator Equal|Exists; any part but the key
///    may be left out, e.g. "key:NoSchedule,Exists")
///  - "key[=value]:effect:operator[:tolerationSeconds]" (Arena's newer form, e.g.
///    "node.kubernetes.io/unreachable:NoExecute:Exists:60")
/// Throws ValidationError on anything malformed (Arena drops those silently; gpupool refuses).
Toleration parse_toleration(std::string_view text, std::string_view field = "toleration");
/// Parses a repeated flag; the results accumulate in order, duplicates collapse. The field of the
/// i-th text is "<field>[i]".
std::vector<Toleration> parse_tolerations(const std::vector<std::string>& texts, std::string_view field = "toleration");

/// True when some toleration tolerates the taint.
bool tolerated(const Taint& taint, const std::vector<Toleration>& tolerations);
/// The first NoSchedule/NoExecute taint none of the tolerations tolerates (the scheduler's
/// TaintToleration Filter); nullopt when the node passes.
std::optional<Taint> first_untolerated_filtering_taint(const std::vector<Taint>& taints,
                                                       const std::vector<Toleration>& tolerations);
/// Number of PreferNoSchedule taints not tolerated (TaintToleration Score; fewer is better).
int count_intolerable_prefer_no_schedule(const std::vector<Taint>& taints, const std::vector<Toleration>& tolerations);

/// The tolerations as core/v1 writes them in a pod spec (or a RuntimeClass's scheduling): key and
/// value only when set, the operator always, the effect and tolerationSeconds when given.
boost::json::array tolerations_json(const std::vector<Toleration>& tolerations);

}  // namespace gpupool
