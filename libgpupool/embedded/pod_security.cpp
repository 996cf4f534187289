// embedded/pod_security.cpp — the PodSecurity admission plugin (a default plugin of kube-apiserver
// v1.32: plugin/pkg/admission/security/podsecurity/admission.go wrapping
// staging/src/k8s.io/pod-security-admission), in its default configuration: privileged:latest for
// enforce, audit and warn unless a namespace's pod-security.kubernetes.io labels say otherwise, no
// exemptions. Audit annotations are not kept (the embedded server writes no audit log).
//
// - Namespaces (admission.go ValidateNamespace): the labels must parse (api/helpers.go
//   PolicyToEvaluate: 422 `metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value:
//   "bogus": must be one of privileged, baseline, restricted`); an update making enforce stricter
//   warns about the namespace's existing pods that violate it (EvaluatePodsInNamespace).
// - Pods (ValidatePod): created, or updated with a new image or container count
//   (isSignificantPodUpdate), against the enforce level: 403 `pods "p" is forbidden: violates
//   PodSecurity "restricted:latest": ...`; else a warning for the warn level.
// - Pod controllers (ValidatePodController; DefaultPodSpecExtractor's kinds): their template
//   against the warn level, a warning only.
// The checks are policy/check_*.go at the version the label names (registry.go: "latest" and any
// later version are the newest, v1.32), in registry.go's order: baseline checks, then restricted
// ones, each group by check ID, a restricted check replacing the baseline check it overrides.
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "embedded/admission.hpp"
#include "embedded/controllers_util.hpp"
#include "embedded/validation_fields.hpp"

namespace gpupool::embedded {

namespace {

using util::object_at;
using util::string_of;

// registry.go maxVersion: the newest MinimumVersion of any check (sysctls' v1.32).
constexpr int kMaxMinor = 32;

enum class Level { Privileged, Baseline, Restricted };

struct LevelVersion {
  Level level = Level::Privileged;
  int minor = -1;  ///< the minor version of v1.x; -1: latest
  bool operator==(const LevelVersion&) const = default;
  std::string text() const {  // api.LevelVersion.String
    const char* l = level == Level::Privileged ? "privileged" : level == Level::Baseline ? "baseline" : "restricted";
    return minor < 0 ? fmt::format("{}:latest", l) : fmt::format("{}:v1.{}", l, minor);
  }
  /// The version of the checks evaluated (EvaluatePod: no newer than the newest check).
  int checks_minor() const { return minor < 0 ? kMaxMinor : std::min(minor, kMaxMinor); }
};

struct Policy {
  LevelVersion enforce, audit, warn;
};

constexpr std::string_view kLabelPrefix = "pod-security.kubernetes.io/";

// api/helpers.go PolicyToEvaluate, with ParseLevel and ParseVersion: the labels over the default
// (privileged:latest); a bad enforce level is restricted (fail closed), a bad audit or warn level
// privileged, a bad version latest; each error a field.Invalid of the label. Warn defaults to a
// stricter enforce level (and its version) when no warn level is given.
Policy policy_to_evaluate(const json::object* labels, std::vector<StatusCause>* causes) {
  Policy p;
  if (!labels) return p;
  const auto label = [&](std::string_view mode) -> std::optional<std::string> {
    const json::value* v = labels->if_contains(fmt::format("{}{}", kLabelPrefix, mode));
    if (!v) return std::nullopt;
    return v->is_string() ? std::string(v->as_string()) : std::string();
  };
  const auto invalid = [&](std::string_view mode, const std::string& value, std::string_view detail) {
    if (causes)
      fields::Errors{*causes}.invalid(fmt::format("metadata.labels[{}{}]", kLabelPrefix, mode), fields::q(value),
                                      detail);
  };
  const auto level = [&](std::string_view mode, Level& out, Level on_error) {
    const auto v = label(mode);
    if (!v) return false;
    if (*v == "privileged")
      out = Level::Privileged;
    else if (*v == "baseline")
      out = Level::Baseline;
    else if (*v == "restricted")
      out = Level::Restricted;
    else {
      out = on_error;
      invalid(mode, *v, "must be one of privileged, baseline, restricted");
      return false;
    }
    return true;
  };
  const auto version = [&](std::string_view mode, int& out) {
    const auto v = label(mode);
    if (!v) return false;
    out = -1;
    if (*v == "latest") return true;
    // ^v1\.([0-9]|[1-9][0-9]*)$ and strconv.Atoi
    const std::string_view digits = std::string_view(*v).substr(std::min<std::size_t>(3, v->size()));
    int minor = -1;
    const bool ok = v->starts_with("v1.") && !digits.empty() && (digits.size() == 1 || digits[0] != '0') &&
                    std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }) &&
                    std::from_chars(digits.data(), digits.data() + digits.size(), minor).ec == std::errc{};
    if (!ok) {
      invalid(mode, *v, "must be \"latest\" or \"v1.x\"");
      return true;
    }
    out = minor;
    return true;
  };
  const bool has_enforce_level = level("enforce", p.enforce.level, Level::Restricted);
  version("enforce-version", p.enforce.minor);
  level("audit", p.audit.level, Level::Privileged);
  version("audit-version", p.audit.minor);
  const bool has_warn_level = label("warn").has_value();
  level("warn", p.warn.level, Level::Privileged);
  const bool has_warn_version = version("warn-version", p.warn.minor);
  if (!has_warn_level && has_enforce_level && p.enforce.level > p.warn.level) {
    p.warn.level = p.enforce.level;
    if (!has_warn_version) p.warn.minor = p.enforce.minor;
  }
  return p;
}

