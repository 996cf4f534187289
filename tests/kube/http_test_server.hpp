// A scripted HTTP/1.1 server on 127.0.0.1 for the transport's tests: each request is answered
// by a handler with raw bytes (any framing, gzip, a half answer, a close), or held until the
// test releases it. It counts connections and requests, so keep-alive reuse can be checked.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <functional>
#include <list>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace gpupool::test {

struct ServedRequest {
  std::string head;  ///< request line and headers, up to the blank line
  std::string body;
  int connection = 0;  ///< 1 for the first connection accepted, 2 for the next...
  /// Bytes of the connection's next requests already received when this one is handled: more
  /// than 0 when the client sent them before this answer (pipelining).
  std::size_t buffered_after = 0;
  std::string line() const { return head.substr(0, head.find("\r\n")); }
  bool has_header(const std::string& line_text) const {
    return head.find("\r\n" + line_text + "\r\n") != std::string::npos;
  }
};

/// Writes all `n` bytes of `data` to socket `fd`; false when the peer is gone.
inline bool send_all(int fd, const void* bytes, std::size_t n) {
  const auto* data = static_cast<const char*>(bytes);
  while (n > 0) {
    const ssize_t k = ::send(fd, data, n, MSG_NOSIGNAL);
    if (k <= 0) return false;
    data += k;
    n -= static_cast<std::size_t>(k);
  }
  return true;
}

/// Copies bytes both ways between two connected sockets until either side closes or fails (a
/// tunnel's splice).
inline void pipe_both_ways(int a, int b) {
  char buf[65536];
  pollfd p[2] = {{a, POLLIN, 0}, {b, POLLIN, 0}};
  for (bool open = true; open && ::poll(p, 2, -1) > 0;)
    for (int i = 0; i < 2 && open; ++i) {
      if (!p[i].revents) continue;
      const ssize_t n = ::recv(p[i].fd, buf, sizeof buf, 0);
      open = n > 0 && send_all(p[1 - i].fd, buf, static_cast<std::size_t>(n));
    }
}

struct Reply {
  std::string bytes;       ///< written as is
  bool close = false;      ///< close the connection after writing (without saying so)
  bool hold = false;       ///< write `bytes`, then keep the connection silent until release()
  bool tunnel_to = false;  ///< (CONNECT) after writing `bytes`, pipe the connection to tunnel_port
  int tunnel_port = 0;
};

/// "HTTP/1.1 <status> X\r\nContent-Length: n\r\n<extra>\r\n<body>".
inline std::string http_reply(int status, const std::string& body, const std::string& extra_headers = "") {
  return "HTTP/1.1 " + std::to_string(status) + " X\r\nContent-Length: " + std::to_string(body.size()) + "\r\n" +
         extra_headers + "\r\n" + body;
}

class HttpTestServer {
 public:
  using Handler = std::function<Reply(const ServedRequest&)>;
  explicit HttpTestServer(Handler handler) : handler_(std::move(handler)) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    const int one = 1;
    ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(listen_fd_, 64) != 0)
      throw std::runtime_error("test server: cannot listen");
    socklen_t len = sizeof a;
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    accept_thread_ = std::thread([this] { accept_loop(); });
  }
  ~HttpTestServer() {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
      released_ = true;
    }
    cv_.notify_all();
    ::shutdown(listen_fd_, SHUT_RDWR);
    accept_thread_.join();
    {
      std::lock_guard lock(mu_);
      for (int fd : open_fds_) ::shutdown(fd, SHUT_RDWR);
    }
    for (auto& t : threads_) t.join();
    ::close(listen_fd_);
  }
  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  int connections() const { return connections_.load(); }
  int requests() const { return requests_.load(); }
  /// Ends every held reply (its connection is then closed).
  void release() {
    {
      std::lock_guard lock(mu_);
      released_ = true;
    }
    cv_.notify_all();
  }
  /// Waits until `n` requests were received (or ~10 s passed); returns whether they were.
  bool wait_for_requests(int n) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(10), [&] { return requests_.load() >= n; });
  }

 private:
  void accept_loop() {
    while (true) {
      const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) return;
      std::lock_guard lock(mu_);
      if (stopping_) {
        ::close(fd);
        return;
      }
      open_fds_.push_back(fd);
      const int number = ++connections_;
      threads_.emplace_back([this, fd, number] { serve(fd, number); });
    }
  }

  static bool write_all(int fd, const std::string& data) { return send_all(fd, data.data(), data.size()); }

  void forget(int fd) {
    std::lock_guard lock(mu_);
    open_fds_.remove(fd);
    ::close(fd);
  }

  void serve(int fd, int number) {
    std::string in;
    char buf[65536];
    while (true) {
      std::size_t end;
      while ((end = in.find("\r\n\r\n")) == std::string::npos) {
        const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
        if (n <= 0) return forget(fd);
        in.append(buf, static_cast<std::size_t>(n));
      }
      ServedRequest r;
      r.head = in.substr(0, end + 2);
      r.connection = number;
      in.erase(0, end + 4);
      std::size_t want = 0;
      if (auto p = r.head.find("Content-Length: "); p != std::string::npos) want = std::stoul(r.head.substr(p + 16));
      while (in.size() < want) {
        const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
        if (n <= 0) return forget(fd);
        in.append(buf, static_cast<std::size_t>(n));
      }
      r.body = in.substr(0, want);
      in.erase(0, want);
      r.buffered_after = in.size();
      const Reply reply = handler_(r);
      {
        std::lock_guard lock(mu_);
        ++requests_;
      }
      cv_.notify_all();
      if (!write_all(fd, reply.bytes)) return forget(fd);
      if (reply.tunnel_to) return tunnel(fd, reply.tunnel_port);
      if (reply.hold) {
        std::unique_lock lock(mu_);
        cv_.wait(lock, [&] { return released_; });
        lock.unlock();
        return forget(fd);
      }
      if (reply.close) return forget(fd);
    }
  }

  /// Pipes `fd` to 127.0.0.1:port both ways until either side closes (a CONNECT tunnel).
  void tunnel(int fd, int port) {
    const int up = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<std::uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(up, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) {
      {
        std::lock_guard lock(mu_);
        open_fds_.push_back(up);
      }
      pipe_both_ways(fd, up);
      forget(up);
    } else {
      ::close(up);
    }
    forget(fd);
  }

  Handler handler_;
  int listen_fd_ = -1, port_ = 0;
  std::atomic<int> connections_{0}, requests_{0};
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false, released_ = false;
  std::list<int> open_fds_;
  std::thread accept_thread_;
  std::list<std::thread> threads_;
};

}  // namespace gpupool::test
