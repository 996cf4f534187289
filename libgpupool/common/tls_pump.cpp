#include "common/tls_pump.hpp"

#include "common/sigpipe.hpp"

#include <fcntl.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

namespace gpupool {

TlsPump::TlsPump(SSL* ssl, int fd) : ssl_(ssl), fd_(fd) {
  wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  ::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) | O_NONBLOCK);
  SSL_set_mode(ssl_, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
}

TlsPump::~TlsPump() {
  if (wake_fd_ >= 0) ::close(wake_fd_);
}

void TlsPump::wake() {
  const std::uint64_t one = 1;
  [[maybe_unused]] auto n = ::write(wake_fd_, &one, sizeof one);
}

void TlsPump::send(const std::string& bytes) {
  {
    std::lock_guard lk(mu_);
    if (done_) return;
    out_ += bytes;
  }
  wake();
}

void TlsPump::finish() {
  {
    std::lock_guard lk(mu_);
    finishing_ = true;
  }
  wake();
}

void TlsPump::abort() {
  {
    std::lock_guard lk(mu_);
    aborted_ = true;
  }
  wake();
}

bool TlsPump::run(const std::function<void(std::string_view)>& on_bytes) {
  // This thread writes to the socket (and, through on_bytes, to pipes and local sockets).
  SigpipeBlock no_sigpipe;
  std::string pending;  // being written (SSL_write must be retried with the same bytes)
  bool ok = true;
  auto end = [&](bool result) {
    std::lock_guard lk(mu_);
    done_ = true;
    ok = result;
  };
  char buf[16384];
  for (;;) {
    bool want_write = false, want_read_for_write = false;
    {
      std::lock_guard lk(mu_);
      if (aborted_) break;
      if (pending.empty() && !out_.empty()) pending.swap(out_);
      if (pending.empty() && finishing_) break;
    }
    // Write what is queued.
    while (!pending.empty()) {
      ERR_clear_error();
      const int n = SSL_write(ssl_, pending.data(), static_cast<int>(std::min<std::size_t>(pending.size(), 1 << 20)));
      if (n > 0) {
        pending.erase(0, static_cast<std::size_t>(n));
        if (pending.empty()) {
          std::lock_guard lk(mu_);
          pending.swap(out_);
        }
        continue;
      }
      const int e = SSL_get_error(ssl_, n);
      if (e == SSL_ERROR_WANT_WRITE)
        want_write = true;
      else if (e == SSL_ERROR_WANT_READ)
        want_read_for_write = true;
      else {
        end(false);
        return false;
      }
      break;
    }
    {
      std::lock_guard lk(mu_);
      if (pending.empty() && out_.empty() && finishing_) break;
    }
    // Read what has arrived.
    for (;;) {
      ERR_clear_error();
      const int n = SSL_read(ssl_, buf, sizeof buf);
      if (n > 0) {
        on_bytes(std::string_view(buf, static_cast<std::size_t>(n)));
        continue;
      }
      const int e = SSL_get_error(ssl_, n);
      if (e == SSL_ERROR_WANT_READ) break;
      if (e == SSL_ERROR_WANT_WRITE) {
        want_write = true;
        break;
      }
      const bool clean = e == SSL_ERROR_ZERO_RETURN || (e == SSL_ERROR_SYSCALL && ERR_peek_error() == 0);
      // The peer closed: write out what is queued (best effort) and end.
      end(clean);
      return clean;
    }
    {
      std::lock_guard lk(mu_);
      if (aborted_) break;
      if (!out_.empty() && pending.empty()) continue;
    }
    if (!pending.empty() && !want_write && !want_read_for_write) continue;
    ::pollfd fds[2] = {{fd_, static_cast<short>(POLLIN | (want_write ? POLLOUT : 0)), 0}, {wake_fd_, POLLIN, 0}};
    if (::poll(fds, 2, 1000) < 0 && errno != EINTR) {
      end(false);
      return false;
    }
    if (fds[1].revents & POLLIN) {
      std::uint64_t v;
      [[maybe_unused]] auto n = ::read(wake_fd_, &v, sizeof v);
    }
  }
  end(true);
  return ok;
}

}  // namespace gpupool
