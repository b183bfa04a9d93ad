// core/atomic_file.cpp — checked target, temp file + fsync + rename + directory fsync (POSIX); checked
// line-by-line appends; the stdout check.
#include "core/atomic_file.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "core/error.hpp"

namespace ptsim::core {

namespace {

std::string errno_text(int err) { return std::strerror(err); }

std::string parent_dir(const std::string& path) {
  std::filesystem::path parent = std::filesystem::path(path).parent_path();
  return parent.empty() ? std::string(".") : parent.string();
}

std::string label_for(const std::string& path, std::string_view what) {
  return what.empty() ? path : fmt::format("{} {}", what, path);
}

// What a non-regular file is, for the message.
const char* kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

}  // namespace

std::string atomic_temp_path(const std::string& path) {
  return fmt::format("{}.tmp.{}", path, static_cast<long>(::getpid()));
}

std::string writable_target(const std::string& path, std::string_view what) {
  const std::string label = label_for(path, what);
  if (path.empty()) throw InputError(fmt::format("{}: an empty path cannot be written", what.empty() ? "output" : what));
  std::string target = path;
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) {
    // Replace what the link points to, not the link: the user's link (say into a results folder) stays.
    std::error_code ec;
    target = std::filesystem::weakly_canonical(path, ec).string();
    if (ec) throw InputError(fmt::format("{}: cannot resolve the symbolic link: {}", label, ec.message()));
  }
  if (::stat(target.c_str(), &st) == 0) {
    if (!S_ISREG(st.st_mode))
      throw InputError(fmt::format("{}: is {}; ptsim writes only regular files (it replaces them atomically), "
                                   "give a file path",
                                   label, kind_of(st.st_mode)));
  } else if (errno != ENOENT) {
    throw InputError(fmt::format("{}: cannot check the path: {}", label, errno_text(errno)));
  }
  return target;
}

void fsync_directory(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) throw IoError(fmt::format("{}: cannot open the directory to fsync it: {}", dir, errno_text(errno)));
  if (::fsync(fd) != 0) {
    const int err = errno;
    ::close(fd);
    throw IoError(fmt::format("{}: fsync of the directory failed: {}", dir, errno_text(err)));
  }
  ::close(fd);
}

AtomicFileWriter::AtomicFileWriter(std::string path, std::string_view what)
    : label_(label_for(path, what)), path_(writable_target(path, what)), temp_path_(atomic_temp_path(path_)) {
  fd_ = ::open(temp_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0)
    throw InputError(fmt::format("{}: cannot create the temporary file {}: {} (does the directory exist and is it "
                                 "writable?)",
                                 label_, temp_path_, errno_text(errno)));
  // The replacement keeps the permissions of the file it replaces (a private 0600 result stays private).
  struct stat st {};
  if (::stat(path_.c_str(), &st) == 0) (void)::fchmod(fd_, st.st_mode & 07777);
}

AtomicFileWriter::~AtomicFileWriter() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) ::unlink(temp_path_.c_str());  // best effort; the target is untouched
}

void AtomicFileWriter::write(std::span<const std::byte> bytes) {
  if (fd_ < 0) throw std::logic_error(fmt::format("{}: write after commit", label_));
  const std::byte* p = bytes.data();
  std::size_t left = bytes.size();
  while (left > 0) {
    const ssize_t n = ::write(fd_, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw IoError(fmt::format("{}: writing failed: {} (disk full or over a file-size limit?); the previous "
                                "file, if any, is unchanged",
                                label_, errno_text(errno)));
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
}

void AtomicFileWriter::write(std::string_view text) {
  write(std::as_bytes(std::span<const char>(text.data(), text.size())));
}

void AtomicFileWriter::commit() {
  if (fd_ < 0) throw std::logic_error(fmt::format("{}: commit called twice", label_));
  if (::fsync(fd_) != 0) throw IoError(fmt::format("{}: fsync of {} failed: {}", label_, temp_path_, errno_text(errno)));
  const int rc = ::close(fd_);
  const int close_err = errno;
  fd_ = -1;
  if (rc != 0) throw IoError(fmt::format("{}: closing {} failed: {}", label_, temp_path_, errno_text(close_err)));
  // The target may have changed since the constructor looked (another process): look again.
  (void)writable_target(path_, "");
  if (::rename(temp_path_.c_str(), path_.c_str()) != 0)
    throw IoError(fmt::format("{}: renaming {} over it failed: {}", label_, temp_path_, errno_text(errno)));
  committed_ = true;
  fsync_directory(parent_dir(path_));
}

void write_file_atomic(const std::string& path, std::span<const std::byte> bytes, std::string_view what) {
  AtomicFileWriter w(path, what);
  w.write(bytes);
  w.commit();
}

void write_file_atomic(const std::string& path, std::string_view text, std::string_view what) {
  AtomicFileWriter w(path, what);
  w.write(text);
  w.commit();
}

CheckedAppendFile::CheckedAppendFile(const std::string& path, bool append, std::string_view what)
    : label_(label_for(path, what)) {
  const std::string target = writable_target(path, what);
  file_ = std::fopen(target.c_str(), append ? "a" : "w");
  if (!file_)
    throw InputError(fmt::format("{}: cannot open for writing: {} (does the directory exist and is it writable?)",
                                 label_, errno_text(errno)));
}

CheckedAppendFile::~CheckedAppendFile() {
  if (file_) std::fclose(file_);  // unchecked only on an error path: close() is the checked way out
}

void CheckedAppendFile::write_line(std::string_view line) {
  if (!file_) return;
  const bool ok = std::fwrite(line.data(), 1, line.size(), file_) == line.size() && std::fputc('\n', file_) != EOF &&
                  std::fflush(file_) == 0;
  if (!ok) throw IoError(fmt::format("{}: writing failed: {} (disk full or over a file-size limit?)", label_, errno_text(errno)));
}

void CheckedAppendFile::sync() {
  if (!file_) return;
  if (std::fflush(file_) != 0 || ::fsync(::fileno(file_)) != 0)
    throw IoError(fmt::format("{}: fsync failed: {}", label_, errno_text(errno)));
}

void CheckedAppendFile::close() {
  if (!file_) return;
  sync();
  std::FILE* f = file_;
  file_ = nullptr;
  if (std::fclose(f) != 0) throw IoError(fmt::format("{}: closing failed: {}", label_, errno_text(errno)));
}

bool flush_stdout_ok() { return std::fflush(stdout) == 0 && !std::ferror(stdout); }

}  // namespace ptsim::core
