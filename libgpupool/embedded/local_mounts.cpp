#include "embedded/local_mounts.hpp"

#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>

#include <fmt/format.h>

#include "embedded/controllers_util.hpp"
#include "embedded/local_runtime.hpp"

namespace gpupool::embedded {

namespace fs = std::filesystem;
using util::object_at;
using util::string_of;

namespace {

std::string relative(const std::string& path) {
  std::size_t i = 0;
  while (i < path.size() && path[i] == '/') ++i;
  return path.substr(i);
}

std::string joined(const std::string& dir, const std::string& rel) {
  const std::string r = relative(rel);
  return r.empty() ? dir : dir + "/" + r;
}

// One path component safe as a directory name (a server name or a claim cannot climb out).
std::string component(std::string s) {
  for (char& c : s)
    if (c == '/') c = '_';
  if (s.empty() || s == "." || s == "..") s = "_" + s;
  return s;
}

// A path with "." and ".." resolved lexically, so that hostPath "../x" stays under the node's dir.
std::string contained(const std::string& path) {
  std::vector<std::string> parts;
  std::size_t i = 0;
  while (i <= path.size()) {
    const std::size_t j = std::min(path.find('/', i), path.size());
    const std::string part = path.substr(i, j - i);
    if (part == "..") {
      if (!parts.empty()) parts.pop_back();
    } else if (!part.empty() && part != ".") {
      parts.push_back(part);
    }
    i = j + 1;
  }
  std::string out;
  for (const auto& p : parts) out += "/" + p;
  return out;
}

bool path_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-' || c == '/';
}

bool probe_namespace() {
  char tmpl[] = "/tmp/gpupool-mount-probe-XXXXXX";
  if (!::mkdtemp(tmpl)) return false;
  MountPlan plan = plan_mounts({}, tmpl);
  plan.ops.clear();  // only: a namespace, a tmpfs, a chroot
  const pid_t pid = ::fork();
  if (pid == 0) {
    int op = 0;
    ::_exit(enter_mount_plan(plan, &op) == 0 ? 0 : 1);
  }
  int status = 1;
  if (pid > 0)
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
  ::rmdir(tmpl);
  return pid > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

}  // namespace

const char* to_string(MountMethod m) noexcept {
  switch (m) {
    case MountMethod::Namespace:
      return "namespace";
    case MountMethod::Paths:
      return "paths";
    case MountMethod::UserNamespace:
      return "userns";
    default:
      return "auto";
  }
}

MountMethod resolve_mount_method(MountMethod wanted) {
  if (wanted != MountMethod::Auto) return wanted;
  if (const char* e = std::getenv("GPUPOOL_LOCAL_MOUNTS"); e && *e) {
    if (std::string(e) == "namespace") return MountMethod::Namespace;
    if (std::string(e) == "paths") return MountMethod::Paths;
    if (std::string(e) == "userns") return MountMethod::UserNamespace;
  }
  static std::once_flag once;
  static bool works = false;
  std::call_once(once, [] { works = probe_namespace(); });
  return works ? MountMethod::Namespace : MountMethod::Paths;
}

std::vector<std::pair<std::string, std::string>> local_volume_dirs(const json::object& pod, const VolumeSources& in) {
  std::vector<std::pair<std::string, std::string>> out;
  const json::array* vols = util::array_at(pod, {"spec"}, "volumes");
  if (!vols) return out;
  const std::string node = string_of(object_at(pod, {"spec"}), "nodeName");
  for (const auto& v : *vols) {
    if (!v.is_object()) continue;
    const json::object& vo = v.as_object();
    const std::string name = string_of(&vo, "name");
    std::string dir;
    if (const json::object* hp = object_at(vo, {"hostPath"}))
      dir = joined(fmt::format("{}/nodes/{}", in.root, component(node)), contained(string_of(hp, "path")));
    else if (const json::object* pvc = object_at(vo, {"persistentVolumeClaim"}))
      dir = fmt::format("{}/volumes/{}/{}", in.root, component(util::namespace_of(pod)),
                        component(string_of(pvc, "claimName")));
    else if (const json::object* nfs = object_at(vo, {"nfs"}))
      dir = joined(fmt::format("{}/nfs/{}", in.root, component(string_of(nfs, "server"))),
                   contained(string_of(nfs, "path")));
    else
      dir = fmt::format("{}/volumes/{}", in.pod_dir, component(name));
    fs::create_directories(dir);
    for (const auto& [vol, files] : in.files) {
      if (vol != name) continue;
      for (const auto& f : files) {
        const std::string path = joined(dir, contained(f.path));
        fs::create_directories(fs::path(path).parent_path());
        std::ofstream(path, std::ios::binary | std::ios::trunc) << f.bytes;
        ::chmod(path.c_str(), f.mode & 07777);
      }
    }
    out.emplace_back(name, dir);
  }
  return out;
}

std::vector<LocalMount> local_mounts(const json::object& container,
                                     const std::vector<std::pair<std::string, std::string>>& volume_dirs,
                                     const std::vector<std::string>& env) {
  std::vector<LocalMount> out;
  const json::value* vm = container.if_contains("volumeMounts");
  if (!vm || !vm->is_array()) return out;
  for (const auto& m : vm->as_array()) {
    if (!m.is_object()) continue;
    const json::object& mo = m.as_object();
    const std::string name = string_of(&mo, "name");
    auto it = std::find_if(volume_dirs.begin(), volume_dirs.end(), [&](const auto& p) { return p.first == name; });
    if (it == volume_dirs.end()) continue;  // validation refuses this; nothing to mount
    std::string sub = string_of(&mo, "subPath");
    if (sub.empty()) sub = expand_env_refs(string_of(&mo, "subPathExpr"), env);
    LocalMount lm;
    lm.source = joined(it->second, contained(sub));
    lm.target = contained(string_of(&mo, "mountPath"));
    const json::value* ro = mo.if_contains("readOnly");
    lm.read_only = ro && ro->is_bool() && ro->as_bool();
    if (lm.target.empty()) continue;
    fs::create_directories(lm.source);
    out.push_back(std::move(lm));
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const LocalMount& a, const LocalMount& b) { return a.target < b.target; });
  return out;
}

