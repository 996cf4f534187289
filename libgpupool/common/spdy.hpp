// common/spdy.hpp — SPDY/3.1 framing as kubectl's port-forward speaks it (private to the library).
//
// The frames and header compression of the SPDY/3.1 draft as implemented by
// vendor/github.com/moby/spdystream/spdy (read.go, write.go, types.go): control frames
// SYN_STREAM, SYN_REPLY, RST_STREAM, SETTINGS, PING, GOAWAY, HEADERS, WINDOW_UPDATE and DATA
// frames; name/value header blocks compressed with zlib primed with the SPDY dictionary, one
// compression context per direction for the whole connection. No I/O: bytes in, frames out.
// Used by both ends: the client (kube/streams.cpp) and the embedded server (embedded/streams.cpp).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gpupool::spdy {

enum FrameType : std::uint16_t {
  kData = 0,  // not a control frame type: marks DATA frames in Frame::type
  kSynStream = 1,
  kSynReply = 2,
  kRstStream = 3,
  kSettings = 4,
  kPing = 6,
  kGoAway = 7,
  kHeaders = 8,
  kWindowUpdate = 9,
};
inline constexpr std::uint8_t kFlagFin = 0x01;
inline constexpr std::uint8_t kFlagUnidirectional = 0x02;
// RST_STREAM status codes (spdy/types.go).
inline constexpr std::uint32_t kProtocolError = 1, kRefusedStream = 3, kCancel = 5;

/// Header names are lower case on the wire (read.go rejects others).
using Headers = std::vector<std::pair<std::string, std::string>>;
const std::string* find_header(const Headers& h, std::string_view name);

struct Frame {
  std::uint16_t type = kData;
  std::uint8_t flags = 0;
  std::uint32_t stream_id = 0;  ///< DATA, SYN_*, RST, HEADERS, WINDOW_UPDATE; GOAWAY: last good id
  std::uint32_t value = 0;      ///< RST/GOAWAY status, PING id, WINDOW_UPDATE delta
  Headers headers;              ///< SYN_STREAM, SYN_REPLY, HEADERS
  std::string data;             ///< DATA payload
  bool fin() const { return (flags & kFlagFin) != 0; }
};

/// Thrown on bytes that are not SPDY/3.1.
struct ProtocolError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// One end of a connection: encodes frames it sends (with its compression context) and decodes
/// frames it receives (with the peer's). Not thread-safe: callers serialize.
class Codec {
 public:
  Codec();
  ~Codec();
  Codec(const Codec&) = delete;
  Codec& operator=(const Codec&) = delete;

  std::string syn_stream(std::uint32_t id, const Headers& h, std::uint8_t flags = 0);
  std::string syn_reply(std::uint32_t id, const Headers& h, std::uint8_t flags = 0);
  static std::string rst_stream(std::uint32_t id, std::uint32_t status);
  static std::string data(std::uint32_t id, std::string_view payload, bool fin);
  static std::string ping(std::uint32_t id);
  static std::string goaway(std::uint32_t last_good_id, std::uint32_t status = 0);

  /// Appends received bytes; then next() yields the complete frames among them.
  void feed(std::string_view bytes) { in_.append(bytes); }
  /// The next complete frame, or nullopt until more bytes arrive. Throws ProtocolError.
  std::optional<Frame> next();

 private:
  std::string compress(const Headers& h);
  Headers decompress(std::string_view block);
  struct Zlib;
  std::unique_ptr<Zlib> z_;
  std::string in_;
};

/// Reads `fd` until end of file or an error, handing each chunk to `send` as a DATA frame of stream
/// `id` (without FIN): the port-forward pump of both ends.
void pump_fd_to_stream(int fd, std::uint32_t id, const std::function<void(std::string)>& send);

}  // namespace gpupool::spdy