// ---- the checks (policy/check_*.go) ---------------------------------------------------------------

struct Violation {
  std::string reason, detail;
};
using Result = std::optional<Violation>;

struct PodView {
  const json::object* meta;  ///< may be null
  const json::object& spec;
  int minor;  ///< the checks' version (v1.minor)
};

const json::object kEmpty;

std::string join(const std::vector<std::string>& items, std::string_view sep) {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : std::string(sep)) + s;
  return out;
}

std::string join_quote(const std::vector<std::string>& items) {  // helpers.go joinQuote
  return items.empty() ? std::string() : "\"" + join(items, "\", \"") + "\"";
}
std::string join_quote(const std::set<std::string>& items) {
  return join_quote(std::vector(items.begin(), items.end()));
}

const char* plural(const char* one, const char* many, std::size_t n) { return n == 1 ? one : many; }

// "containers \"a\", \"b\"" as the checks name their bad containers.
std::string containers_named(const std::vector<std::string>& names) {
  return fmt::format("{} {}", plural("container", "containers", names.size()), join_quote(names));
}

// visitor.go visitContainers: init containers, containers, ephemeral containers.
template <typename F>
void visit_containers(const json::object& spec, F&& f) {
  for (const char* key : {"initContainers", "containers", "ephemeralContainers"})
    if (const json::value* v = spec.if_contains(key); v && v->is_array())
      for (const auto& c : v->as_array())
        if (c.is_object()) f(c.as_object());
}

const json::object* security_context(const json::object& o) { return object_at(o, {"securityContext"}); }

// A *bool field: nullopt when absent or null.
std::optional<bool> opt_bool(const json::object* o, std::string_view key) {
  const json::value* v = o ? o->if_contains(key) : nullptr;
  if (!v || !v->is_bool()) return std::nullopt;
  return v->as_bool();
}
std::optional<std::int64_t> opt_int(const json::object* o, std::string_view key) {
  const json::value* v = o ? o->if_contains(key) : nullptr;
  if (!v || !v->is_number()) return std::nullopt;
  return util::int_of(o, key, 0);
}
const json::array& strings_at(const json::object* o, std::string_view key) {
  static const json::array kNone;
  const json::value* v = o ? o->if_contains(key) : nullptr;
  return v && v->is_array() ? v->as_array() : kNone;
}
std::string name_of_container(const json::object& c) { return string_of(&c, "name"); }

bool windows(const json::object& spec) { return string_of(object_at(spec, {"os"}), "name") == "windows"; }

// check_appArmorProfile.go appArmorProfile_1_0
Result app_armor_profile(const PodView& p) {
  std::vector<std::string> setters;
  std::set<std::string> bad_values;
  const auto allowed_type = [](const std::string& t) { return t == "RuntimeDefault" || t == "Localhost"; };
  if (const json::object* prof = object_at(p.spec, {"securityContext", "appArmorProfile"})) {
    if (!allowed_type(string_of(prof, "type"))) {
      setters.emplace_back("pod");
      bad_values.insert(string_of(prof, "type"));
    }
  }
  std::vector<std::string> bad;
  visit_containers(p.spec, [&](const json::object& c) {
    if (const json::object* prof = object_at(c, {"securityContext", "appArmorProfile"}))
      if (!allowed_type(string_of(prof, "type"))) {
        bad.push_back(name_of_container(c));
        bad_values.insert(string_of(prof, "type"));
      }
  });
  if (!bad.empty()) setters.push_back(containers_named(bad));
  std::vector<std::string> values(bad_values.begin(), bad_values.end());
  std::vector<std::string> annotations;
  if (const json::object* ann = object_at(p.meta ? *p.meta : kEmpty, {"annotations"}))
    for (const auto& [k, v] : *ann) {
      const std::string value = v.is_string() ? std::string(v.as_string()) : std::string();
      if (std::string_view(k).starts_with("container.apparmor.security.beta.kubernetes.io/") && !value.empty() &&
          value != "runtime/default" && !value.starts_with("localhost/"))
        annotations.push_back(fmt::format("{}={}", std::string_view(k), go_quote(value)));
    }
  if (!annotations.empty()) {
    std::sort(annotations.begin(), annotations.end());
    values.insert(values.end(), annotations.begin(), annotations.end());
    setters.emplace_back(plural("annotation", "annotations", annotations.size()));
  }
  if (setters.empty()) return std::nullopt;
  return Violation{
      plural("forbidden AppArmor profile", "forbidden AppArmor profiles", values.size()),
      fmt::format("{} must not set AppArmor profile type to {}", join(setters, " and "), join_quote(values))};
}

