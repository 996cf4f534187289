// The embedded cluster's durable state (issue #16): a snapshot file plus an append-only journal of
// the writes committed since, so that an acknowledged write survives kill -9.
//
//   <state>.json       the snapshot (Store::snapshot()), replaced atomically: a temporary file of
//                      this process's own, fsync, rename, fsync of the directory
//   <state>.json.log   one JSON line per committed change, fsync'ed before the write returns
//   <state>.json.log.old  the journal being folded into a new snapshot (compaction in progress)
//
// Loading reads the snapshot, then replays .log.old and .log, skipping records the snapshot
// already holds (resourceVersion <= its revision). A torn last line is a write that never
// returned (no client saw it acknowledged) and is dropped; anything else unreadable is refused.
#pragma once

#include <boost/json.hpp>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "embedded/store.hpp"

namespace gpupool::embedded {

namespace json = boost::json;

/// A whole file's bytes ("" when it cannot be read).
std::string read_file(const std::string& path);

/// Writes `text` to `path` so that after return it survives a crash: a temporary file unique to
/// this process and thread, mode 0600, fsync, rename over `path`, fsync of the directory.
void write_file_durably(const std::string& path, const std::string& text);

/// Loads a snapshot and replays its journals. Returns an empty object when neither exists.
/// Throws ConfigError naming the file and `gpupool cluster reset` for a corrupt one.
json::object load_state(const std::string& snapshot_path);

/// Store::Journal writing `<snapshot>.log`.
class FileJournal : public Journal {
 public:
  explicit FileJournal(std::string snapshot_path);
  ~FileJournal() override;
  void record(const WatchEvent& e) override;  ///< under the store's lock: queue
  void sync() override;                       ///< write what is queued, fdatasync
  std::uint64_t size() const;                 ///< bytes in the journal file

  /// Folds the journal into a new snapshot: the journal is set aside (.log.old), `take` is called
  /// for the snapshot (after the set-aside, so it holds everything the old journal does), the
  /// snapshot is written durably, and the old journal removed. Safe while writes go on.
  void compact(const std::function<json::object()>& take);

  const std::string& path() const { return log_path_; }

 private:
  struct Pending {
    EventType type;
    const ResourceType* rt;
    std::shared_ptr<const json::object> object;
    std::uint64_t rv;
  };
  void open_log();
  std::string snapshot_path_, log_path_;
  std::mutex queue_mu_;  // leaf lock: taken under the store's lock by record()
  std::vector<Pending> queue_;
  mutable std::mutex file_mu_;  // the file; never held while taking the store's lock
  int fd_ = -1;
  std::uint64_t size_ = 0;
};

}  // namespace gpupool::embedded
