// tests/runtime/train/train_test_support.hpp — a tiny BERT and a small prepared dataset for the `ptsim train`
// tests, built through the CLI in a per-process temp directory; metrics JSONL parsing; a child process
// that can be signalled.
#pragma once
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <doctest/doctest.h>

#include "core/json_reader.hpp"
#include "runtime/checkpoint/safetensors.hpp"
#include "tests/support/run_command.hpp"
#include "tests/support/temp_dir.hpp"

namespace ptsim::test {

namespace fs = std::filesystem;

inline fs::path fresh_dir(const std::string& name) { return ptsim::test::process_temp_dir(name); }

// Two step directories' model.safetensors and optimizer.safetensors hold the same tensors (names, bytes).
inline void check_same_checkpoint_tensors(const fs::path& a, const fs::path& b) {
  for (const char* file : {"model.safetensors", "optimizer.safetensors"}) {
    const auto x = ptsim::runtime::read_safetensors((a / file).string());
    const auto y = ptsim::runtime::read_safetensors((b / file).string());
    REQUIRE(x.tensors.size() == y.tensors.size());
    for (size_t i = 0; i < x.tensors.size(); ++i) {
      CHECK(x.tensors[i].name == y.tensors[i].name);
      CHECK(x.tensors[i].data == y.tensors[i].data);
    }
  }
}

inline std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// A 2-layer BERT small enough for a test step in a few milliseconds: hidden 32, 2 heads, FFN 64.
// vocab_size here is a placeholder: ptsim train replaces it with the dataset's.
inline const char* kTinyBertJson = R"({"name": "bert-test-tiny", "family": "bert", "num_layers": 2,
  "hidden_size": 32, "num_heads": 2, "intermediate_size": 64, "vocab_size": 30522,
  "max_position_embeddings": 64, "type_vocab_size": 2, "layer_norm_eps": 1e-12, "source": "tests"})";

struct TinySetup {
  fs::path dir;
  std::string model;    // path of the tiny model JSON
  std::string data;     // prepared dataset (seq 32)
  int vocab_size = 0;   // tokens in the trained vocab (397: not a multiple of 8, so the model pads to 400)
};

// Single-quoted for the shell. (Built with append: GCC 12's -Wrestrict misfires on "'" + std::string.)
inline std::string quote(const fs::path& p) {
  std::string out = "'";
  out.append(p.string());
  out.push_back('\'');
  return out;
}

// vocab (397 tokens) from tests/data/small_corpus.txt and `prepare --seq-len 32 --dup-factor 8` (437
// instances), through the CLI. `extra_prepare` is appended to the prepare flags (e.g. --max-predictions 1).
inline TinySetup make_tiny_setup(const std::string& name, const std::string& extra_prepare = "") {
  TinySetup s;
  s.dir = fresh_dir(name);
  const std::string corpus = std::string(PTSIM_SOURCE_DIR) + "/tests/data/small_corpus.txt";
  const fs::path vocab = s.dir / "vocab.txt";
  auto r = run_ptsim("data vocab --corpus '" + corpus + "' --vocab-size 397 --out " + quote(vocab));
  if (r.exit_code != 0) throw std::runtime_error("ptsim data vocab failed: " + r.output);
  r = run_ptsim("data prepare --corpus '" + corpus + "' --vocab " + quote(vocab) + " --out " + quote(s.dir / "ds") +
                " --seq-len 32 --dup-factor 8 " + extra_prepare);
  if (r.exit_code != 0) throw std::runtime_error("ptsim data prepare failed: " + r.output);
  s.data = (s.dir / "ds").string();
  s.model = (s.dir / "tiny.json").string();
  std::ofstream(s.model) << kTinyBertJson;
  std::ifstream in(vocab);
  for (std::string line; std::getline(in, line);) ++s.vocab_size;
  return s;
}

struct MetricsLine {
  int64_t step = 0;
  double loss = 0;
  double mlm_loss = 0;
  double lr = 0;
};

inline std::vector<MetricsLine> read_metrics(const fs::path& path) {
  std::vector<MetricsLine> out;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    const core::Json j = core::Json::parse(line);
    MetricsLine m;
    m.step = j.at("step").get<int64_t>();
    m.loss = j.at("loss").get<double>();
    m.mlm_loss = j.at("mlm_loss").is_null() ? -1 : j.at("mlm_loss").get<double>();
    m.lr = j.at("lr").get<double>();
    out.push_back(m);
  }
  return out;
}

// `ptsim <args>` as a child process (stdout+stderr to `log`), so a test can signal it.
class ChildProcess {
 public:
  ChildProcess(const std::vector<std::string>& args, const fs::path& log) {
    pid_ = ::fork();
    if (pid_ < 0) throw std::runtime_error("fork failed");
    if (pid_ == 0) {
      const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (fd >= 0) {
        ::dup2(fd, 1);
        ::dup2(fd, 2);
      }
      std::vector<char*> argv;
      std::string binary = PTSIM_BINARY;
      argv.push_back(binary.data());
      std::vector<std::string> copy = args;
      for (auto& a : copy) argv.push_back(a.data());
      argv.push_back(nullptr);
      ::execv(binary.c_str(), argv.data());
      ::_exit(127);
    }
  }
  ~ChildProcess() {
    if (pid_ > 0 && !waited_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  pid_t pid() const { return pid_; }
  // Exit code, or -1 if it ended by a signal.
  int wait() {
    int status = 0;
    ::waitpid(pid_, &status, 0);
    waited_ = true;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

 private:
  pid_t pid_ = -1;
  bool waited_ = false;
};

// Polls until `pred` holds or `timeout` passes.
template <class Pred>
bool wait_until(Pred pred, std::chrono::seconds timeout) {
  const auto end = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return pred();
}

}  // namespace ptsim::test