// check_capabilities_baseline.go capabilitiesBaseline_1_0
Result capabilities_baseline(const PodView& p) {
  static const std::set<std::string, std::less<>> kAllowed = {
      "AUDIT_WRITE",      "CHOWN",   "DAC_OVERRIDE", "FOWNER",  "FSETID", "KILL",      "MKNOD",
      "NET_BIND_SERVICE", "SETFCAP", "SETGID",       "SETPCAP", "SETUID", "SYS_CHROOT"};
  std::vector<std::string> bad;
  std::set<std::string> caps;
  visit_containers(p.spec, [&](const json::object& c) {
    const json::object* capabilities = object_at(c, {"securityContext", "capabilities"});
    if (!capabilities) return;
    bool valid = true;
    for (const auto& cap : strings_at(capabilities, "add"))
      if (cap.is_string() && !kAllowed.count(cap.as_string())) {
        valid = false;
        caps.insert(std::string(cap.as_string()));
      }
    if (!valid) bad.push_back(name_of_container(c));
  });
  if (bad.empty()) return std::nullopt;
  return Violation{"non-default capabilities", fmt::format("{} must not include {} in securityContext.capabilities.add",
                                                           containers_named(bad), join_quote(caps))};
}

// check_hostNamespaces.go hostNamespaces_1_0
Result host_namespaces(const PodView& p) {
  std::vector<std::string> on;
  for (const char* key : {"hostNetwork", "hostPID", "hostIPC"})
    if (opt_bool(&p.spec, key).value_or(false)) on.push_back(fmt::format("{}=true", key));
  if (on.empty()) return std::nullopt;
  return Violation{"host namespaces", join(on, ", ")};
}

std::vector<std::string> volume_names(const json::object& spec, const std::function<bool(const json::object&)>& bad) {
  std::vector<std::string> out;
  for (const auto& v : strings_at(&spec, "volumes"))
    if (v.is_object() && bad(v.as_object())) out.push_back(string_of(&v.as_object(), "name"));
  return out;
}

bool has_source(const json::object& volume, std::string_view key) {
  const json::value* v = volume.if_contains(key);
  return v && !v->is_null();
}

// check_hostPathVolumes.go hostPathVolumes_1_0
Result host_path_volumes(const PodView& p) {
  const auto bad = volume_names(p.spec, [](const json::object& v) { return has_source(v, "hostPath"); });
  if (bad.empty()) return std::nullopt;
  return Violation{"hostPath volumes", fmt::format("{} {}", plural("volume", "volumes", bad.size()), join_quote(bad))};
}

// check_hostPorts.go hostPorts_1_0
Result host_ports(const PodView& p) {
  std::vector<std::string> bad;
  std::set<std::string> ports;  // sets.String: ordered as text
  visit_containers(p.spec, [&](const json::object& c) {
    bool valid = true;
    for (const auto& port : strings_at(&c, "ports"))
      if (port.is_object())
        if (const auto hp = opt_int(&port.as_object(), "hostPort"); hp && *hp != 0) {
          valid = false;
          ports.insert(std::to_string(static_cast<std::int32_t>(*hp)));
        }
    if (!valid) bad.push_back(name_of_container(c));
  });
  if (bad.empty()) return std::nullopt;
  return Violation{"hostPort", fmt::format("{} {} {} {}", containers_named(bad), plural("uses", "use", bad.size()),
                                           plural("hostPort", "hostPorts", ports.size()),
                                           join(std::vector(ports.begin(), ports.end()), ", "))};
}

// check_privileged.go privileged_1_0
Result privileged(const PodView& p) {
  std::vector<std::string> bad;
  visit_containers(p.spec, [&](const json::object& c) {
    if (opt_bool(security_context(c), "privileged").value_or(false)) bad.push_back(name_of_container(c));
  });
  if (bad.empty()) return std::nullopt;
  return Violation{"privileged", fmt::format("{} must not set securityContext.privileged=true", containers_named(bad))};
}

// check_procMount.go procMount_1_0 (relaxPolicyForUserNamespacePod: off, the
// UserNamespacesPodSecurityStandards gate being off by default)
Result proc_mount(const PodView& p) {
  std::vector<std::string> bad;
  std::set<std::string> types;
  visit_containers(p.spec, [&](const json::object& c) {
    const json::object* sc = security_context(c);
    const json::value* pm = sc ? sc->if_contains("procMount") : nullptr;
    if (!pm || !pm->is_string() || pm->as_string() == "Default") return;
    bad.push_back(name_of_container(c));
    types.insert(std::string(pm->as_string()));
  });
  if (bad.empty()) return std::nullopt;
  return Violation{"procMount", fmt::format("{} must not set securityContext.procMount to {}", containers_named(bad),
                                            join_quote(types))};
}

