#include "common/spdy.hpp"

#include <unistd.h>
#include <zlib.h>

#include <cerrno>

#include <cstring>
#include <stdexcept>

namespace gpupool::spdy {

namespace {

// The SPDY/3 header compression dictionary (SPDY/3 draft section 2.6.10.1; the same bytes as
// vendor/github.com/moby/spdystream/spdy/dictionary.go).
const unsigned char kDictionary[] = {
#include "common/spdy_dictionary.inc"
};

constexpr std::uint16_t kVersion = 3;
constexpr std::size_t kMaxFrame = 0xffffff;
constexpr std::uint32_t kMaxHeaders = 1000;       // spdy/types.go defaultMaxHeaderCount
constexpr std::uint32_t kMaxFieldSize = 1 << 20;  // a generous bound on one name or value

void put32(std::string& s, std::uint32_t v) {
  s += static_cast<char>(v >> 24);
  s += static_cast<char>(v >> 16);
  s += static_cast<char>(v >> 8);
  s += static_cast<char>(v);
}
std::uint32_t get32(std::string_view s, std::size_t at) {
  auto b = [&](std::size_t i) { return static_cast<std::uint32_t>(static_cast<unsigned char>(s[at + i])); };
  return b(0) << 24 | b(1) << 16 | b(2) << 8 | b(3);
}

std::string control(std::uint16_t type, std::uint8_t flags, std::string_view body) {
  if (body.size() > kMaxFrame) throw ProtocolError("SPDY frame too large");
  std::string f;
  f.reserve(8 + body.size());
  f += static_cast<char>(0x80 | (kVersion >> 8));
  f += static_cast<char>(kVersion & 0xff);
  f += static_cast<char>(type >> 8);
  f += static_cast<char>(type & 0xff);
  put32(f, static_cast<std::uint32_t>(flags) << 24 | static_cast<std::uint32_t>(body.size()));
  f.append(body);
  return f;
}

}  // namespace

const std::string* find_header(const Headers& h, std::string_view name) {
  for (const auto& [k, v] : h)
    if (k == name) return &v;
  return nullptr;
}

struct Codec::Zlib {
  z_stream out{}, in{};
  bool in_primed = false;
  Zlib() {
    if (deflateInit(&out, Z_BEST_COMPRESSION) != Z_OK) throw std::runtime_error("zlib deflateInit failed");
    deflateSetDictionary(&out, kDictionary, sizeof kDictionary);
    if (inflateInit(&in) != Z_OK) throw std::runtime_error("zlib inflateInit failed");
  }
  ~Zlib() {
    deflateEnd(&out);
    inflateEnd(&in);
  }
};

Codec::Codec() : z_(std::make_unique<Zlib>()) {}
Codec::~Codec() = default;

std::string Codec::compress(const Headers& h) {
  std::string plain;
  put32(plain, static_cast<std::uint32_t>(h.size()));
  for (const auto& [k, v] : h) {
    put32(plain, static_cast<std::uint32_t>(k.size()));
    plain += k;
    put32(plain, static_cast<std::uint32_t>(v.size()));
    plain += v;
  }
  std::string out;
  z_stream& z = z_->out;
  z.next_in = reinterpret_cast<Bytef*>(plain.data());
  z.avail_in = static_cast<uInt>(plain.size());
  char buf[4096];
  do {  // Z_SYNC_FLUSH: the block ends on a byte boundary and the context carries on (write.go Flush)
    z.next_out = reinterpret_cast<Bytef*>(buf);
    z.avail_out = sizeof buf;
    if (deflate(&z, Z_SYNC_FLUSH) == Z_STREAM_ERROR) throw ProtocolError("SPDY header compression failed");
    out.append(buf, sizeof buf - z.avail_out);
  } while (z.avail_out == 0);
  return out;
}

Headers Codec::decompress(std::string_view block) {
  std::string plain;
  z_stream& z = z_->in;
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(block.data()));
  z.avail_in = static_cast<uInt>(block.size());
  char buf[4096];
  while (z.avail_in > 0) {
    z.next_out = reinterpret_cast<Bytef*>(buf);
    z.avail_out = sizeof buf;
    int rc = inflate(&z, Z_SYNC_FLUSH);
    if (rc == Z_NEED_DICT) {
      if (inflateSetDictionary(&z, kDictionary, sizeof kDictionary) != Z_OK)
        throw ProtocolError("SPDY header block uses an unknown dictionary");
      continue;
    }
    if (rc != Z_OK && rc != Z_BUF_ERROR) throw ProtocolError("SPDY header block is not valid zlib data");
    plain.append(buf, sizeof buf - z.avail_out);
    if (plain.size() > 16u << 20) throw ProtocolError("SPDY header block too large");
    if (rc == Z_BUF_ERROR && z.avail_out != 0) break;
  }
  Headers h;
  std::string_view p = plain;
  if (p.size() < 4) throw ProtocolError("SPDY header block truncated");
  const std::uint32_t n = get32(p, 0);
  if (n > kMaxHeaders) throw ProtocolError("SPDY header block has too many headers");
  std::size_t at = 4;
  auto field = [&]() {
    if (p.size() < at + 4) throw ProtocolError("SPDY header block truncated");
    const std::uint32_t len = get32(p, at);
    at += 4;
    if (len > kMaxFieldSize || p.size() < at + len) throw ProtocolError("SPDY header block truncated");
    std::string s(p.substr(at, len));
    at += len;
    return s;
  };
  for (std::uint32_t i = 0; i < n; ++i) {
    std::string k = field();
    std::string v = field();
    h.emplace_back(std::move(k), std::move(v));
  }
  return h;
}

