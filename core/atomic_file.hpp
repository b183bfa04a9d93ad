// runtime/checkpoint/atomic_file.hpp — replace a file so that a reader, or the next run after a crash or
// power loss, sees either the old file or the complete new one, never a torn mix (POSIX):
//   write `path.tmp.<pid>` → fsync it → rename() over `path` (atomic within one file system)
//   → fsync the directory (makes the rename itself durable).
// A crash leaves at most a stray `*.tmp.<pid>` file, which readers must ignore (load_latest_checkpoint does).
// Not here: Windows, network file systems that do not honour fsync/rename semantics (NFS close-to-open
// is fine for a single writer).
#pragma once
#include <cstddef>
#include <span>
#include <string>
#include <string_view>

namespace ptsim::runtime {

// "path.tmp.<pid>": the temporary sibling a writer in this process uses for `path`.
std::string atomic_temp_path(const std::string& path);

// Streams bytes into the temporary file; commit() publishes it. Destroying an uncommitted writer removes
// the temporary file (the target is untouched). Every failure throws core::InputError naming the path
// and the system error.
class AtomicFileWriter {
 public:
  explicit AtomicFileWriter(std::string path);
  ~AtomicFileWriter();
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

  void write(std::span<const std::byte> bytes);
  void write(std::string_view text);
  void commit();  // fsync file, close, rename over the target, fsync the directory
  const std::string& path() const { return path_; }
  const std::string& temp_path() const { return temp_path_; }

 private:
  std::string path_;
  std::string temp_path_;
  int fd_ = -1;
  bool committed_ = false;
};

void write_file_atomic(const std::string& path, std::span<const std::byte> bytes);
void write_file_atomic(const std::string& path, std::string_view text);
// fsync a directory so that entries created/renamed in it survive a crash. InputError on failure.
void fsync_directory(const std::string& dir);

}  // namespace ptsim::runtime