// check_seLinuxOptions.go seLinuxOptions1_0 / 1_31 (container_engine_t allowed from v1.31)
Result se_linux_options(const PodView& p) {
  std::vector<std::string> setters;
  std::set<std::string> bad_types;
  bool set_user = false, set_role = false;
  const auto valid = [&](const json::object& opts) {
    const std::string type = string_of(&opts, "type");
    bool ok = true;
    if (!(type.empty() || type == "container_t" || type == "container_init_t" || type == "container_kvm_t" ||
          (p.minor >= 31 && type == "container_engine_t"))) {
      ok = false;
      bad_types.insert(type);
    }
    if (!string_of(&opts, "user").empty()) {
      ok = false;
      set_user = true;
    }
    if (!string_of(&opts, "role").empty()) {
      ok = false;
      set_role = true;
    }
    return ok;
  };
  if (const json::object* o = object_at(p.spec, {"securityContext", "seLinuxOptions"}); o && !valid(*o))
    setters.emplace_back("pod");
  std::vector<std::string> bad;
  visit_containers(p.spec, [&](const json::object& c) {
    if (const json::object* o = object_at(c, {"securityContext", "seLinuxOptions"}); o && !valid(*o))
      bad.push_back(name_of_container(c));
  });
  if (!bad.empty()) setters.push_back(containers_named(bad));
  if (setters.empty()) return std::nullopt;
  std::vector<std::string> data;
  if (!bad_types.empty())
    data.push_back(fmt::format("{} {}", plural("type", "types", bad_types.size()), join_quote(bad_types)));
  if (set_user) data.emplace_back("user may not be set");
  if (set_role) data.emplace_back("role may not be set");
  return Violation{"seLinuxOptions", fmt::format("{} set forbidden securityContext.seLinuxOptions: {}",
                                                 join(setters, " and "), join(data, "; "))};
}

bool valid_seccomp(const std::string& t) { return t == "Localhost" || t == "RuntimeDefault"; }

// check_seccompProfile_baseline.go: seccompProfileBaseline_1_0 (the annotations) before v1.19,
// seccompProfileBaseline_1_19 (the fields) since.
Result seccomp_baseline(const PodView& p) {
  if (p.minor < 19) {
    const json::object* ann = object_at(p.meta ? *p.meta : kEmpty, {"annotations"});
    std::set<std::string> forbidden;
    const auto check = [&](const std::string& key) {
      const json::value* v = ann ? ann->if_contains(key) : nullptr;
      if (!v) return;
      const std::string value = v->is_string() ? std::string(v->as_string()) : std::string();
      if (value != "runtime/default" && value != "docker/default" && !value.starts_with("localhost/"))
        forbidden.insert(fmt::format("{}={}", key, go_quote(value)));
    };
    check("seccomp.security.alpha.kubernetes.io/pod");
    visit_containers(p.spec, [&](const json::object& c) {
      check("container.seccomp.security.alpha.kubernetes.io/" + name_of_container(c));
    });
    if (forbidden.empty()) return std::nullopt;
    return Violation{"seccompProfile",
                     fmt::format("forbidden {} {}", plural("annotation", "annotations", forbidden.size()),
                                 join(std::vector(forbidden.begin(), forbidden.end()), ", "))};
  }
  std::vector<std::string> setters;
  std::set<std::string> values;
  if (const json::object* sp = object_at(p.spec, {"securityContext", "seccompProfile"});
      sp && !valid_seccomp(string_of(sp, "type"))) {
    setters.emplace_back("pod");
    values.insert(string_of(sp, "type"));
  }
  std::vector<std::string> bad;
  visit_containers(p.spec, [&](const json::object& c) {
    if (const json::object* sp = object_at(c, {"securityContext", "seccompProfile"});
        sp && !valid_seccomp(string_of(sp, "type"))) {
      bad.push_back(name_of_container(c));
      values.insert(string_of(sp, "type"));
    }
  });
  if (!bad.empty()) setters.push_back(containers_named(bad));
  if (setters.empty()) return std::nullopt;
  return Violation{"seccompProfile", fmt::format("{} must not set securityContext.seccompProfile.type to {}",
                                                 join(setters, " and "), join_quote(values))};
}

// check_sysctls.go: the safe sysctls of v1.0, more since v1.27, v1.29 and v1.32.
Result sysctls(const PodView& p) {
  const auto allowed = [&](const std::string& s) {
    static const std::set<std::string, std::less<>> k0 = {"kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range",
                                                          "net.ipv4.tcp_syncookies", "net.ipv4.ping_group_range",
                                                          "net.ipv4.ip_unprivileged_port_start"};
    static const std::set<std::string, std::less<>> k29 = {"net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout",
                                                           "net.ipv4.tcp_keepalive_intvl",
                                                           "net.ipv4.tcp_keepalive_probes"};
    return k0.count(s) || (p.minor >= 27 && s == "net.ipv4.ip_local_reserved_ports") ||
           (p.minor >= 29 && k29.count(s)) || (p.minor >= 32 && (s == "net.ipv4.tcp_rmem" || s == "net.ipv4.tcp_wmem"));
  };
  std::vector<std::string> bad;
  for (const auto& s : strings_at(object_at(p.spec, {"securityContext"}), "sysctls"))
    if (s.is_object() && !allowed(string_of(&s.as_object(), "name"))) bad.push_back(string_of(&s.as_object(), "name"));
  if (bad.empty()) return std::nullopt;
  return Violation{"forbidden sysctls", join(bad, ", ")};
}

