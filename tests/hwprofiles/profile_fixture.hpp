// tests/hwprofiles/profile_fixture.hpp — a scratch copy of the shipped hwprofiles/ that a test can break.
// Each ScratchProfiles is a fresh temp directory (removed on destruction) holding a copy of
// gpus/ stacks/ nodes/ networks/ prices/; edit() loads one JSON file, lets the test mutate it, writes it back.
#pragma once
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include "core/json_reader.hpp"
#include "hwprofiles/profiles.hpp"

namespace ptsim::test {

class ScratchProfiles {
 public:
  ScratchProfiles() {
    std::string pattern = (std::filesystem::temp_directory_path() / "ptsim-hwprofiles-XXXXXX").string();
    if (char* made = mkdtemp(pattern.data())) root_ = made;
    for (const char* kind : {"gpus", "stacks", "nodes", "networks", "prices"})
      std::filesystem::copy(std::filesystem::path(hwprofiles::hwprofiles_directory()) / kind, root_ / kind,
                            std::filesystem::copy_options::recursive);
  }
  ~ScratchProfiles() {
    std::error_code ec;
    std::filesystem::remove_all(root_, ec);
  }
  ScratchProfiles(const ScratchProfiles&) = delete;
  ScratchProfiles& operator=(const ScratchProfiles&) = delete;

  std::string dir() const { return root_.string(); }
  std::string path(const std::string& relative) const { return (root_ / relative).string(); }

  // Loads `relative` (e.g. "gpus/t4.json"), applies `mutate`, writes it back; returns the full path.
  std::string edit(const std::string& relative, const std::function<void(core::Json&)>& mutate) const {
    core::Json j = core::load_json_file(path(relative));
    mutate(j);
    write(relative, j.dump(2));
    return path(relative);
  }
  void copy(const std::string& from, const std::string& to) const {
    std::filesystem::copy_file(path(from), path(to), std::filesystem::copy_options::overwrite_existing);
  }
  void write(const std::string& relative, const std::string& text) const {
    std::ofstream out(path(relative));
    out << text;
  }

 private:
  std::filesystem::path root_;
};

}  // namespace ptsim::test