std::string rewrite_mount_paths(const std::string& text, const std::vector<LocalMount>& mounts) {
  std::vector<const LocalMount*> longest;
  for (const auto& m : mounts) longest.push_back(&m);
  std::stable_sort(longest.begin(), longest.end(),
                   [](const LocalMount* a, const LocalMount* b) { return a->target.size() > b->target.size(); });
  std::string out;
  for (std::size_t i = 0; i < text.size();) {
    bool replaced = false;
    if (text[i] == '/' && (i == 0 || !path_char(text[i - 1])))
      for (const LocalMount* m : longest) {
        const std::string& t = m->target;
        const std::size_t end = i + t.size();
        if (text.compare(i, t.size(), t) != 0) continue;
        if (end < text.size() && text[end] != '/' && path_char(text[end])) continue;
        out += m->source;
        i = end;
        replaced = true;
        break;
      }
    if (!replaced) out += text[i++];
  }
  return out;
}

MountPlan plan_mounts(const std::vector<LocalMount>& requested, const std::string& root, bool user_namespace) {
  // Each mountPath with the symlinks of this machine resolved (/var/run -> /run: where every
  // pod's service account token goes), as a container runtime resolves a mount's destination in
  // the root filesystem: the new root mirrors this machine's, so a target below a symlink would
  // otherwise be made through the symlink, in this machine's own directory, and mounted there.
  std::vector<LocalMount> mounts = requested;
  for (auto& m : mounts) {
    std::error_code ec;
    const fs::path resolved = fs::weakly_canonical(m.target, ec);
    if (!ec && resolved.is_absolute()) m.target = resolved.string();
  }
  MountPlan plan;
  plan.root = root;
  plan.user_namespace = user_namespace;
  plan.uid_map = fmt::format("{0} {0} 1\n", ::geteuid());  // written only when a user namespace is needed
  plan.gid_map = fmt::format("{0} {0} 1\n", ::getegid());
  // Directories that must be mirrored (a tmpfs directory whose entries are bound one by one)
  // because a mountPath lies below them; and the mountPaths themselves (fresh directories).
  std::set<std::string> through, targets;
  for (const auto& m : mounts) {
    targets.insert(m.target);
    for (std::size_t p = m.target.find('/', 1); p != std::string::npos; p = m.target.find('/', p + 1))
      through.insert(m.target.substr(0, p));
  }
  std::set<std::string> made;
  auto mirror = [&](auto&& self, const std::string& host) -> void {
    std::error_code ec;
    for (fs::directory_iterator it(host.empty() ? "/" : host, ec), end; !ec && it != end; it.increment(ec)) {
      const std::string abs = host + "/" + it->path().filename().string();
      if (abs == root || targets.count(abs)) continue;
      const std::string at = root + abs;
      std::error_code e2;
      const auto st = fs::symlink_status(abs, e2);
      if (e2) continue;
      if (fs::is_symlink(st)) {
        plan.ops.push_back({MountPlan::Op::Symlink, fs::read_symlink(abs, e2).string(), at});
      } else if (fs::is_directory(st)) {
        plan.ops.push_back({MountPlan::Op::Dir, "", at});
        made.insert(abs);
        if (through.count(abs))
          self(self, abs);
        else
          plan.ops.push_back({MountPlan::Op::RBind, abs, at});
      } else {
        plan.ops.push_back({MountPlan::Op::File, "", at});
        plan.ops.push_back({MountPlan::Op::Bind, abs, at});
      }
    }
  };
  mirror(mirror, "");
  for (const auto& m : mounts) {
    for (std::size_t p = m.target.find('/', 1);; p = m.target.find('/', p + 1)) {
      const std::string dir = m.target.substr(0, p);
      if (made.insert(dir).second) plan.ops.push_back({MountPlan::Op::Dir, "", root + dir});
      if (p == std::string::npos) break;
    }
    MountPlan::Op bind{MountPlan::Op::Bind, m.source, root + m.target};
    if (m.read_only) {
      // A read-only remount must keep the flags the kernel locked on the source's mount.
      bind.flags = MS_RDONLY;
      struct statvfs sv {};
      if (::statvfs(m.source.c_str(), &sv) == 0) {
        if (sv.f_flag & ST_NOSUID) bind.flags |= MS_NOSUID;
        if (sv.f_flag & ST_NODEV) bind.flags |= MS_NODEV;
        if (sv.f_flag & ST_NOEXEC) bind.flags |= MS_NOEXEC;
      }
    }
    plan.ops.push_back(std::move(bind));
  }
  return plan;
}