// check_windowsHostProcess.go windowsHostProcess_1_0
Result windows_host_process(const PodView& p) {
  std::vector<std::string> bad;
  visit_containers(p.spec, [&](const json::object& c) {
    if (opt_bool(object_at(c, {"securityContext", "windowsOptions"}), "hostProcess").value_or(false))
      bad.push_back(name_of_container(c));
  });
  std::vector<std::string> setters;
  if (opt_bool(object_at(p.spec, {"securityContext", "windowsOptions"}), "hostProcess").value_or(false))
    setters.emplace_back("pod");
  if (!bad.empty()) setters.push_back(containers_named(bad));
  if (setters.empty()) return std::nullopt;
  return Violation{"hostProcess", fmt::format("{} must not set securityContext.windowsOptions.hostProcess=true",
                                              join(setters, " and "))};
}

// check_allowPrivilegeEscalation.go: 1_8, and 1_25 leaving Windows pods alone.
Result allow_privilege_escalation(const PodView& p) {
  if (p.minor >= 25 && windows(p.spec)) return std::nullopt;
  std::vector<std::string> bad;
  visit_containers(p.spec, [&](const json::object& c) {
    if (opt_bool(security_context(c), "allowPrivilegeEscalation").value_or(true)) bad.push_back(name_of_container(c));
  });
  if (bad.empty()) return std::nullopt;
  return Violation{"allowPrivilegeEscalation != false",
                   fmt::format("{} must set securityContext.allowPrivilegeEscalation=false", containers_named(bad))};
}

// check_capabilities_restricted.go: 1_22, and 1_25 leaving Windows pods alone.
Result capabilities_restricted(const PodView& p) {
  if (p.minor >= 25 && windows(p.spec)) return std::nullopt;
  std::vector<std::string> missing_drop, adding;
  std::set<std::string> caps;
  visit_containers(p.spec, [&](const json::object& c) {
    const json::object* capabilities = object_at(c, {"securityContext", "capabilities"});
    if (!capabilities) {
      missing_drop.push_back(name_of_container(c));
      return;
    }
    const auto& drop = strings_at(capabilities, "drop");
    if (std::none_of(drop.begin(), drop.end(),
                     [](const json::value& d) { return d.is_string() && d.as_string() == "ALL"; }))
      missing_drop.push_back(name_of_container(c));
    bool forbidden = false;
    for (const auto& cap : strings_at(capabilities, "add"))
      if (cap.is_string() && cap.as_string() != "NET_BIND_SERVICE") {
        forbidden = true;
        caps.insert(std::string(cap.as_string()));
      }
    if (forbidden) adding.push_back(name_of_container(c));
  });
  std::vector<std::string> details;
  if (!missing_drop.empty())
    details.push_back(
        fmt::format("{} must set securityContext.capabilities.drop=[\"ALL\"]", containers_named(missing_drop)));
  if (!adding.empty())
    details.push_back(fmt::format("{} must not include {} in securityContext.capabilities.add",
                                  containers_named(adding), join_quote(caps)));
  if (details.empty()) return std::nullopt;
  return Violation{"unrestricted capabilities", join(details, "; ")};
}

// check_restrictedVolumes.go restrictedVolumes_1_0
Result restricted_volumes(const PodView& p) {
  // The volume sources allowed, then the others in the check's order (its switch).
  // clang-format off
  static const char* const kAllowed[] = {"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral",
                                         "persistentVolumeClaim", "projected", "secret"};
  static const char* const kNamed[] = {
      "hostPath", "gcePersistentDisk", "awsElasticBlockStore", "gitRepo", "nfs", "iscsi", "glusterfs", "rbd",
      "flexVolume", "cinder", "cephfs", "flocker", "fc", "azureFile", "vsphereVolume", "quobyte", "azureDisk",
      "photonPersistentDisk", "portworxVolume", "scaleIO", "storageos"};
  // clang-format on
  std::set<std::string> types;
  const auto bad = volume_names(p.spec, [&](const json::object& v) {
    for (const char* k : kAllowed)
      if (has_source(v, k)) return false;
    std::string type = "unknown";
    for (const char* k : kNamed)
      if (has_source(v, k)) {
        type = k;
        break;
      }
    types.insert(type);
    return true;
  });
  if (bad.empty()) return std::nullopt;
  return Violation{
      "restricted volume types",
      fmt::format("{} {} {} {} {}", plural("volume", "volumes", bad.size()), join_quote(bad),
                  plural("uses", "use", bad.size()),
                  plural("restricted volume type", "restricted volume types", types.size()), join_quote(types))};
}

