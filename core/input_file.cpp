// core/input_file.cpp — what a user-named input path is, before it is opened (see the header).
#include "core/input_file.hpp"

#include <fmt/format.h>
#include <sys/stat.h>

#include "core/error.hpp"

namespace ptsim::core {

void require_regular_file(const std::string& path, const std::string& expected) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || S_ISREG(st.st_mode)) return;  // missing: the caller's open names it
  const char* kind = S_ISDIR(st.st_mode)    ? "a directory"
                     : S_ISFIFO(st.st_mode) ? "a FIFO (named pipe)"
                     : S_ISSOCK(st.st_mode) ? "a socket"
                     : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "a device"
                                                                  : "not a regular file";
  throw InputError(fmt::format("{}: is {}, expected {}", path, kind, expected));
}

}  // namespace ptsim::core
