// Reading a tz database file as Go's time package does on Linux (src/time/zoneinfo_read.go
// loadTzinfoFromDirOrZip and readFile, src/time/sys_unix.go open/read, and loadLocation's rule
// that only ENOENT means "unknown time zone").
#include "common/time_zone_file.hpp"

#include "gpupool/error.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>

namespace gpupool {

namespace {

// Go's syscall.Errno.Error() on linux/amd64 (zerrors_linux_amd64.go) for the errors an open or a
// read of a zone file can meet; Go prints "errno N" for a number its table lacks.
std::string go_errno_text(int e) {
  switch (e) {
    case EACCES:
      return "permission denied";
    case EISDIR:
      return "is a directory";
    case ENOTDIR:
      return "not a directory";
    case ENAMETOOLONG:
      return "file name too long";
    case ELOOP:
      return "too many levels of symbolic links";
    case EINVAL:
      return "invalid argument";
    case EMFILE:
      return "too many open files";
    case ENFILE:
      return "too many open files in system";
    case EIO:
      return "input/output error";
    case ENOMEM:
      return "cannot allocate memory";
    case ENXIO:
      return "no such device or address";
    case ENODEV:
      return "no such device";
    case EPERM:
      return "operation not permitted";
    case EOVERFLOW:
      return "value too large for defined data type";
    case EFAULT:
      return "bad address";
    case EBUSY:
      return "device or resource busy";
    case EAGAIN:
      return "resource temporarily unavailable";
    case EINTR:
      return "interrupted system call";
    default:
      return "errno " + std::to_string(e);
  }
}

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

}  // namespace

std::string read_time_zone_file(std::string_view name, const std::string& zoneinfo_dir) {
  auto fail = [&](std::string rule) { return ValidationError("time zone", std::string(name), std::move(rule)); };
  // loadTzinfoFromDirOrZip: dir + "/" + name (the name as given).
  std::string path = zoneinfo_dir.empty() ? std::string(name) : zoneinfo_dir + "/" + std::string(name);
  // syscall.Open refuses a path with a NUL byte (ByteSliceFromString: EINVAL).
  if (path.find('\0') != std::string::npos) throw fail(go_errno_text(EINVAL));
  int fd;
  do {
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) {
    const int e = errno;
    // loadLocation: only ENOENT lets Go go on to its next source, and after the last one it is
    // errors.New("unknown time zone " + name); any other error is returned as it is.
    if (e == ENOENT) throw fail("unknown time zone " + std::string(name));
    throw fail(go_errno_text(e));
  }
  Fd file(fd);
  // readFile: 4096-byte reads until EOF or an error; more than maxFileSize (10 << 20) is
  // fileSizeError(name), "time: file <name> is too large".
  constexpr std::size_t kMaxFileSize = 10 << 20;
  std::string bytes;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(file.get(), buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int e = errno;
      if (e == ENOENT) throw fail("unknown time zone " + std::string(name));
      throw fail(go_errno_text(e));
    }
    if (n == 0) break;
    bytes.append(buf, static_cast<std::size_t>(n));
    if (bytes.size() > kMaxFileSize) throw fail("time: file " + path + " is too large");
  }
  return bytes;
}

}  // namespace gpupool