namespace {

bool write_file(const char* path, std::string_view text) {
  const int fd = ::open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  return ok;
}

}  // namespace

int enter_mount_plan(const MountPlan& plan, int* failed_op) noexcept {
  *failed_op = -1;
  // A mount namespace of our own; without CAP_SYS_ADMIN, inside a user namespace that maps only
  // this process's uid and gid (user_namespaces(7)).
  if (plan.user_namespace || ::unshare(CLONE_NEWNS) != 0) {
    if (::unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) return errno;
    if (!write_file("/proc/self/setgroups", "deny\n") && errno != ENOENT) return errno;
    if (!write_file("/proc/self/uid_map", plan.uid_map)) return errno;
    if (!write_file("/proc/self/gid_map", plan.gid_map)) return errno;
  }
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) return errno;
  if (::mount("tmpfs", plan.root.c_str(), "tmpfs", 0, "mode=0755") != 0) return errno;
  for (std::size_t i = 0; i < plan.ops.size(); ++i) {
    const auto& op = plan.ops[i];
    int r = 0;
    switch (op.kind) {
      case MountPlan::Op::Dir:
        r = ::mkdir(op.target.c_str(), 0755);
        if (r != 0 && errno == EEXIST) r = 0;
        break;
      case MountPlan::Op::File: {
        const int fd = ::open(op.target.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
        r = fd < 0 ? -1 : ::close(fd);
        break;
      }
      case MountPlan::Op::Symlink:
        r = ::symlink(op.source.c_str(), op.target.c_str());
        break;
      case MountPlan::Op::RBind:
        r = ::mount(op.source.c_str(), op.target.c_str(), nullptr, MS_BIND | MS_REC, nullptr);
        if (r != 0 && (errno == EPERM || errno == EACCES || errno == EINVAL))
          r = 0;  // a part of this machine the namespace may not see (it stays an empty directory)
        break;
      case MountPlan::Op::Bind:
        r = ::mount(op.source.c_str(), op.target.c_str(), nullptr, MS_BIND, nullptr);
        if (r == 0 && op.flags)
          r = ::mount(nullptr, op.target.c_str(), nullptr, MS_REMOUNT | MS_BIND | op.flags, nullptr);
        break;
    }
    if (r != 0) {
      *failed_op = static_cast<int>(i);
      return errno;
    }
  }
  if (::chroot(plan.root.c_str()) != 0) return errno;
  if (::chdir("/") != 0) return errno;
  // The recursive binds copied the new root's own tmpfs where it sits on this machine: detach
  // that copy, so a walk of the tree does not loop.
  ::umount2(plan.root.c_str(), MNT_DETACH);
  return 0;
}

}  // namespace gpupool::embedded