// check_runAsNonRoot.go runAsNonRoot_1_0
Result run_as_non_root(const PodView& p) {
  std::vector<std::string> setters;
  bool pod_non_root = false;
  if (const auto v = opt_bool(object_at(p.spec, {"securityContext"}), "runAsNonRoot")) {
    if (!*v)
      setters.emplace_back("pod");
    else
      pod_non_root = true;
  }
  std::vector<std::string> explicit_bad, implicit_bad;
  visit_containers(p.spec, [&](const json::object& c) {
    if (const auto v = opt_bool(security_context(c), "runAsNonRoot")) {
      if (!*v) explicit_bad.push_back(name_of_container(c));
    } else if (!pod_non_root) {
      implicit_bad.push_back(name_of_container(c));
    }
  });
  if (!explicit_bad.empty()) setters.push_back(containers_named(explicit_bad));
  if (!setters.empty())
    return Violation{"runAsNonRoot != true",
                     fmt::format("{} must not set securityContext.runAsNonRoot=false", join(setters, " and "))};
  if (!implicit_bad.empty())
    return Violation{"runAsNonRoot != true", fmt::format("pod or {} must set securityContext.runAsNonRoot=true",
                                                         containers_named(implicit_bad))};
  return std::nullopt;
}

// check_runAsUser.go runAsUser_1_23
Result run_as_user(const PodView& p) {
  std::vector<std::string> setters;
  if (opt_int(object_at(p.spec, {"securityContext"}), "runAsUser") == 0) setters.emplace_back("pod");
  std::vector<std::string> bad;
  visit_containers(p.spec, [&](const json::object& c) {
    if (opt_int(security_context(c), "runAsUser") == 0) bad.push_back(name_of_container(c));
  });
  if (!bad.empty()) setters.push_back(containers_named(bad));
  if (setters.empty()) return std::nullopt;
  return Violation{"runAsUser=0", fmt::format("{} must not set runAsUser=0", join(setters, " and "))};
}

// check_seccompProfile_restricted.go: 1_19, and 1_25 leaving Windows pods alone.
Result seccomp_restricted(const PodView& p) {
  if (p.minor >= 25 && windows(p.spec)) return std::nullopt;
  std::vector<std::string> setters;
  std::set<std::string> values;
  bool pod_set = false;
  if (const json::object* sp = object_at(p.spec, {"securityContext", "seccompProfile"})) {
    if (!valid_seccomp(string_of(sp, "type"))) {
      setters.emplace_back("pod");
      values.insert(string_of(sp, "type"));
    } else {
      pod_set = true;
    }
  }
  std::vector<std::string> explicit_bad, implicit_bad;
  visit_containers(p.spec, [&](const json::object& c) {
    if (const json::object* sp = object_at(c, {"securityContext", "seccompProfile"})) {
      if (!valid_seccomp(string_of(sp, "type"))) {
        explicit_bad.push_back(name_of_container(c));
        values.insert(string_of(sp, "type"));
      }
    } else if (!pod_set) {
      implicit_bad.push_back(name_of_container(c));
    }
  });
  if (!explicit_bad.empty()) setters.push_back(containers_named(explicit_bad));
  if (!setters.empty())
    return Violation{"seccompProfile", fmt::format("{} must not set securityContext.seccompProfile.type to {}",
                                                   join(setters, " and "), join_quote(values))};
  if (!implicit_bad.empty())
    return Violation{"seccompProfile",
                     fmt::format("pod or {} must set securityContext.seccompProfile.type to \"RuntimeDefault\" or "
                                 "\"Localhost\"",
                                 containers_named(implicit_bad))};
  return std::nullopt;
}

struct Check {
  Result (*fn)(const PodView&);
  bool restricted;
  int since;                 ///< the first minor version the check exists in
  bool overridden = false;   ///< a baseline check a restricted check replaces (OverrideCheckIDs) ...
  int overridden_since = 0;  ///< ... from the overriding check's first version
};

// registry.go populate: baseline checks by ID, then restricted ones by ID (Go's byte order).
const Check kChecks[] = {
    {app_armor_profile, false, 0},                // appArmorProfile
    {capabilities_baseline, false, 0, true, 22},  // capabilities_baseline (capabilities_restricted)
    {host_namespaces, false, 0},                  // hostNamespaces
    {host_path_volumes, false, 0, true, 0},       // hostPathVolumes (restrictedVolumes)
    {host_ports, false, 0},                       // hostPorts
    {privileged, false, 0},                       // privileged
    {proc_mount, false, 0},                       // procMount
    {se_linux_options, false, 0},                 // seLinuxOptions
    {seccomp_baseline, false, 0, true, 19},       // seccompProfile_baseline (seccompProfile_restricted)
    {sysctls, false, 0},                          // sysctls
    {windows_host_process, false, 0},             // windowsHostProcess
    {allow_privilege_escalation, true, 8},        // allowPrivilegeEscalation
    {capabilities_restricted, true, 22},          // capabilities_restricted
    {restricted_volumes, true, 0},                // restrictedVolumes
    {run_as_non_root, true, 0},                   // runAsNonRoot
    {run_as_user, true, 23},                      // runAsUser
    {seccomp_restricted, true, 19},               // seccompProfile_restricted
};

struct Aggregate {  // policy/checks.go AggregateCheckResults
  std::vector<Violation> violations;
  bool allowed() const { return violations.empty(); }
  std::string detail() const {  // ForbiddenDetail
    std::vector<std::string> parts;
    for (const auto& v : violations)
      parts.push_back(v.detail.empty() ? v.reason : fmt::format("{} ({})", v.reason, v.detail));
    return join(parts, ", ");
  }
  std::string reason() const {  // ForbiddenReason
    std::vector<std::string> parts;
    for (const auto& v : violations) parts.push_back(v.reason);
    return join(parts, ", ");
  }
};

