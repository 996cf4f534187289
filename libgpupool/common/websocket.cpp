#include "common/websocket.hpp"

#include <openssl/rand.h>
#include <openssl/sha.h>

#include "common/base64.hpp"

namespace gpupool::ws {

std::string accept_key(std::string_view key) {
  std::string s(key);
  s += "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
  unsigned char digest[SHA_DIGEST_LENGTH];
  SHA1(reinterpret_cast<const unsigned char*>(s.data()), s.size(), digest);
  return base64_encode(std::string_view(reinterpret_cast<const char*>(digest), sizeof digest));
}

std::string new_key() {
  unsigned char raw[16];
  RAND_bytes(raw, sizeof raw);
  return base64_encode(std::string_view(reinterpret_cast<const char*>(raw), sizeof raw));
}

std::string frame(Opcode op, std::string_view payload, bool mask) {
  std::string f;
  f.reserve(payload.size() + 14);
  f += static_cast<char>(0x80 | op);
  const char m = mask ? static_cast<char>(0x80) : 0;
  if (payload.size() < 126) {
    f += static_cast<char>(m | static_cast<char>(payload.size()));
  } else if (payload.size() <= 0xffff) {
    f += static_cast<char>(m | 126);
    f += static_cast<char>(payload.size() >> 8);
    f += static_cast<char>(payload.size() & 0xff);
  } else {
    f += static_cast<char>(m | 127);
    for (int i = 7; i >= 0; --i) f += static_cast<char>((static_cast<std::uint64_t>(payload.size()) >> (8 * i)) & 0xff);
  }
  if (!mask) {
    f.append(payload);
    return f;
  }
  unsigned char key[4];
  RAND_bytes(key, sizeof key);
  f.append(reinterpret_cast<const char*>(key), 4);
  const std::size_t at = f.size();
  f.append(payload);
  for (std::size_t i = 0; i < payload.size(); ++i) f[at + i] = static_cast<char>(f[at + i] ^ key[i % 4]);
  return f;
}

std::optional<Message> Decoder::next() {
  for (;;) {
    if (in_.size() < 2) return std::nullopt;
    const auto b0 = static_cast<unsigned char>(in_[0]), b1 = static_cast<unsigned char>(in_[1]);
    const bool fin = b0 & 0x80, masked = b1 & 0x80;
    const auto op = static_cast<Opcode>(b0 & 0x0f);
    std::uint64_t len = b1 & 0x7f;
    std::size_t at = 2;
    if (len == 126) {
      if (in_.size() < 4) return std::nullopt;
      len = static_cast<std::uint64_t>(static_cast<unsigned char>(in_[2])) << 8 | static_cast<unsigned char>(in_[3]);
      at = 4;
    } else if (len == 127) {
      if (in_.size() < 10) return std::nullopt;
      len = 0;
      for (int i = 0; i < 8; ++i) len = len << 8 | static_cast<unsigned char>(in_[2 + i]);
      at = 10;
    }
    if (len > max_) throw ProtocolError("websocket frame too large");
    const std::size_t key_at = at;
    if (masked) at += 4;
    if (in_.size() < at + len) return std::nullopt;
    std::string payload = in_.substr(at, len);
    if (masked)
      for (std::size_t i = 0; i < payload.size(); ++i) payload[i] = static_cast<char>(payload[i] ^ in_[key_at + i % 4]);
    in_.erase(0, at + len);
    if (op >= kClose) {
      if (!fin || payload.size() > 125) throw ProtocolError("bad websocket control frame");
      return Message{op, std::move(payload)};
    }
    if (op == kContinuation) {
      if (!in_fragment_) throw ProtocolError("websocket continuation without a first frame");
    } else {
      if (in_fragment_) throw ProtocolError("websocket frame inside a fragmented message");
      partial_op_ = op;
      partial_.clear();
    }
    partial_ += payload;
    if (partial_.size() > max_) throw ProtocolError("websocket message too large");
    in_fragment_ = !fin;
    if (fin) return Message{partial_op_, std::move(partial_)};
  }
}

}  // namespace gpupool::ws
