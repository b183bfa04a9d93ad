// core/atomic_file.hpp — every file ptsim writes goes through here, so that a reader, or the next run
// after a crash, a full disk or a power loss, sees either the old file or the complete new one (POSIX):
//   check the target (a regular file, a link to one, or absent) → write `path.tmp.<pid>`, checking every
//   write → fsync it → close (checked) → rename() over `path` (atomic within one file system) → fsync the
//   directory (makes the rename itself durable).
// A failure at any point leaves the previous file intact and removes the temporary file. A crash leaves at
// most a stray `*.tmp.<pid>` file, which readers ignore (load_latest_checkpoint does).
// Errors: a target that cannot be written (not a regular file, no such directory, not writable) is the
// user's to fix: core::InputError (exit 2). A write, fsync, close or rename that fails (disk full, I/O
// error, file-size limit) is core::IoError (exit 1).
// Not here: Windows, network file systems that do not honour fsync/rename semantics (NFS close-to-open
// is fine for a single writer); streams that must be readable while being written (training metrics
// use CheckedAppendFile below).
#pragma once
#include <cstddef>
#include <cstdio>
#include <span>
#include <string>
#include <string_view>

namespace ptsim::core {

// "path.tmp.<pid>": the temporary sibling a writer in this process uses for `path`.
std::string atomic_temp_path(const std::string& path);

// Where an atomic write of `path` must rename to: `path` itself when absent or a regular file, the file a
// symbolic link points to (so the link survives), else InputError naming `what` (e.g. "--trace") and
// what the path is (a directory, a device, a FIFO…).
std::string writable_target(const std::string& path, std::string_view what);

// Streams bytes into the temporary file; commit() publishes it. Destroying an uncommitted writer removes
// the temporary file (the target is untouched).
class AtomicFileWriter {
 public:
  // `what` names the file in messages (a flag such as "--op-times", or "" for the path alone).
  explicit AtomicFileWriter(std::string path, std::string_view what = "");
  ~AtomicFileWriter();
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

  void write(std::span<const std::byte> bytes);
  void write(std::string_view text);
  void commit();  // fsync file, close, rename over the target, fsync the directory
  const std::string& path() const { return path_; }
  const std::string& temp_path() const { return temp_path_; }

 private:
  std::string label_;      // "--trace out.json" or "out.json": how messages name the file
  std::string path_;       // the rename target (a link's destination when `path` was a link)
  std::string temp_path_;
  int fd_ = -1;
  bool committed_ = false;
};

void write_file_atomic(const std::string& path, std::span<const std::byte> bytes, std::string_view what = "");
void write_file_atomic(const std::string& path, std::string_view text, std::string_view what = "");
// fsync a directory so that entries created/renamed in it survive a crash. IoError on failure.
void fsync_directory(const std::string& dir);

// A file written line by line and read while it grows (training metrics: `tail -f` works): the target must
// be a regular file or absent (checked at open), every line is flushed and checked (IoError on failure),
// sync() makes what was written durable (the trainer calls it at every checkpoint).
class CheckedAppendFile {
 public:
  CheckedAppendFile() = default;
  CheckedAppendFile(const std::string& path, bool append, std::string_view what);
  ~CheckedAppendFile();
  CheckedAppendFile(const CheckedAppendFile&) = delete;
  CheckedAppendFile& operator=(const CheckedAppendFile&) = delete;

  bool is_open() const { return file_ != nullptr; }
  void write_line(std::string_view line);  // appends line + "\n" and flushes
  void sync();                             // fsync; no-op when not open
  void close();                            // checked fclose; no-op when not open

 private:
  std::string label_;
  std::FILE* file_ = nullptr;
};

// Flush stdout and report whether everything printed reached it (false: e.g. `ptsim predict > /dev/full`,
// or a closed pipe). tools/ptsim.cpp calls it before exiting.
bool flush_stdout_ok();

}  // namespace ptsim::core
