// embedded/selector.hpp — label and field selectors as the API server parses them.
//
// Label selector grammar (k8s.io/apimachinery/pkg/labels/selector.go): comma-separated
// requirements `k=v`, `k==v`, `k!=v`, `k in (a,b)`, `k notin (a,b)`, `k` (exists), `!k` (absent),
// `k>1`, `k<1` (both sides read as integers). `!=` and `notin` also match objects without the key.
// Keys and values are validated as there (qualified names, label values), with its messages.
// Field selectors (k8s.io/apimachinery/pkg/fields/selector.go): `path=v`, `path==v`, `path!=v`,
// comma-separated, nothing trimmed; in a value "\\", "\," and "\=" stand for the character, and a
// bare ',' or '=' or any other escape is refused. The terms are kept in sorted order, as there.
#pragma once

#include <boost/json/fwd.hpp>

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpupool::embedded {

class LabelSelector {
 public:
  enum class Op { Equals, NotEquals, In, NotIn, Exists, DoesNotExist, GreaterThan, LessThan };
  struct Requirement {
    std::string key;
    Op op;
    std::vector<std::string> values;
  };
  /// Throws StatusError 400 BadRequest on a malformed selector (message as the server words it).
  static LabelSelector parse(std::string_view text);
  bool matches(const std::map<std::string, std::string>& labels) const;
  /// The same test on an object's metadata.labels, read in place (a list or a watch tests every
  /// object of its namespace; copying each one's labels out was most of a selected list's time).
  bool matches_labels_of(const boost::json::object& object) const;
  bool empty() const noexcept { return reqs_.empty(); }
  const std::vector<Requirement>& requirements() const noexcept { return reqs_; }

 private:
  std::vector<Requirement> reqs_;
};

/// A metav1.LabelSelector object as text: LabelSelectorAsSelector(sel).String()
/// (apimachinery/pkg/apis/meta/v1/helpers.go, labels/selector.go): matchLabels as `k=v` and
/// matchExpressions as `k in (a,b)`, `k notin (a,b)`, `k`, `!k`, requirements sorted by key
/// (internalSelector.Add), each In/NotIn's values sorted. "" for a null or empty selector
/// (labels.Nothing / Everything); nullopt where LabelSelectorAsSelector fails (an unknown operator,
/// In or NotIn without values, Exists with values). The autoscaling/v1 Scale's status.selector and,
/// through metav1.FormatLabelSelector ("<none>", "<error>"), the printers' SELECTOR columns.
std::optional<std::string> label_selector_string(const boost::json::value* selector);

class FieldSelector {
 public:
  struct Requirement {
    std::string path;
    bool negate = false;
    std::string value;
  };
  /// Throws StatusError 400 BadRequest on a malformed selector.
  static FieldSelector parse(std::string_view text);
  /// `get(path)` returns the object's value at the path ("" when absent).
  template <class Get>
  bool matches(Get&& get) const {
    for (const auto& r : reqs_)
      if ((get(r.path) == r.value) == r.negate) return false;
    return true;
  }
  /// The same on a stored object, its fields read as the kind's ToSelectableFields reads them
  /// (selectable_field).
  bool matches(const boost::json::object& object) const;
  bool empty() const noexcept { return reqs_.empty(); }
  const std::vector<Requirement>& requirements() const noexcept { return reqs_; }
  /// The field labels as the kind's field label conversion maps them (events.k8s.io/v1's
  /// `regarding.kind` is the stored Event's `involvedObject.kind`), and the kind whose
  /// ToSelectableFields reads them ("pods", "jobs.batch": ResourceType::group_resource).
  void convert(std::vector<std::string> labels, std::string group_resource);

 private:
  std::vector<Requirement> reqs_;
  std::string group_resource_;
};

/// An object's selectable field `label` as the registry's ToSelectableFields gives it: the value
/// at that path ("" when absent), except where the kind computes it — a pod's `spec.hostNetwork`
/// and a node's `spec.unschedulable` "false" when unset, a Job's `status.successful` its
/// status.succeeded ("0" when unset), an Event's `source` its reportingComponent when
/// source.component is empty.
std::string selectable_field(std::string_view group_resource, const boost::json::object& object,
                             std::string_view label);

}  // namespace gpupool::embedded
