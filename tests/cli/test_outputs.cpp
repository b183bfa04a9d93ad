// tests/cli/test_outputs.cpp — every file ptsim writes, against targets it must not write and writes that
// fail: a directory, a FIFO or a path in a missing directory is exit 2 naming the flag and the path; a
// write that fails (a child under RLIMIT_FSIZE; ptsim ignores SIGXFSZ, so write() returns EFBIG) is exit 1
// and leaves the previous file byte for byte, with no temporary file beside it. Also stdout, `data
// prepare --out EXISTING`, `train` into a used checkpoint directory, and up-front memory checks.
// Never a device file or a system path: every target lives in this process's temp directory.
#include <doctest/doctest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "tests/runtime/train/train_test_support.hpp"

namespace fs = std::filesystem;
using ptsim::test::CommandResult;
using ptsim::test::fresh_dir;
using ptsim::test::quote;
using ptsim::test::read_file;
using ptsim::test::run_ptsim;

namespace {

const std::string kCorpus = std::string(PTSIM_SOURCE_DIR) + "/tests/data/small_corpus.txt";

// The tiny BERT and dataset of the train tests (made once per process).
const ptsim::test::TinySetup& setup() {
  static const ptsim::test::TinySetup s = ptsim::test::make_tiny_setup("outputs_setup");
  return s;
}

// `ptsim <args>` with a file-size limit of `blocks` (512-byte blocks in sh's ulimit -f). SIGXFSZ is left at
// its default (which kills a process): ptsim ignores it itself, so a write past the limit fails with EFBIG.
CommandResult run_ptsim_limited(const std::string& args, int blocks, const std::string& env = "") {
  const std::string script = "ulimit -f " + std::to_string(blocks) + "; " + env + " exec " +
                             std::string(PTSIM_BINARY) + " " + args;
  std::string command = "sh -c \"" + script + "\" 2>&1";
  CommandResult result;
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return result;
  char buffer[4096];
  size_t n = 0;
  while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) result.output.append(buffer, n);
  const int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

std::vector<std::string> entries(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

// One output flag of one command: `args(target)` is the command line writing `target`.
struct Output {
  const char* name;
  std::function<std::string(const fs::path& target)> args;
  const char* label;  // how messages name it ("--trace", "vocab" ...)
};

std::vector<Output> outputs() {
  return {
      {"predict --trace", [](const fs::path& t) { return "predict --scenario t4-academic-cluster --trace " + quote(t); },
       "--trace"},
      {"predict --gpu --op-times",
       [](const fs::path& t) { return "predict --gpu t4 --model bert-tiny --op-times " + quote(t); }, "--op-times"},
      {"data vocab --out",
       [](const fs::path& t) { return "data vocab --corpus '" + kCorpus + "' --vocab-size 400 --out " + quote(t); },
       "vocab"},
      {"train --metrics",
       [](const fs::path& t) {
         return "train --model " + setup().model + " --data " + setup().data +
                " --steps 3 --micro-batch 4 --threads 1 --quiet --metrics " + quote(t);
       },
       "--metrics"},
      {"train --op-times",
       [](const fs::path& t) {
         return "train --model " + setup().model + " --data " + setup().data +
                " --steps 3 --micro-batch 4 --threads 1 --quiet --op-times " + quote(t);
       },
       "--op-times"},
  };
}

}  // namespace

TEST_CASE("outputs: a directory, a FIFO or a missing directory as the target is exit 2 naming flag and path") {
  const fs::path dir = fresh_dir("outputs_targets");
  const fs::path a_directory = dir / "a_directory";
  fs::create_directory(a_directory);
  const fs::path a_fifo = dir / "a_fifo";
  REQUIRE(::mkfifo(a_fifo.c_str(), 0644) == 0);
  struct Target {
    fs::path path;
    const char* expect;
  };
  const std::vector<Target> targets = {{a_directory, "is a directory"},
                                       {a_fifo, "is a FIFO"},
                                       {dir / "no_such_dir" / "out.json", "does the directory exist"}};
  for (const Output& o : outputs())
    for (const Target& t : targets) {
      CAPTURE(o.name);
      CAPTURE(t.path);
      const CommandResult r = run_ptsim(o.args(t.path));
      CHECK_MESSAGE(r.exit_code == 2, r.output);
      CHECK_MESSAGE(r.output.find(o.label) != std::string::npos, r.output);
      CHECK_MESSAGE(r.output.find(t.path.string()) != std::string::npos, r.output);
      CHECK_MESSAGE(r.output.find(t.expect) != std::string::npos, r.output);
    }
  CHECK(fs::is_directory(a_directory));  // untouched
  CHECK(fs::is_fifo(a_fifo));
}

TEST_CASE("outputs: a failed write is exit 1 and the previous file stays as it was") {
  for (const Output& o : outputs()) {
    CAPTURE(o.name);
    const fs::path dir = fresh_dir("outputs_efbig");
    const fs::path target = dir / "out.txt";
    std::ofstream(target) << "the previous file\n";
    // 1 block = 512 bytes: every output above is larger (a trace, op-times JSON, 400 vocab lines, 3 metrics
    // lines of ~250 bytes).
    const CommandResult r = run_ptsim_limited(o.args(target), 1);
    CHECK_MESSAGE(r.exit_code == 1, r.output);
    CHECK_MESSAGE(r.output.find("writing failed") != std::string::npos, r.output);
    CHECK_MESSAGE(r.output.find("File too large") != std::string::npos, r.output);
    if (std::string(o.label) != "--metrics") {
      // Atomic outputs: the old bytes exactly, and no temporary file left.
      CHECK(read_file(target) == "the previous file\n");
      CHECK(entries(dir) == std::vector<std::string>{"out.txt"});
    }
  }
}

TEST_CASE("outputs: without a limit the same commands succeed and replace the file") {
  for (const Output& o : outputs()) {
    CAPTURE(o.name);
    const fs::path dir = fresh_dir("outputs_ok");
    const fs::path target = dir / "out.txt";
    std::ofstream(target) << "the previous file\n";
    fs::permissions(target, fs::perms::owner_read | fs::perms::owner_write);  // 0600
    const CommandResult r = run_ptsim(o.args(target));
    CHECK_MESSAGE(r.exit_code == 0, r.output);
    CHECK(read_file(target) != "the previous file\n");
    CHECK(entries(dir) == std::vector<std::string>{"out.txt"});
    CHECK((fs::status(target).permissions() & fs::perms::all) == (fs::perms::owner_read | fs::perms::owner_write));
  }
}

TEST_CASE("outputs: a symbolic link to a file is followed; the link stays a link") {
  const fs::path dir = fresh_dir("outputs_link");
  fs::create_directory(dir / "results");
  std::ofstream(dir / "results" / "trace.json") << "old";
  fs::create_symlink("results/trace.json", dir / "trace.json");
  const CommandResult r = run_ptsim("predict --scenario t4-academic-cluster --trace " + quote(dir / "trace.json"));
  REQUIRE_MESSAGE(r.exit_code == 0, r.output);
  CHECK(fs::is_symlink(dir / "trace.json"));
  CHECK(read_file(dir / "results" / "trace.json").rfind("{", 0) == 0);  // the JSON trace, not "old"
}

TEST_CASE("outputs: a failed write to stdout is exit 1, not success") {
  const fs::path dir = fresh_dir("outputs_stdout");
  // The JSON prediction is several KB: past 1 block, and past stdio's 4 KiB buffer.
  const CommandResult r =
      run_ptsim_limited("predict --scenario t4-academic-cluster --format json > " + quote(dir / "out.json"), 1);
  CHECK_MESSAGE(r.exit_code == 1, r.output);
  CHECK_MESSAGE(r.output.find("standard output") != std::string::npos, r.output);
}

TEST_CASE("data prepare --out EXISTING: the old dataset stays until the new one is complete") {
  const ptsim::test::TinySetup& s = setup();
  const fs::path dir = fresh_dir("outputs_prepare");
  const std::string vocab = (s.dir / "vocab.txt").string();
  const std::string prepare = "data prepare --corpus '" + kCorpus + "' --vocab " + quote(vocab) + " --seq-len 32 --out ";
  REQUIRE(run_ptsim(prepare + quote(dir / "ds") + " --dup-factor 2").exit_code == 0);
  const std::string manifest = read_file(dir / "ds" / "manifest.json");

  // A failing rebuild (the first shard is past the file-size limit) leaves the old dataset as it was.
  CommandResult r = run_ptsim_limited(prepare + quote(dir / "ds") + " --dup-factor 4", 64);
  CHECK_MESSAGE(r.exit_code == 1, r.output);
  CHECK(read_file(dir / "ds" / "manifest.json") == manifest);
  CHECK(entries(dir) == std::vector<std::string>{"ds"});  // no staging directory left behind
  r = run_ptsim("data inspect " + quote(dir / "ds"));
  CHECK_MESSAGE(r.exit_code == 0, r.output);

  // A successful rebuild replaces it as a whole.
  REQUIRE(run_ptsim(prepare + quote(dir / "ds") + " --dup-factor 4").exit_code == 0);
  CHECK(read_file(dir / "ds" / "manifest.json") != manifest);
  CHECK(entries(dir) == std::vector<std::string>{"ds"});

  // A directory with files that are not a dataset's is the user's: refused, nothing touched.
  fs::create_directory(dir / "mine");
  std::ofstream(dir / "mine" / "notes.txt") << "keep me";
  r = run_ptsim(prepare + quote(dir / "mine"));
  CHECK_MESSAGE(r.exit_code == 2, r.output);
  CHECK_MESSAGE(r.output.find("holds 'notes.txt', which is not part of a prepared dataset") != std::string::npos, r.output);
  CHECK(read_file(dir / "mine" / "notes.txt") == "keep me");
}

TEST_CASE("data prepare --dup-factor 10^9 is refused with the bytes it would need") {
  const ptsim::test::TinySetup& s = setup();
  const fs::path dir = fresh_dir("outputs_dup");
  const CommandResult r = run_ptsim("data prepare --corpus '" + kCorpus + "' --vocab " + quote(s.dir / "vocab.txt") +
                                    " --seq-len 32 --dup-factor 1000000000 --out " + quote(dir / "ds"));
  CHECK_MESSAGE(r.exit_code == 2, r.output);
  CHECK_MESSAGE(r.output.find("--dup-factor 1000000000") != std::string::npos, r.output);
  CHECK_MESSAGE(r.output.find("bytes") != std::string::npos, r.output);
  CHECK_MESSAGE(r.output.find("MemAvailable") != std::string::npos, r.output);
  CHECK_FALSE(fs::exists(dir / "ds"));
}

TEST_CASE("train: refuses more memory than the machine has, with the bytes, before allocating") {
  const ptsim::test::TinySetup& s = setup();
  // PTSIM_MEM_AVAILABLE_BYTES plays a machine with 1 MB free; the tiny model's buffers need more.
  const CommandResult r = run_ptsim_limited("train --model " + s.model + " --data " + s.data + " --steps 1 --quiet", 1 << 20,
                                            "PTSIM_MEM_AVAILABLE_BYTES=1000000");
  CHECK_MESSAGE(r.exit_code == 2, r.output);
  CHECK_MESSAGE(r.output.find("needs") != std::string::npos, r.output);
  CHECK_MESSAGE(r.output.find("this machine has 1000000 bytes") != std::string::npos, r.output);
}

TEST_CASE("train: a checkpoint directory that holds another run needs --resume or --overwrite") {
  const ptsim::test::TinySetup& s = setup();
  const fs::path dir = fresh_dir("outputs_ckdir");
  const std::string base = "train --model " + s.model + " --data " + s.data +
                           " --steps 2 --micro-batch 4 --threads 1 --quiet --checkpoint-dir " + quote(dir / "ck");
  REQUIRE(run_ptsim(base).exit_code == 0);
  CommandResult r = run_ptsim(base + " --seed 7");
  CHECK_MESSAGE(r.exit_code == 2, r.output);
  CHECK_MESSAGE(r.output.find("already holds a run") != std::string::npos, r.output);
  CHECK_MESSAGE(r.output.find("--overwrite") != std::string::npos, r.output);
  r = run_ptsim(base + " --seed 7 --overwrite --resume");
  CHECK_MESSAGE(r.exit_code == 2, r.output);
  r = run_ptsim(base + " --seed 7 --overwrite");
  CHECK_MESSAGE(r.exit_code == 0, r.output);
}

TEST_CASE("train: DIR/vocab.txt must be the vocab the shards were made with") {
  const ptsim::test::TinySetup& s = setup();
  const fs::path dir = fresh_dir("outputs_vocab");
  fs::copy(s.data, dir / "ds", fs::copy_options::recursive);
  { std::ofstream(dir / "ds" / "vocab.txt", std::ios::app) << "extra_token\n"; }
  const CommandResult r = run_ptsim("train --model " + s.model + " --data " + quote(dir / "ds") + " --steps 1 --quiet");
  CHECK_MESSAGE(r.exit_code == 2, r.output);
  CHECK_MESSAGE(r.output.find("vocab mismatch") != std::string::npos, r.output);
}

TEST_CASE("train: a checkpoint that cannot be written is exit 1; the previous checkpoint stays, with no debris") {
  const ptsim::test::TinySetup& s = setup();
  const fs::path dir = fresh_dir("outputs_ckfull");
  const std::string base = "train --model " + s.model + " --data " + s.data +
                           " --steps 4 --micro-batch 4 --threads 1 --quiet --checkpoint-dir " + quote(dir / "ck");
  REQUIRE(run_ptsim(base + " --stop-after 2").exit_code == 0);
  // 64 blocks = 32 KiB: less than the tiny model's model.safetensors (its word embeddings alone are
  // 397 × 32 floats = 50 KB).
  const CommandResult r = run_ptsim_limited(base + " --resume", 64);
  CHECK_MESSAGE(r.exit_code == 1, r.output);
  CHECK_MESSAGE(r.output.find("model.safetensors") != std::string::npos, r.output);
  CHECK(read_file(dir / "ck" / "latest") == "step_2\n");
  CHECK(entries(dir / "ck") == std::vector<std::string>{"latest", "step_2"});
  CHECK(run_ptsim(base + " --resume").exit_code == 0);  // and it resumes from there
}
