// tests/support/temp_dir.hpp — scratch directories for tests, unique per process.
//   TempDir d("ck");                 a fresh directory, removed when `d` goes out of scope
//   process_temp_dir("x")            a fresh directory <tmp>/ptsim_test_<pid>/x, removed at program exit
#pragma once
#include <unistd.h>

#include <filesystem>
#include <string>
#include <system_error>

namespace ptsim::test {

namespace fs = std::filesystem;

inline fs::path fresh_directory(const fs::path& path) {
  fs::remove_all(path);
  fs::create_directories(path);
  return path;
}

struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& tag) {
    static int counter = 0;
    path = fresh_directory(fs::temp_directory_path() /
                           ("ptsim_test_" + tag + "_" + std::to_string(::getpid()) + "_" + std::to_string(counter++)));
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
};

// This process's scratch root, removed when the test program exits.
inline const fs::path& process_temp_root() {
  struct Root {
    fs::path path = fs::temp_directory_path() / ("ptsim_test_" + std::to_string(::getpid()));
    ~Root() {
      std::error_code ec;
      fs::remove_all(path, ec);
    }
  };
  static const Root root;
  return root.path;
}

// A fresh, empty directory <root>/<name> (emptied again if a test asks for the same name twice).
inline fs::path process_temp_dir(const std::string& name) { return fresh_directory(process_temp_root() / name); }

}  // namespace ptsim::test
