#include "gpupool/profile.hpp"

#include "common/builtin_data.hpp"
#include "common/strict_yaml.hpp"
#include "gpupool/error.hpp"
#include "gpupool/names.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <fstream>
#include <functional>
#include <set>
#include <sstream>

namespace gpupool {

namespace {

// The strict reader shared with the topology reader (common/strict_yaml.hpp).
using Reader = detail::StrictYamlReader;

void absolute(const Reader& r, const YAML::Node& node, const std::string& path, const std::string& value) {
  if (value.empty() || value.front() != '/') r.fail(node, path, fmt::format("\"{}\" must be an absolute path", value));
}

using Fields = Reader::Fields;

NfsMount read_nfs_mount(const Reader& r, const YAML::Node& node, const std::string& path) {
  NfsMount m;
  r.mapping(node, path,
            {{"sub_path",
              [&](const YAML::Node& n, const std::string& at) {
                m.sub_path = r.string(n, at);
                if (!m.sub_path.empty() && m.sub_path.front() == '/')
                  r.fail(n, at, "must be relative to the export path");
              }},
             {"mount_path", [&](const YAML::Node& n, const std::string& at) {
                m.mount_path = r.string(n, at);
                absolute(r, n, at, m.mount_path);
              }}});
  if (m.mount_path.empty()) r.fail(node, path + ".mount_path", "Required value");
  return m;
}

Profile parse_node(const YAML::Node& root, const std::string& file) {
  Reader r(file);
  Profile p;
  auto s = [&](std::string& out) {
    return [&r, &out](const YAML::Node& n, const std::string& at) { out = r.string(n, at); };
  };
  Fields fields{
      {"name",
       [&](const YAML::Node& n, const std::string& at) {
         p.name = r.string(n, at);
         r.check(n, at, [&] { validate_dns1123_label(p.name, at); });
       }},
      {"description", s(p.description)},
      {"namespace",
       [&](const YAML::Node& n, const std::string& at) {
         p.default_namespace = r.string(n, at);
         r.check(n, at, [&] { validate_dns1123_label(p.default_namespace, at); });
       }},
      {"queue",
       [&](const YAML::Node& n, const std::string& at) {
         p.default_queue = r.string(n, at);
         r.check(n, at, [&] { validate_dns1123_subdomain(p.default_queue, at); });
       }},
      {"registry",
       [&](const YAML::Node& n, const std::string& at) {
         p.catalog.prefix = r.string(n, at);
         while (!p.catalog.prefix.empty() && p.catalog.prefix.back() == '/') p.catalog.prefix.pop_back();
         r.check(n, at, [&] { (void)ImageRef::parse(p.catalog.prefix + "/probe", at); });
       }},
      {"images",
       [&](const YAML::Node& n, const std::string& at) {
         r.sequence(n, at, [&](const YAML::Node& item, const std::string& item_at) {
           CatalogImage img;
           r.mapping(item, item_at,
                     {{"name", [&](const YAML::Node& v, const std::string& a) { img.name = r.string(v, a); }},
                      {"tags", [&](const YAML::Node& v, const std::string& a) { img.tags = r.strings(v, a); }},
                      {"gpu", [&](const YAML::Node& v, const std::string& a) { img.gpu = r.boolean(v, a); }},
                      {"cuda", [&](const YAML::Node& v, const std::string& a) { img.cuda = r.string(v, a); }},
                      {"framework", [&](const YAML::Node& v, const std::string& a) { img.framework = r.string(v, a); }},
                      {"notes", [&](const YAML::Node& v, const std::string& a) { img.notes = r.string(v, a); }}});
           if (img.name.empty()) r.fail(item, item_at + ".name", "Required value: the image's repository name");
           if (p.catalog.find(img.name))
             r.fail(item, item_at + ".name", fmt::format("duplicate image \"{}\"", img.name));
           // Each tag must make a valid reference (the tag grammar).
           for (std::size_t i = 0; i < img.tags.size(); ++i)
             r.check(item["tags"][i], fmt::format("{}.tags[{}]", item_at, i),
                     [&] { (void)ImageRef::parse(img.name + ":" + img.tags[i], item_at); });
           r.check(item, item_at + ".name", [&] { (void)ImageRef::parse(img.name, item_at); });
           p.catalog.images.push_back(std::move(img));
         });
       }},
      {"storage_classes",
       [&](const YAML::Node& n, const std::string& at) {
         if (!n.IsMap()) r.fail(n, at, "must be a mapping of alias: StorageClass name");
         for (const auto& kv : n) {
           std::string key = at + "." + kv.first.Scalar();
           std::string cls = r.string(kv.second, key);
           r.check(kv.second, key, [&] { validate_dns1123_subdomain(cls, key); });
           p.storage_classes[kv.first.Scalar()] = cls;
         }
       }},
      {"nfs",
       [&](const YAML::Node& n, const std::string& at) {
         NfsShare share;
         r.mapping(
             n, at,
             {{"server", [&](const YAML::Node& v, const std::string& a) { share.server = r.string(v, a); }},
              {"path",
               [&](const YAML::Node& v, const std::string& a) {
                 share.path = r.string(v, a);
                 absolute(r, v, a, share.path);
               }},
              {"datasets",
               [&](const YAML::Node& v, const std::string& a) { share.datasets = read_nfs_mount(r, v, a); }},
              {"home", [&](const YAML::Node& v, const std::string& a) { share.home = read_nfs_mount(r, v, a); }}});
         if (share.server.empty()) r.fail(n, at + ".server", "Required value: the NFS server's host name or IP");
         if (share.path.empty()) r.fail(n, at + ".path", "Required value: the absolute export path");
         p.nfs = std::move(share);
       }},
      {"local_ssds",
       [&](const YAML::Node& n, const std::string& at) {
         r.sequence(n, at, [&](const YAML::Node& item, const std::string& item_at) {
           LocalSsd ssd;
           r.mapping(item, item_at,
                     {{"host_path",
                       [&](const YAML::Node& v, const std::string& a) {
                         ssd.host_path = r.string(v, a);
                         absolute(r, v, a, ssd.host_path);
                       }},
                      {"mount_path", [&](const YAML::Node& v, const std::string& a) {
                         ssd.mount_path = r.string(v, a);
                         absolute(r, v, a, ssd.mount_path);
                       }}});
           if (ssd.host_path.empty() || ssd.mount_path.empty())
             r.fail(item, item_at, "needs both host_path and mount_path");
           p.local_ssds.push_back(std::move(ssd));
         });
       }},
      {"gpu",
       [&](const YAML::Node& n, const std::string& at) {
         r.mapping(n, at,
                   {{"resource",
                     [&](const YAML::Node& v, const std::string& a) {
                       p.gpu.resource = r.string(v, a);
                       r.check(v, a, [&] { validate_qualified_name(p.gpu.resource, a); });
                     }},
                    {"scheduler_name",
                     [&](const YAML::Node& v, const std::string& a) {
                       p.gpu.scheduler_name = r.string(v, a);
                       r.check(v, a, [&] { validate_dns1123_subdomain(p.gpu.scheduler_name, a); });
                     }},
                    {"runtime_class",
                     [&](const YAML::Node& v, const std::string& a) {
                       p.gpu.runtime_class = r.string(v, a);
                       r.check(v, a, [&] { validate_dns1123_subdomain(p.gpu.runtime_class, a); });
                     }},
                    {"env", [&](const YAML::Node& v, const std::string& a) {
                       r.sequence(v, a, [&](const YAML::Node& item, const std::string& item_at) {
                         EnvVar e;
                         bool has_value = false;
                         r.mapping(
                             item, item_at,
                             {{"name", [&](const YAML::Node& x, const std::string& xa) { e.name = r.string(x, xa); }},
                              {"value",
                               [&](const YAML::Node& x, const std::string& xa) {
                                 e.value = r.string(x, xa);
                                 has_value = true;
                               }},
                              {"field_path",
                               [&](const YAML::Node& x, const std::string& xa) { e.field_path = r.string(x, xa); }}});
                         if (e.name.empty()) r.fail(item, item_at + ".name", "Required value");
                         if (has_value == !e.field_path.empty())
                           r.fail(item, item_at, "give exactly one of value and field_path");
                         p.gpu.env.push_back(std::move(e));
                       });
                     }}});
       }},
      {"pod",
       [&](const YAML::Node& n, const std::string& at) {
         r.mapping(
             n, at,
             {{"host_network", [&](const YAML::Node& v, const std::string& a) { p.host_network = r.boolean(v, a); }},
              {"host_ipc", [&](const YAML::Node& v, const std::string& a) { p.host_ipc = r.boolean(v, a); }},
              {"limits_from_requests",
               [&](const YAML::Node& v, const std::string& a) { p.limits_from_requests = r.boolean(v, a); }},
              {"image_pull_policy", [&](const YAML::Node& v, const std::string& a) {
                 p.image_pull_policy = r.string(v, a);
                 if (p.image_pull_policy != "Always" && p.image_pull_policy != "IfNotPresent" &&
                     p.image_pull_policy != "Never")
                   r.fail(v, a, "supported values: \"Always\", \"IfNotPresent\", \"Never\"");
               }}});
       }},
      {"tensorboard",
       [&](const YAML::Node& n, const std::string& at) {
         r.mapping(n, at, {{"image", [&](const YAML::Node& v, const std::string& a) {
                              p.tensorboard_image = r.string(v, a);
                              r.check(v, a, [&] { (void)ImageRef::parse(p.tensorboard_image, a); });
                            }}});
       }},
  };
  if (!root.IsDefined() || root.IsNull())
    throw ConfigError(file, "", "the profile is empty; it needs at least `name:`");
  r.mapping(root, "", fields);
  if (p.name.empty()) r.fail(root, "name", "Required value: the profile's name");
  return p;
}

}  // namespace

Profile Profile::parse(std::string_view text, std::string_view filename) {
  const Reader reader{std::string(filename)};
  return reader.read_with_lines(text, [&](const YAML::Node& root) { return parse_node(root, std::string(filename)); });
}

Profile Profile::load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError(path, "", "cannot read the profile file; check the path and its permissions");
  std::ostringstream text;
  text << in.rdbuf();
  return parse(text.str(), path);
}

std::vector<std::string> Profile::builtin_names() { return detail::builtin_data_names("profiles"); }

Profile Profile::resolve(const std::string& spec) {
  if (spec.empty()) return builtin("generic");
  bool looks_like_path = spec.find('/') != std::string::npos || spec.ends_with(".yaml") || spec.ends_with(".yml");
  return looks_like_path ? load(spec) : builtin(spec);
}

Profile Profile::builtin(std::string_view name) {
  std::string path = fmt::format("profiles/{}.yaml", name);
  std::string_view text = detail::builtin_data(path);
  if (text.empty())
    throw ConfigError(
        std::string(name), "",
        fmt::format("no built-in profile of this name; built-in profiles: {}", fmt::join(builtin_names(), ", ")));
  return parse(text, "builtin:" + path);
}

std::string Profile::storage_class(std::string_view alias_or_name) const {
  auto it = storage_classes.find(std::string(alias_or_name));
  return it == storage_classes.end() ? std::string(alias_or_name) : it->second;
}

}  // namespace gpupool
