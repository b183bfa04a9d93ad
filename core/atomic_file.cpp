// runtime/checkpoint/atomic_file.cpp — temp file + fsync + rename + directory fsync (POSIX).
#include "runtime/checkpoint/atomic_file.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "core/error.hpp"

namespace ptsim::runtime {
using core::InputError;

namespace {

std::string errno_text() { return std::strerror(errno); }

std::string parent_dir(const std::string& path) {
  std::filesystem::path p(path);
  std::filesystem::path parent = p.parent_path();
  return parent.empty() ? std::string(".") : parent.string();
}

}  // namespace

std::string atomic_temp_path(const std::string& path) {
  return fmt::format("{}.tmp.{}", path, static_cast<long>(::getpid()));
}

void fsync_directory(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) throw InputError(fmt::format("{}: cannot open directory to fsync it: {}", dir, errno_text()));
  if (::fsync(fd) != 0) {
    const std::string why = errno_text();
    ::close(fd);
    throw InputError(fmt::format("{}: fsync of the directory failed: {}", dir, why));
  }
  ::close(fd);
}

AtomicFileWriter::AtomicFileWriter(std::string path) : path_(std::move(path)), temp_path_(atomic_temp_path(path_)) {
  fd_ = ::open(temp_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0)
    throw InputError(fmt::format("{}: cannot create temporary file {}: {} (does the directory exist and is it writable?)",
                                 path_, temp_path_, errno_text()));
}

AtomicFileWriter::~AtomicFileWriter() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) ::unlink(temp_path_.c_str());  // best effort; the target is untouched
}

void AtomicFileWriter::write(std::span<const std::byte> bytes) {
  if (fd_ < 0) throw InputError(fmt::format("{}: write after commit", path_));
  const std::byte* p = bytes.data();
  std::size_t left = bytes.size();
  while (left > 0) {
    const ssize_t n = ::write(fd_, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw InputError(fmt::format("{}: writing {} failed: {} (disk full?)", path_, temp_path_, errno_text()));
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
}

void AtomicFileWriter::write(std::string_view text) {
  write(std::as_bytes(std::span<const char>(text.data(), text.size())));
}

void AtomicFileWriter::commit() {
  if (fd_ < 0) throw InputError(fmt::format("{}: commit called twice", path_));
  if (::fsync(fd_) != 0) throw InputError(fmt::format("{}: fsync of {} failed: {}", path_, temp_path_, errno_text()));
  const int rc = ::close(fd_);
  fd_ = -1;
  if (rc != 0) throw InputError(fmt::format("{}: closing {} failed: {}", path_, temp_path_, errno_text()));
  if (::rename(temp_path_.c_str(), path_.c_str()) != 0)
    throw InputError(fmt::format("{}: renaming {} over it failed: {}", path_, temp_path_, errno_text()));
  committed_ = true;
  fsync_directory(parent_dir(path_));
}

void write_file_atomic(const std::string& path, std::span<const std::byte> bytes) {
  AtomicFileWriter w(path);
  w.write(bytes);
  w.commit();
}

void write_file_atomic(const std::string& path, std::string_view text) {
  AtomicFileWriter w(path);
  w.write(text);
  w.commit();
}

}  // namespace ptsim::runtime