std::string Codec::syn_stream(std::uint32_t id, const Headers& h, std::uint8_t flags) {
  std::string body;
  put32(body, id & 0x7fffffff);
  put32(body, 0);  // associated-to stream
  body += '\0';    // priority 0 (3 bits) + unused
  body += '\0';    // slot
  body += compress(h);
  return control(kSynStream, flags, body);
}

std::string Codec::syn_reply(std::uint32_t id, const Headers& h, std::uint8_t flags) {
  std::string body;
  put32(body, id & 0x7fffffff);
  body += compress(h);
  return control(kSynReply, flags, body);
}

std::string Codec::rst_stream(std::uint32_t id, std::uint32_t status) {
  std::string body;
  put32(body, id & 0x7fffffff);
  put32(body, status);
  return control(kRstStream, 0, body);
}

std::string Codec::data(std::uint32_t id, std::string_view payload, bool fin) {
  if (payload.size() > kMaxFrame) throw ProtocolError("SPDY data frame too large");
  std::string f;
  f.reserve(8 + payload.size());
  put32(f, id & 0x7fffffff);
  put32(f, static_cast<std::uint32_t>(fin ? kFlagFin : 0) << 24 | static_cast<std::uint32_t>(payload.size()));
  f.append(payload);
  return f;
}

std::string Codec::ping(std::uint32_t id) {
  std::string body;
  put32(body, id);
  return control(kPing, 0, body);
}

std::string Codec::goaway(std::uint32_t last_good_id, std::uint32_t status) {
  std::string body;
  put32(body, last_good_id & 0x7fffffff);
  put32(body, status);
  return control(kGoAway, 0, body);
}

std::optional<Frame> Codec::next() {
  if (in_.size() < 8) return std::nullopt;
  const std::uint32_t w0 = get32(in_, 0), w1 = get32(in_, 4);
  const std::size_t len = w1 & 0xffffff;
  if (in_.size() < 8 + len) return std::nullopt;
  Frame f;
  f.flags = static_cast<std::uint8_t>(w1 >> 24);
  std::string body = in_.substr(8, len);
  in_.erase(0, 8 + len);
  if ((w0 & 0x80000000u) == 0) {
    f.type = kData;
    f.stream_id = w0 & 0x7fffffff;
    f.data = std::move(body);
    return f;
  }
  if (((w0 >> 16) & 0x7fff) != kVersion) throw ProtocolError("not SPDY version 3");
  f.type = static_cast<std::uint16_t>(w0 & 0xffff);
  auto need = [&](std::size_t n) {
    if (body.size() < n) throw ProtocolError("SPDY control frame truncated");
  };
  switch (f.type) {
    case kSynStream:
      need(10);
      f.stream_id = get32(body, 0) & 0x7fffffff;
      f.headers = decompress(std::string_view(body).substr(10));
      break;
    case kSynReply:
    case kHeaders:
      need(4);
      f.stream_id = get32(body, 0) & 0x7fffffff;
      f.headers = decompress(std::string_view(body).substr(4));
      break;
    case kRstStream:
    case kWindowUpdate:
      need(8);
      f.stream_id = get32(body, 0) & 0x7fffffff;
      f.value = get32(body, 4) & (f.type == kWindowUpdate ? 0x7fffffff : 0xffffffff);
      break;
    case kGoAway:
      need(4);
      f.stream_id = get32(body, 0) & 0x7fffffff;
      if (body.size() >= 8) f.value = get32(body, 4);
      break;
    case kPing:
      need(4);
      f.value = get32(body, 0);
      break;
    default:  // SETTINGS and unknown types: the payload is not needed
      f.data = std::move(body);
      break;
  }
  return f;
}

void pump_fd_to_stream(int fd, std::uint32_t id, const std::function<void(std::string)>& send) {
  char buf[16384];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    send(Codec::data(id, std::string_view(buf, static_cast<std::size_t>(n)), false));
  }
}

}  // namespace gpupool::spdy
