// A gpupool::StreamHandler for tests: exec runs the argv as a local child process (with the
// request's descriptors as its stdin/stdout/stderr); port-forward connects to a 127.0.0.1 echo
// server and refuses other ports. Shared by the tests of the embedded
// server, the facade, the command and the Python package.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <list>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "gpupool/embedded.hpp"
#include "gpupool/error.hpp"

namespace gpupool::testing {

/// Echoes each connection's bytes back until the peer half-closes; then closes.
class EchoServer {
 public:
  EchoServer() {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a);
    ::listen(fd_, 16);
    socklen_t len = sizeof a;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] {
      for (;;) {
        const int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
        if (c < 0) return;
        ++accepted_;  // before any byte is echoed
        std::lock_guard lk(mu_);
        conns_.emplace_back([c] {
          char buf[4096];
          ssize_t n;
          while ((n = ::read(c, buf, sizeof buf)) > 0)
            if (::send(c, buf, static_cast<std::size_t>(n), MSG_NOSIGNAL) != n) break;
          ::close(c);
        });
      }
    });
  }
  ~EchoServer() {
    ::shutdown(fd_, SHUT_RDWR);
    thread_.join();
    ::close(fd_);
    std::lock_guard lk(mu_);
    for (auto& t : conns_) t.join();
  }
  int port() const { return port_; }
  int accepted() const { return accepted_; }

 private:
  int fd_ = -1, port_ = 0;
  std::atomic<int> accepted_{0};
  std::thread thread_;
  std::mutex mu_;
  std::list<std::thread> conns_;
};

class LocalStreamHandler : public StreamHandler {
 public:
  explicit LocalStreamHandler(int echo_port) : echo_port_(echo_port) {}

  int exec(const ExecRequest& r) override {
    // The library's local exec (in this process's directory and environment).
    bool hung_up = false;
    struct Counted {
      LocalStreamHandler& h;
      bool& hung_up;
      ~Counted() {
        if (!hung_up) return;
        std::lock_guard lk(h.hangup_mu_);
        ++h.hangups;
        h.hangup_cv_.notify_all();
      }
    } counted{*this, hung_up};
    const int code = run_exec_locally(r, ".", {}, &hung_up);
    ++execs;
    return code;
  }

  /// Waits (at most 30 s) until `n` commands were stopped because their client went away.
  bool wait_for_hangups(int n) {
    std::unique_lock lk(hangup_mu_);
    return hangup_cv_.wait_for(lk, std::chrono::seconds(30), [&] { return hangups >= n; });
  }
  int hangups = 0;

  int port_forward(const PodTarget&, int port) override {
    if (port != 80 && port != 6006)
      throw Error("dial tcp4 127.0.0.1:" + std::to_string(port) + ": connect: connection refused");
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<std::uint16_t>(echo_port_));
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
      ::close(fd);
      throw Error("cannot reach the echo server");
    }
    ++forwards;
    return fd;
  }

  std::atomic<int> execs{0}, forwards{0};

 private:
  int echo_port_;
  std::mutex hangup_mu_;
  std::condition_variable hangup_cv_;
};

/// Sends `message` to 127.0.0.1:port, half-closes, and returns everything read back.
inline std::string echo_through(int port, const std::string& message) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  std::string got;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      ::send(fd, message.data(), message.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(message.size())) {
    ::shutdown(fd, SHUT_WR);
    char buf[4096];
    ssize_t n;
    while ((n = ::read(fd, buf, sizeof buf)) > 0) got.append(buf, static_cast<std::size_t>(n));
  } else {
    got = "<cannot connect to 127.0.0.1:" + std::to_string(port) + ">";
  }
  ::close(fd);
  return got;
}

/// A command line run in the background (sh -c, stderr merged into stdout): its first line is
/// read at once; the rest stays readable from `out`; SIGTERM when destroyed.
struct Background {
  pid_t pid = -1;
  FILE* out = nullptr;
  std::string first_line;
  explicit Background(const std::string& cmd) {
    int fds[2];
    if (::pipe(fds) != 0) return;
    pid = ::fork();
    if (pid == 0) {
      ::dup2(fds[1], 1);
      ::close(fds[0]);
      ::execl("/bin/sh", "sh", "-c", ("exec " + cmd + " 2>&1").c_str(), nullptr);
      ::_exit(127);
    }
    ::close(fds[1]);
    out = ::fdopen(fds[0], "r");
    char line[512];
    if (std::fgets(line, sizeof line, out)) first_line = line;
  }
  ~Background() {
    if (pid > 0) {
      ::kill(pid, SIGTERM);
      int st;
      ::waitpid(pid, &st, 0);
    }
    if (out) std::fclose(out);
  }
  Background(const Background&) = delete;
  Background& operator=(const Background&) = delete;
};

}  // namespace gpupool::testing
