#include "embedded/typecheck.hpp"

#include "embedded/crd_schema.hpp"
#include "embedded/schema.hpp"

#include <map>
#include <set>
#include <string_view>
#include <vector>

#include <fmt/format.h>

namespace gpupool::embedded {

namespace json = boost::json;

namespace {

std::optional<std::string> first_type_error(const ResourceType& t, const json::object& obj, std::string* go_type) {
  // Kubernetes' published schema of the kind (embedded/schema.hpp); custom resources have none.
  // Without pruning, decode() only reads the object.
  auto d = schema::decode(t.group, t.version, t.kind, const_cast<json::object&>(obj), false);
  if (go_type) *go_type = d.misfit_go_type;
  return d.type_error;
}

}  // namespace

std::optional<std::string> type_error(const ResourceType& t, const json::object& obj) {
  return first_type_error(t, obj, nullptr);
}

std::optional<std::string> patch_type_error(const ResourceType& t, const json::object& patch) {
  std::string go_type;
  if (!first_type_error(t, patch, &go_type)) return std::nullopt;
  return go_type;
}

void check_patched_types(const ResourceType& t, const json::object& patched, bool strategic) {
  // apiserver/pkg/endpoints/handlers/patch.go: errors.NewInvalid(schema.GroupKind{}, "",
  // field.ErrorList{field.Invalid(field.NewPath("patch"), <patch or patched object>, err)}).
  std::string value, err;
  if (strategic) {
    auto e = patch_type_error(t, patched);
    if (!e) return;
    value = go_print(json::value(patched));
    err = "unrecognized type: " + *e;
  } else {
    auto e = type_error(t, patched);
    if (!e) return;
    value = json::serialize(patched);
    err = *e;
  }
  const std::string cause = fmt::format("Invalid value: {}: {}", go_quote(value), err);
  throw StatusError(422, "Invalid", fmt::format(" \"\" is invalid: patch: {}", cause), "", "", "",
                    {{"FieldValueInvalid", cause, "patch"}});
}

FieldValidation field_validation(std::string_view value, std::string_view options_kind) {
  if (value.empty() || value == "Warn") return FieldValidation::Warn;
  if (value == "Strict") return FieldValidation::Strict;
  if (value == "Ignore") return FieldValidation::Ignore;
  // apimachinery meta/v1/validation ValidateFieldValidation: NotSupported, the values sorted.
  const std::string cause =
      fmt::format("Unsupported value: {}: supported values: \"\", \"Ignore\", \"Strict\", \"Warn\"", go_quote(value));
  throw StatusError::invalid_options(options_kind, {{"FieldValueNotSupported", cause, "fieldValidation"}});
}

namespace {

std::string unknown_list(const std::vector<std::string>& fields) {
  std::string out = "strict decoding error: ";
  for (std::size_t i = 0; i < fields.size(); ++i)
    out += fmt::format("{}unknown field {}", i ? ", " : "", go_quote(fields[i]));
  return out;
}

void warn_unknown(const std::vector<std::string>& fields, std::vector<std::string>* warnings) {
  if (!warnings) return;
  for (const auto& f : fields) warnings->push_back(fmt::format("unknown field {}", go_quote(f)));
}

}  // namespace

namespace {

// A custom resource's decoding (customresource_handler.go schemaCoercingDecoder): its metadata as
// ObjectMeta, the rest pruned by the structural schema; then the codec's defaulting. The unknown
// fields: metadata's first, then the pruned ones, sorted.
schema::Decoded decode_custom(const ResourceType& t, json::object& obj) {
  schema::Decoded d = schema::decode_object_meta(obj, true);
  for (auto& f : crd::coerce(obj, *t.schema)) d.unknown_fields.push_back(std::move(f));
  crd::apply_defaults(obj, *t.schema);
  return d;
}

}  // namespace

void decode_body(const ResourceType& t, json::object& body, FieldValidation fv, std::vector<std::string>* warnings) {
  // apimachinery runtime/serializer: NewBadRequest("<Kind> in version \"<v>\" cannot be handled as a <Kind>: <err>")
  auto refuse = [&](const std::string& err) {
    return StatusError::bad_request(
        fmt::format("{} in version \"{}\" cannot be handled as a {}: {}", t.kind, t.version, t.kind, err));
  };
  const auto d = t.schema ? decode_custom(t, body) : schema::decode(t.group, t.version, t.kind, body, true);
  if (d.decode_error) throw refuse(*d.decode_error);
  if (d.type_error) throw refuse(*d.type_error);
  if (d.unknown_fields.empty()) return;
  if (fv == FieldValidation::Strict) throw refuse(unknown_list(d.unknown_fields));
  if (fv == FieldValidation::Warn) warn_unknown(d.unknown_fields, warnings);
}

void decode_patched(const ResourceType& t, json::object& patched, FieldValidation fv,
                    std::vector<std::string>* warnings) {
  const std::string before = fv == FieldValidation::Strict ? json::serialize(patched) : std::string();
  const auto d = t.schema ? decode_custom(t, patched) : schema::decode(t.group, t.version, t.kind, patched, true);
  if (d.unknown_fields.empty()) return;
  if (fv == FieldValidation::Strict) {
    const std::string cause = fmt::format("Invalid value: {}: {}", go_quote(before), unknown_list(d.unknown_fields));
    throw StatusError(422, "Invalid", fmt::format(" \"\" is invalid: patch: {}", cause), "", "", "",
                      {{"FieldValueInvalid", cause, "patch"}});
  }
  if (fv == FieldValidation::Warn) warn_unknown(d.unknown_fields, warnings);
}

void check_scale_patched(const json::object& scale) {
  // autoscaling/v1 Scale: spec.replicas is an int32 (ScaleSpec), the only typed field a patch of
  // the scale subresource sets. Worded as check_patched_types words a patched object.
  const json::value* spec = scale.if_contains("spec");
  const json::value* rep = spec && spec->is_object() ? spec->as_object().if_contains("replicas") : nullptr;
  if (!rep) return;
  const auto kind = schema::int32_misfit(*rep);
  if (!kind) return;
  const std::string cause = fmt::format(
      "Invalid value: {}: json: cannot unmarshal {} into Go struct field ScaleSpec.spec.replicas of type int32",
      go_quote(json::serialize(scale)), *kind);
  throw StatusError(422, "Invalid", fmt::format(" \"\" is invalid: patch: {}", cause), "", "", "",
                    {{"FieldValueInvalid", cause, "patch"}});
}

std::string go_print(const json::value& v) {
  switch (v.kind()) {
    case json::kind::object: {
      // fmt prints a map with its keys sorted.
      std::vector<std::pair<std::string, const json::value*>> kv;
      for (const auto& [k, c] : v.as_object()) kv.emplace_back(std::string(k), &c);
      std::sort(kv.begin(), kv.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
      std::string out = "map[";
      for (std::size_t i = 0; i < kv.size(); ++i) out += (i ? " " : "") + kv[i].first + ":" + go_print(*kv[i].second);
      return out + "]";
    }
    case json::kind::array: {
      std::string out = "[";
      bool first = true;
      for (const auto& c : v.as_array()) {
        if (!first) out += " ";
        first = false;
        out += go_print(c);
      }
      return out + "]";
    }
    case json::kind::string:
      return std::string(v.as_string());
    case json::kind::bool_:
      return v.as_bool() ? "true" : "false";
    case json::kind::null:
      return "<nil>";
    default:
      return schema::number_text(v);
  }
}

std::string go_quote(std::string_view s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\a':
        out += "\\a";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\v':
        out += "\\v";
        break;
      default:
        if (c < 0x20 || c == 0x7f)
          out += fmt::format("\\x{:02x}", c);
        else
          out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

}  // namespace gpupool::embedded