// registry.go EvaluatePod
Aggregate evaluate(const LevelVersion& lv, const json::object* meta, const json::object& spec) {
  Aggregate out;
  if (lv.level == Level::Privileged) return out;
  const PodView view{meta, spec, lv.checks_minor()};
  for (const auto& c : kChecks) {
    if (c.since > view.minor) continue;
    if (c.restricted && lv.level != Level::Restricted) continue;
    if (lv.level == Level::Restricted && c.overridden && view.minor >= c.overridden_since) continue;
    if (auto v = c.fn(view)) out.violations.push_back(std::move(*v));
  }
  return out;
}

// The pod a kind carries (DefaultPodSpecExtractor.ExtractPodSpec): nullopt for kinds without one.
struct PodParts {
  const json::object* meta = nullptr;
  const json::object* spec = nullptr;
};
std::optional<PodParts> extract_pod_spec(const ResourceType& t, const json::object& obj) {
  const auto from_template = [](const json::object* tmpl) {
    return tmpl ? PodParts{object_at(*tmpl, {"metadata"}), object_at(*tmpl, {"spec"})} : PodParts{};
  };
  if (t.group.empty() && t.resource == "podtemplates") return from_template(object_at(obj, {"template"}));
  if ((t.group.empty() && t.resource == "replicationcontrollers") ||
      (t.group == "apps" && (t.resource == "replicasets" || t.resource == "deployments" || t.resource == "daemonsets" ||
                             t.resource == "statefulsets")) ||
      (t.group == "batch" && t.resource == "jobs"))
    return from_template(object_at(obj, {"spec", "template"}));
  if (t.group == "batch" && t.resource == "cronjobs")
    return from_template(object_at(obj, {"spec", "jobTemplate", "spec", "template"}));
  return std::nullopt;
}

const json::object* labels_of(const json::object* o) { return o ? object_at(*o, {"metadata", "labels"}) : nullptr; }

void warn(const AdmissionRequest& r, std::string text) {
  if (r.options && r.options->warnings) r.options->warnings->push_back(std::move(text));
}

// admission.go EvaluatePodsInNamespace (no deadline; at most namespaceMaxPodsToCheck, 3000, pods,
// one per controller first: prioritizePods).
std::vector<std::string> evaluate_pods_in_namespace(Store& store, const std::string& ns, const LevelVersion& enforce) {
  const auto pods = store.list(store.type("", "pods"), ns).items;
  std::vector<std::shared_ptr<const json::object>> ordered, duplicates;
  std::set<std::string> controllers;
  for (const auto& pod : pods) {
    const std::string owner = util::controller_uid(*pod);
    if (owner.empty() || controllers.insert(owner).second)
      ordered.push_back(pod);
    else
      duplicates.push_back(pod);
  }
  ordered.insert(ordered.end(), duplicates.begin(), duplicates.end());
  constexpr std::size_t kMaxPods = 3000;
  const std::size_t total = ordered.size();
  if (ordered.size() > kMaxPods) ordered.resize(kMaxPods);
  std::vector<std::string> order;
  std::map<std::string, std::pair<std::string, int>> seen;  // reason -> (first pod name, count)
  for (const auto& pod : ordered) {
    const json::object* spec = object_at(*pod, {"spec"});
    const Aggregate a = evaluate(enforce, object_at(*pod, {"metadata"}), spec ? *spec : kEmpty);
    if (a.allowed()) continue;
    const std::string reason = a.reason(), name = util::name_of(*pod);
    auto [it, fresh] = seen.try_emplace(reason, name, 0);
    if (fresh)
      order.push_back(reason);
    else if (name < it->second.first)
      it->second.first = name;
    ++it->second.second;
  }
  std::vector<std::string> warnings;
  if (ordered.size() < total)
    warnings.push_back(fmt::format(
        "new PodSecurity enforce level only checked against the first {} of {} existing pods", ordered.size(), total));
  if (!order.empty())
    warnings.push_back(fmt::format("existing pods in namespace \"{}\" violate the new PodSecurity enforce level \"{}\"",
                                   ns, enforce.text()));
  for (auto& w : order) {  // decoratePodWarnings
    const auto& [name, count] = seen[w];
    w = count == 1   ? fmt::format("{}: {}", name, w)
        : count == 2 ? fmt::format("{} (and 1 other pod): {}", name, w)
                     : fmt::format("{} (and {} other pods): {}", name, count - 1, w);
  }
  std::sort(order.begin(), order.end());
  warnings.insert(warnings.end(), order.begin(), order.end());
  return warnings;
}

