#include "embedded/journal.hpp"
#include "common/json_depth.hpp"
#include "embedded/crd_schema.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "gpupool/error.hpp"

namespace gpupool::embedded {

namespace fs = std::filesystem;

namespace {

constexpr const char* kResetHint = "run `gpupool cluster reset` to start afresh (its objects are lost)";

std::string errno_text() { return std::strerror(errno); }

void write_all(int fd, const std::string& data, const std::string& path) {
  const char* p = data.data();
  std::size_t left = data.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw ConfigError(path, "", "cannot write the embedded cluster's state: " + errno_text());
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
}

void fsync_dir(const std::string& file) {
  const std::string dir = fs::path(file).parent_path().empty() ? "." : fs::path(file).parent_path().string();
  int d = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (d < 0) return;
  ::fsync(d);
  ::close(d);
}

std::string str(const json::object& o, const char* key) {
  const auto* v = o.if_contains(key);
  return v && v->is_string() ? std::string(v->as_string()) : std::string();
}

bool is_crd(std::string_view g, std::string_view r) {
  return g == "apiextensions.k8s.io" && r == "customresourcedefinitions";
}

// A record or snapshot entry of a shipped CRD left as shipped holds no spec, but its key
// (crd::shipped_key): the state stays small. pack() writes that form, unpack() reads it.
void pack(json::object& entry) {
  auto* obj = entry.if_contains("object");
  if (!obj || !obj->is_object() || !is_crd(str(entry, "group"), str(entry, "resource"))) return;
  if (const std::string key = crd::shipped_key(obj->as_object()); !key.empty()) {
    obj->as_object().erase("spec");
    entry["shipped"] = key;
  }
}
void unpack(json::object& entry) {
  const std::string key = str(entry, "shipped");
  auto* obj = entry.if_contains("object");
  if (key.empty() || !obj || !obj->is_object()) return;
  if (const json::object* spec = crd::shipped_spec(key)) obj->as_object()["spec"] = *spec;
  entry.erase("shipped");
}

/// The objects of a snapshot by (group, resource, namespace, name), to replay a journal onto.
struct Replay {
  std::uint64_t base = 0;      // the snapshot's revision: records up to it are in the snapshot
  std::uint64_t revision = 0;  // the newest record applied
  std::map<std::tuple<std::string, std::string, std::string, std::string>, json::object> objects;

  static std::tuple<std::string, std::string, std::string, std::string> key(const std::string& g, const std::string& r,
                                                                            const json::object& obj) {
    const auto* md = obj.if_contains("metadata");
    const json::object empty;
    const auto& m = md && md->is_object() ? md->as_object() : empty;
    return {g, r, str(m, "namespace"), str(m, "name")};
  }

  void apply_journal(const std::string& path) {
    if (!fs::exists(path)) return;
    const std::string text = read_file(path);
    std::size_t pos = 0;
    int line = 0;
    while (pos < text.size()) {
      ++line;
      const std::size_t nl = text.find('\n', pos);
      if (nl == std::string::npos) break;  // torn tail: the write never returned to its client
      boost::system::error_code ec;
      json::value v = json::parse(std::string_view(text).substr(pos, nl - pos), ec, {}, deep_json());
      pos = nl + 1;
      if (ec || !v.is_object() || !v.as_object().contains("rv"))
        throw ConfigError(path, "", fmt::format("the embedded cluster's journal is corrupt; {}", kResetHint), line);
      auto& rec = v.as_object();
      unpack(rec);
      const auto rv = rec.at("rv").to_number<std::uint64_t>();
      if (rv <= base) continue;  // the snapshot already holds it
      revision = std::max(revision, rv);
      const std::string g = str(rec, "group"), r = str(rec, "resource"), op = str(rec, "op");
      const auto* obj = rec.if_contains("object");
      if (!obj || !obj->is_object())
        throw ConfigError(path, "", fmt::format("the embedded cluster's journal is corrupt; {}", kResetHint), line);
      auto k = key(g, r, obj->as_object());
      if (op == "delete") {
        objects.erase(k);
        // A CRD's objects go with it (Store::unregister_type drops them without events).
        if (g == "apiextensions.k8s.io" && r == "customresourcedefinitions") {
          const auto* spec = obj->as_object().if_contains("spec");
          if (spec && spec->is_object()) {
            const std::string cg = str(spec->as_object(), "group");
            const auto* names = spec->as_object().if_contains("names");
            const std::string plural = names && names->is_object() ? str(names->as_object(), "plural") : "";
            std::erase_if(objects,
                          [&](const auto& e) { return std::get<0>(e.first) == cg && std::get<1>(e.first) == plural; });
          }
        }
      } else {
        objects[k] = obj->as_object();
      }
    }
  }

