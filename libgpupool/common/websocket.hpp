// common/websocket.hpp — RFC 6455 framing for the streaming subresources (private to the library).
// No I/O: the client (kube/streams.cpp) and the embedded server (embedded/streams.cpp) feed bytes
// and get messages, and encode the frames they send (masked when sent by a client, §5.3).
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace gpupool::ws {

enum Opcode : std::uint8_t { kContinuation = 0, kText = 1, kBinary = 2, kClose = 8, kPing = 9, kPong = 10 };

/// Sec-WebSocket-Accept for a Sec-WebSocket-Key (§4.2.2: base64(SHA-1(key + GUID))).
std::string accept_key(std::string_view key);
/// A fresh random Sec-WebSocket-Key (16 random bytes, base64).
std::string new_key();

struct Message {
  Opcode opcode = kBinary;  ///< kText, kBinary, kClose, kPing or kPong (fragments are joined)
  std::string payload;
};

struct ProtocolError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Encodes one final frame; `mask` for frames a client sends.
std::string frame(Opcode op, std::string_view payload, bool mask);

class Decoder {
 public:
  explicit Decoder(std::size_t max_message = 64u << 20) : max_(max_message) {}
  void feed(std::string_view bytes) { in_.append(bytes); }
  /// The next complete message (control frames come as they arrive), or nullopt. Throws ProtocolError.
  std::optional<Message> next();

 private:
  std::string in_, partial_;
  Opcode partial_op_ = kBinary;
  bool in_fragment_ = false;
  std::size_t max_;
};

}  // namespace gpupool::ws
