#include "kube/discovery_cache.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <random>

namespace gpupool::kube {

namespace fs = std::filesystem;

std::string DiscoveryCache::server_directory_name(const std::string& server) {
  // computeDiscoverCacheDir: strip the scheme, then replace what `[^(\w/.)]` matches with '_'.
  // '/' (a path in the URL) becomes '_' too, so that every server is one directory.
  std::string s = server;
  for (const char* scheme : {"https://", "http://"})
    if (s.rfind(scheme, 0) == 0) {
      s.erase(0, std::char_traits<char>::length(scheme));
      break;
    }
  for (char& c : s) {
    const bool word = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    if (!word && c != '.' && c != '(' && c != ')') c = '_';
  }
  if (s.empty() || s == "." || s == "..") s = "_";
  return s;
}

DiscoveryCache::DiscoveryCache(const std::string& root, const std::string& server, std::chrono::seconds ttl)
    : dir_((fs::path(root) / "discovery" / server_directory_name(server)).string()), ttl_(ttl) {}

std::optional<std::string> DiscoveryCache::read(const std::string& name) {
  const std::string path = (fs::path(dir_) / name).string();
  {
    std::lock_guard lock(mu_);
    if (invalidated_ && !ours_.count(path)) return std::nullopt;
  }
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  struct stat st {};
  std::optional<std::string> out;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
    const auto modified = std::chrono::system_clock::from_time_t(st.st_mtim.tv_sec);
    if (std::chrono::system_clock::now() <= modified + ttl_) {  // getCachedFile: "cache expired" after the TTL
      std::string body(static_cast<std::size_t>(st.st_size), '\0');
      std::size_t got = 0;
      while (got < body.size()) {
        const ssize_t n = ::read(fd, body.data() + got, body.size() - got);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        got += static_cast<std::size_t>(n);
      }
      if (got == body.size()) out = std::move(body);
    }
  }
  ::close(fd);
  if (out) {
    std::lock_guard lock(mu_);
    fresh_ = fresh_ && ours_.count(path) > 0;
  }
  return out;
}

void DiscoveryCache::write(const std::string& name, std::string_view body) {
  const fs::path path = fs::path(dir_) / name;
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  if (ec) return;
  // Owner-only: the documents name what the cluster serves, which is the user's business.
  ::chmod(dir_.c_str(), 0700);
  thread_local std::mt19937_64 rng{std::random_device{}()};
  const std::string tmp = path.string() + "." + std::to_string(::getpid()) + "." + std::to_string(rng() % 1000000);
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return;
  std::size_t put = 0;
  while (put < body.size()) {
    const ssize_t n = ::write(fd, body.data() + put, body.size() - put);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    put += static_cast<std::size_t>(n);
  }
  const bool ok = ::close(fd) == 0 && put == body.size();
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
    ::unlink(tmp.c_str());
    return;
  }
  std::lock_guard lock(mu_);
  ours_.insert(path.string());
}

void DiscoveryCache::invalidate() {
  std::lock_guard lock(mu_);
  invalidated_ = true;
  ours_.clear();
  fresh_ = true;
}

bool DiscoveryCache::fresh() const {
  std::lock_guard lock(mu_);
  return fresh_;
}

}  // namespace gpupool::kube