// admission.go ValidateNamespace
void validate_namespace(Store& store, AdmissionRequest& r) {
  if (!r.subresource.empty() || !r.object) return;
  std::vector<StatusCause> errs;
  const Policy p = policy_to_evaluate(labels_of(r.object), &errs);
  const std::string name = util::name_of(*r.object);
  if (r.operation == AdmissionRequest::Operation::Create) {
    if (!errs.empty()) throw StatusError::invalid(*r.type, name, std::move(errs));
    return;
  }
  if (r.operation != AdmissionRequest::Operation::Update || !r.old_object) return;
  std::vector<StatusCause> old_errs;
  const Policy old = policy_to_evaluate(labels_of(r.old_object), &old_errs);
  const auto same = [](const std::vector<StatusCause>& a, const std::vector<StatusCause>& b) {
    return a.size() == b.size() &&
           std::equal(a.begin(), a.end(), b.begin(), [](const StatusCause& x, const StatusCause& y) {
             return x.field == y.field && x.message == y.message;
           });
  };
  if (!errs.empty() && (old_errs.empty() || !same(errs, old_errs)))
    throw StatusError::invalid(*r.type, name, std::move(errs));
  if (p.enforce == old.enforce || p.enforce.level == Level::Privileged) return;
  if (p.enforce.minor == old.enforce.minor && p.enforce.level <= old.enforce.level) return;
  for (auto& w : evaluate_pods_in_namespace(store, name, p.enforce)) warn(r, std::move(w));
}

// admission.go isSignificantPodUpdate: a changed image or number of containers, an ephemeral
// container added or with a changed image.
bool significant_pod_update(const json::object& pod, const json::object& old) {
  const auto list = [](const json::object& o, const char* key) -> const json::array& {
    return strings_at(object_at(o, {"spec"}), key);
  };
  for (const char* key : {"containers", "initContainers"}) {
    const auto &a = list(pod, key), &b = list(old, key);
    if (a.size() != b.size()) return true;
    for (std::size_t i = 0; i < a.size(); ++i)
      if (string_of(a[i].is_object() ? &a[i].as_object() : nullptr, "image") !=
          string_of(b[i].is_object() ? &b[i].as_object() : nullptr, "image"))
        return true;
  }
  for (const auto& c : list(pod, "ephemeralContainers")) {
    const json::object* co = c.is_object() ? &c.as_object() : nullptr;
    const auto& olds = list(old, "ephemeralContainers");
    const auto match = std::find_if(olds.begin(), olds.end(), [&](const json::value& o) {
      return o.is_object() && string_of(&o.as_object(), "name") == string_of(co, "name");
    });
    if (match == olds.end() || string_of(&match->as_object(), "image") != string_of(co, "image")) return true;
  }
  return false;
}

// admission.go EvaluatePod: the enforce level refuses (pods only), else the warn level warns.
void evaluate_pod(const AdmissionRequest& r, const Policy& p, const json::object* meta, const json::object& spec,
                  bool enforce) {
  std::optional<Aggregate> enforced;
  if (enforce) {
    enforced = evaluate(p.enforce, meta, spec);
    if (!enforced->allowed())
      throw admission_forbidden(r,
                                fmt::format("violates PodSecurity \"{}\": {}", p.enforce.text(), enforced->detail()));
  }
  const Aggregate w = enforced && p.warn == p.enforce ? *enforced : evaluate(p.warn, meta, spec);
  if (!w.allowed()) warn(r, fmt::format("would violate PodSecurity \"{}\": {}", p.warn.text(), w.detail()));
}

// The policy of a namespace's labels (a namespace's lister lookup).
Policy namespace_policy(Store& store, const std::string& ns) {
  const auto obj = store.find(store.type("", "namespaces"), "", ns);
  return policy_to_evaluate(labels_of(obj.get()), nullptr);
}

}  // namespace

void pod_security_admission(Store& store, AdmissionRequest& r) {
  if (r.operation != AdmissionRequest::Operation::Create && r.operation != AdmissionRequest::Operation::Update) return;
  if (!r.object) return;
  const ResourceType& t = *r.type;
  if (t.group.empty() && t.resource == "namespaces") return validate_namespace(store, r);
  if (t.group.empty() && t.resource == "pods") {
    // ValidatePod: these subresources are not looked at.
    static const std::set<std::string, std::less<>> kIgnored = {"exec", "attach",      "binding", "eviction",
                                                                "log",  "portforward", "proxy",   "status"};
    if (kIgnored.count(r.subresource)) return;
    const Policy p = namespace_policy(store, r.ns);
    if (p.enforce.level == Level::Privileged && p.audit.level == Level::Privileged && p.warn.level == Level::Privileged)
      return;
    if (r.operation == AdmissionRequest::Operation::Update && r.old_object &&
        !significant_pod_update(*r.object, *r.old_object))
      return;
    const json::object* spec = object_at(*r.object, {"spec"});
    return evaluate_pod(r, p, object_at(*r.object, {"metadata"}), spec ? *spec : kEmpty, true);
  }
  // ValidatePodController
  const auto parts = extract_pod_spec(t, *r.object);
  if (!parts || !r.subresource.empty() || (r.options && r.options->scale)) return;
  const Policy p = namespace_policy(store, r.ns);
  if (p.warn.level == Level::Privileged && p.audit.level == Level::Privileged) return;
  if (!parts->meta && !parts->spec) return;
  evaluate_pod(r, p, parts->meta, parts->spec ? *parts->spec : kEmpty, false);
}

}  // namespace gpupool::embedded
