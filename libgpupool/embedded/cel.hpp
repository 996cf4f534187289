// embedded/cel.hpp — the Common Expression Language as apiextensions-apiserver runs it for a CRD's
// `x-kubernetes-validations` rules: parsing, type checking against the structural schema of the
// node the rule sits on (`self`, `oldSelf`), and evaluation of JSON values.
//
// Sources (Kubernetes v1.32): vendor/github.com/google/cel-go (parser, checker, interpreter,
// common/types, ext/strings.go), staging/src/k8s.io/apiserver/pkg/cel/library (lists, regex),
// staging/src/k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel/compilation.go and
// staging/src/k8s.io/apiserver/pkg/cel/common/values.go (how schema values become CEL values).
//
// Supported: every literal (int, uint, double, strings with escapes, raw and triple-quoted, bytes,
// bool, null, lists, maps), field selection, has(), indexing, arithmetic with CEL's overflow
// errors, comparisons (numeric ones across int/uint/double), &&/|| with CEL's error absorption,
// !, ?:, `in`, size(), the macros all/exists/exists_one/map/filter, the conversions int, uint,
// double, string, bytes, bool, dyn, duration, timestamp, the ext string library v2 (charAt,
// indexOf, lastIndexOf, lowerAscii, upperAscii, replace, split, substring, trim, join, format with
// its checks of literal format strings and en_US number printing), ext.Sets
// (sets.contains/equivalent/intersects), matches(), find(), findAll() (ECMAScript std::regex
// standing in for RE2: the same for the usual patterns), the Kubernetes list library (isSorted,
// sum, min, max, indexOf, lastIndexOf), the Kubernetes URL library (url, isURL, getScheme, getHost,
// getHostname, getPort, getEscapedPath, getQuery), the IP and CIDR libraries (ip, isIP, ip.isCanonical,
// family, isUnspecified, isLoopback, isLinkLocal*, isGlobalUnicast, cidr, isCIDR, containsIP,
// containsCIDR, ip, prefixLength, masked), the Kubernetes quantity library (quantity, isQuantity,
// sign, compareTo, isGreaterThan, isLessThan, add, sub, asInteger, isInteger, asApproximateFloat),
// type() and the type names, optionals (`.?field`, `[?key]`, optional oldSelf's hasValue, value, orValue;
// optional.of/none), the timestamp and duration accessors (UTC or a fixed offset), property names
// escaped as Kubernetes escapes them (x__dash__y, __namespace__), the checker's homogeneous-literal,
// regex, duration and timestamp literal validators, and conversions of literals failing when the
// program is built. Not supported: strings.quote (a rule using it
// does not compile, so such a CRD is refused), IANA time zone names in the accessors (an error at
// run time). Cost is counted in evaluation steps, not by cel-go's cost model (FIDELITY.md 16).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

namespace gpupool::embedded::cel {

struct Ast;  // a checked expression (cel.cpp)

/// One compiled expression: `ast` is null when compilation failed, and then `error` holds cel-go's
/// issues as apiextensions prints them after "compilation failed: " (`ERROR: <input>:1:5: ...`),
/// or with `instantiation_failed` the error of building the program (a conversion of a literal
/// that fails, `int('x')`), printed after "program instantiation failed: ".
struct Program {
  std::shared_ptr<const Ast> ast;
  std::string error;
  bool instantiation_failed = false;
  std::string result_type;     ///< the checked type of the expression ("bool", "string", "dyn", ...)
  bool uses_old_self = false;  ///< a transition rule: it references oldSelf
};

/// Compiles `expr` with `self` (and `oldSelf`) typed by `schema`, the structural schema node the
/// rule is declared on (null: dyn). `resource_root`: the node is the custom resource itself, so
/// apiVersion, kind and metadata.name/generateName are visible too. `optional_old_self` types
/// oldSelf as optional (rule.optionalOldSelf).
Program compile(std::string_view expr, const boost::json::object* schema, bool resource_root = false,
                bool optional_old_self = false);

/// The outcome of an evaluation.
struct Result {
  enum class Kind { Value, Error } kind = Kind::Value;
  std::string type;        ///< the value's CEL type name ("bool", "string", "list(dyn)"...), or "" for an error
  std::string text;        ///< the value in CEL syntax (true, 1u, "a", [1, 2], {"a": 1}), or the error message
  bool is_true = false;    ///< the value is the bool true
  std::string str;         ///< the value when it is a string
  std::uint64_t cost = 0;  ///< the evaluation's cost (its steps, and the sizes of the values operations read)
};

/// Evaluates a compiled program. `old_self` null: oldSelf is unset (optional none with
/// `optional_old_self`). `schema`/`resource_root` as given to compile(). An evaluation whose cost
/// goes over `limit` (celconfig.PerCallLimit) stops with "operation cancelled: actual cost limit
/// exceeded"; the cost is counted in evaluation steps, not by cel-go's cost model.
Result evaluate(const Program& p, const boost::json::value& self, const boost::json::value* old_self,
                const boost::json::object* schema, bool resource_root = false, bool optional_old_self = false,
                std::uint64_t limit = 1'000'000);

/// The regular expressions of CRDs (`pattern`, CEL's matches/find/findAll), which Kubernetes runs
/// with Go's RE2: Boost.Regex's Perl syntax stands in (the same for the usual patterns; RE2 has no
/// backreferences or lookaround), with its non-recursive matcher, so no input exhausts the stack.
struct Regex {
  /// The compiled pattern, or nullptr when it does not compile (cached; shared between threads).
  static std::shared_ptr<const Regex> compile(std::string_view pattern);
  /// The first match of the pattern in `text` ([begin, end) offsets), nullopt when none; throws
  /// std::runtime_error when the match is too complex to finish.
  std::optional<std::pair<std::size_t, std::size_t>> search(std::string_view text, std::size_t from = 0) const;
  struct Impl;
  std::shared_ptr<const Impl> impl;
};

/// strconv.FormatFloat(d, 'g', -1, 64): how Go (and CEL's string(double)) prints a double.
std::string go_float(double d);

}  // namespace gpupool::embedded::cel