  json::object to_snapshot() const {
    json::array arr;
    arr.reserve(objects.size());
    for (const auto& [k, o] : objects)
      arr.push_back(json::object{{"group", std::get<0>(k)}, {"resource", std::get<1>(k)}, {"object", o}});
    return json::object{{"revision", revision}, {"objects", std::move(arr)}};
  }
};

}  // namespace

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_file_durably(const std::string& path, const std::string& text) {
  std::ostringstream tid;
  tid << std::this_thread::get_id();
  const std::string tmp = fmt::format("{}.tmp.{}.{}", path, ::getpid(), tid.str());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) throw ConfigError(path, "", "cannot write the embedded cluster's state: " + errno_text());
  try {
    ::fchmod(fd, 0600);
    write_all(fd, text, tmp);
    if (::fsync(fd) != 0) throw ConfigError(tmp, "", "cannot write the embedded cluster's state: " + errno_text());
  } catch (...) {
    ::close(fd);
    ::unlink(tmp.c_str());
    throw;
  }
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = errno_text();
    ::unlink(tmp.c_str());
    throw ConfigError(path, "", "cannot save the embedded cluster's state: " + why);
  }
  fsync_dir(path);
}

json::object load_state(const std::string& snapshot_path) {
  const std::string log = snapshot_path + ".log", old = log + ".old";
  const bool has_snapshot = fs::exists(snapshot_path);
  if (!has_snapshot && !fs::exists(log) && !fs::exists(old)) return {};
  Replay replay;
  if (has_snapshot) {
    boost::system::error_code ec;
    json::value snap = json::parse(read_file(snapshot_path), ec, {}, deep_json());
    const json::object* o = !ec && snap.is_object() ? &snap.as_object() : nullptr;
    const auto* objects = o ? o->if_contains("objects") : nullptr;
    const auto* revision = o ? o->if_contains("revision") : nullptr;
    if (!objects || !objects->is_array() || !revision || !revision->is_number())
      throw ConfigError(snapshot_path, "",
                        fmt::format("not a gpupool state file (truncated or corrupt); {}", kResetHint));
    replay.base = replay.revision = revision->to_number<std::uint64_t>();
    for (auto& e : snap.as_object()["objects"].as_array()) {
      if (e.is_object()) unpack(e.as_object());
      const auto* entry = e.if_object();
      const auto* obj = entry ? entry->if_contains("object") : nullptr;
      if (!obj || !obj->is_object())
        throw ConfigError(snapshot_path, "",
                          fmt::format("not a gpupool state file (an entry has no object); {}", kResetHint));
      const std::string g = str(*entry, "group"), r = str(*entry, "resource");
      replay.objects[Replay::key(g, r, obj->as_object())] = obj->as_object();
    }
  }
  replay.apply_journal(old);
  replay.apply_journal(log);
  return replay.to_snapshot();
}

FileJournal::FileJournal(std::string snapshot_path)
    : snapshot_path_(std::move(snapshot_path)), log_path_(snapshot_path_ + ".log") {
  open_log();
}

FileJournal::~FileJournal() {
  if (fd_ >= 0) ::close(fd_);
}

