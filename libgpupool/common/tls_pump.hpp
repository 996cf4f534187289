// common/tls_pump.hpp — one thread moving bytes both ways over a TLS connection (private).
//
// An upgraded connection (exec's WebSocket, port-forward's SPDY) is full duplex: data arrives
// while other threads have data to send. OpenSSL's SSL object may not be used by two threads at
// once, so one thread owns it: run() polls the socket and a wake-up descriptor, hands received
// bytes to a callback and writes what send() queued. Used by kube/streams.cpp and
// embedded/streams.cpp.
#pragma once

#include <functional>
#include <mutex>
#include <string>
#include <string_view>

typedef struct ssl_st SSL;

namespace gpupool {

class TlsPump {
 public:
  /// Borrows `ssl` (already handshaken, its BIO reading and writing `fd`) and `fd`; the caller
  /// frees them after run() returned. Puts `fd` in non-blocking mode.
  TlsPump(SSL* ssl, int fd);
  ~TlsPump();
  TlsPump(const TlsPump&) = delete;
  TlsPump& operator=(const TlsPump&) = delete;

  /// Runs until the peer closes, a transport error, finish() (after the queue is written) or
  /// abort(). `on_bytes` runs on this thread for each received piece (may call send()).
  /// Returns false when the connection failed (reset, TLS error) rather than ended.
  bool run(const std::function<void(std::string_view)>& on_bytes);
  /// Queues bytes to send; thread-safe; ignored once run() has returned.
  void send(const std::string& bytes);
  /// Asks run() to return once everything queued is written (thread-safe).
  void finish();
  /// Asks run() to return now (thread-safe).
  void abort();

 private:
  void wake();
  SSL* ssl_;
  int fd_;
  int wake_fd_ = -1;
  std::mutex mu_;
  std::string out_;
  bool finishing_ = false, aborted_ = false, done_ = false;
};

}  // namespace gpupool