void FileJournal::open_log() {
  fd_ = ::open(log_path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd_ < 0) throw ConfigError(log_path_, "", "cannot open the embedded cluster's journal: " + errno_text());
  ::fchmod(fd_, 0600);
  struct stat st {};
  size_ = ::fstat(fd_, &st) == 0 ? static_cast<std::uint64_t>(st.st_size) : 0;
  // A torn last line (a crash mid-write: that write was never acknowledged) is cut off, so the
  // next record starts on a line of its own.
  if (size_ > 0) {
    int rfd = ::open(log_path_.c_str(), O_RDONLY | O_CLOEXEC);
    if (rfd < 0) throw ConfigError(log_path_, "", "cannot read the embedded cluster's journal: " + errno_text());
    std::uint64_t end = size_;  // the length of the whole lines
    char buf[4096];
    bool found = false;
    while (end > 0 && !found) {
      const std::uint64_t from = end > sizeof buf ? end - sizeof buf : 0;
      const ssize_t n = ::pread(rfd, buf, static_cast<std::size_t>(end - from), static_cast<off_t>(from));
      if (n <= 0) break;
      for (ssize_t i = n; i > 0; --i)
        if (buf[i - 1] == '\n') {
          end = from + static_cast<std::uint64_t>(i);
          found = true;
          break;
        }
      if (!found) end = from;
    }
    ::close(rfd);
    if (end != size_) {
      if (::ftruncate(fd_, static_cast<off_t>(end)) != 0)
        throw ConfigError(log_path_, "", "cannot repair the embedded cluster's journal: " + errno_text());
      ::fsync(fd_);
      size_ = end;
    }
  }
  fsync_dir(log_path_);
}

void FileJournal::record(const WatchEvent& e) {
  std::lock_guard lk(queue_mu_);
  queue_.push_back(Pending{e.type, e.type_info, e.object, e.resource_version});
}

void FileJournal::sync() {
  std::lock_guard fl(file_mu_);
  std::vector<Pending> batch;
  {
    std::lock_guard ql(queue_mu_);
    batch.swap(queue_);
  }
  // Empty: whatever an earlier sync took was written and fsync'ed before it let go of file_mu_.
  if (batch.empty()) return;
  std::string out;
  for (const auto& p : batch) {
    json::object rec{{"rv", p.rv},
                     {"op", p.type == EventType::Deleted ? "delete" : "put"},
                     {"group", p.rt->group},
                     {"resource", p.rt->resource},
                     {"object", *p.object}};
    pack(rec);
    out += json::serialize(rec);
    out += '\n';
  }
  write_all(fd_, out, log_path_);
  if (::fdatasync(fd_) != 0)
    throw ConfigError(log_path_, "", "cannot sync the embedded cluster's journal: " + errno_text());
  size_ += out.size();
}

std::uint64_t FileJournal::size() const {
  std::lock_guard fl(file_mu_);
  return size_;
}

void FileJournal::compact(const std::function<json::object()>& take) {
  const std::string old = log_path_ + ".old";
  {
    std::lock_guard fl(file_mu_);
    if (fs::exists(old)) return;  // an earlier compaction did not finish: load_state folds it in
    ::close(fd_);
    fd_ = -1;
    if (::rename(log_path_.c_str(), old.c_str()) != 0) {
      open_log();
      throw ConfigError(log_path_, "", "cannot compact the embedded cluster's journal: " + errno_text());
    }
    open_log();  // also fsyncs the directory: the rename is durable
  }
  sync();  // what was queued before the set-aside goes to the new journal (replay skips it if old)
  json::object snap = take();
  if (auto* objects = snap.if_contains("objects"); objects && objects->is_array())
    for (auto& e : objects->as_array())
      if (e.is_object()) pack(e.as_object());
  write_file_durably(snapshot_path_, json::serialize(snap));
  ::unlink(old.c_str());
  fsync_dir(old);
}

}  // namespace gpupool::embedded
