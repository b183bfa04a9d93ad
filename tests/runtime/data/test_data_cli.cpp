// tests/runtime/data/test_data_cli.cpp — `ptsim data vocab|prepare|inspect` through the built binary:
// the happy path works end to end, and every bad input exits 2 with a message naming file and problem.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <fstream>

#include "data_test_support.hpp"
#include "tests/support/run_command.hpp"

using ptsim::test::run_ptsim;
namespace fs = std::filesystem;

namespace {

std::string q(const fs::path& p) { return fmt::format("'{}'", p.string()); }

// vocab + prepare into a fresh directory; returns it.
fs::path cli_dataset(const std::string& name) {
  const fs::path dir = ptsim::test::fresh_temp_dir(name);
  auto r = run_ptsim("data vocab --corpus " + q(ptsim::test::small_corpus_path()) + " --vocab-size 300 --out " + q(dir / "vocab.txt"));
  REQUIRE_MESSAGE(r.exit_code == 0, r.output);
  r = run_ptsim("data prepare --corpus " + q(ptsim::test::small_corpus_path()) + " --vocab " + q(dir / "vocab.txt") + " --out " +
                q(dir / "ds") + " --seq-len 64 --dup-factor 3 --shard-size 40 --seed 7");
  REQUIRE_MESSAGE(r.exit_code == 0, r.output);
  return dir;
}

}  // namespace

TEST_CASE("ptsim data: vocab, prepare, inspect succeed and inspect decodes an instance") {
  const fs::path dir = cli_dataset("cli_ok");
  CHECK(fs::exists(dir / "ds" / "manifest.json"));
  CHECK(fs::exists(dir / "ds" / "shard_00000.bin"));
  CHECK(fs::exists(dir / "ds" / "shard_00001.bin"));
  const auto r = run_ptsim("data inspect " + q(dir / "ds"));
  CHECK(r.exit_code == 0);
  CHECK(r.output.find("seq_len          64") != std::string::npos);
  CHECK(r.output.find("tokens:   [CLS] ") != std::string::npos);
  CHECK(r.output.find("[SEP]") != std::string::npos);
  // --index past the last instance printed the header alone with exit 0; it is exit 2 naming the count.
  const auto past = run_ptsim("data inspect " + q(dir / "ds") + " --index 1000000");
  CHECK(past.exit_code == 2);
  CHECK(past.output.find("--index 1000000: the dataset") != std::string::npos);
  // The same seed gives byte-identical shards.
  const fs::path again = ptsim::test::fresh_temp_dir("cli_again");
  const auto r2 = run_ptsim("data prepare --corpus " + q(ptsim::test::small_corpus_path()) + " --vocab " + q(dir / "vocab.txt") +
                            " --out " + q(again) + " --seq-len 64 --dup-factor 3 --shard-size 40 --seed 7");
  REQUIRE(r2.exit_code == 0);
  CHECK(ptsim::test::read_text(again / "shard_00000.bin") == ptsim::test::read_text(dir / "ds" / "shard_00000.bin"));
}

TEST_CASE("ptsim data --help works; bad flags and missing subcommands exit 2") {
  CHECK(run_ptsim("data --help").exit_code == 0);
  CHECK(run_ptsim("data prepare --help").exit_code == 0);
  auto r = run_ptsim("data");
  CHECK(r.exit_code == 2);
  r = run_ptsim("data vocab --corpus x --out y --vocab-size banana");
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("--vocab-size") != std::string::npos);
  CHECK(run_ptsim("data prepare --bogus").exit_code == 2);
}

TEST_CASE("ptsim data: corrupt, truncated, mismatched and missing inputs exit 2 with a named cause") {
  const fs::path dir = cli_dataset("cli_errors");
  // Missing corpus.
  auto r = run_ptsim("data vocab --corpus " + q(dir / "missing.txt") + " --out " + q(dir / "v2.txt"));
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("missing.txt' cannot be opened") != std::string::npos);
  // Empty corpus.
  ptsim::test::write_text(dir / "empty.txt", "\n\n");
  r = run_ptsim("data prepare --corpus " + q(dir / "empty.txt") + " --vocab " + q(dir / "vocab.txt") + " --out " + q(dir / "e"));
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("has no tokens") != std::string::npos);
  // Vocab without [MASK].
  ptsim::test::write_text(dir / "bad_vocab.txt", "[PAD]\n[UNK]\n[CLS]\n[SEP]\nthe\n");
  r = run_ptsim("data prepare --corpus " + q(ptsim::test::small_corpus_path()) + " --vocab " + q(dir / "bad_vocab.txt") + " --out " +
                q(dir / "b"));
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("lacks the special token(s) [MASK]") != std::string::npos);
  // Vocab mismatch.
  ptsim::test::write_text(dir / "other.txt", "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nthe\n");
  r = run_ptsim("data inspect " + q(dir / "ds") + " --vocab " + q(dir / "other.txt"));
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("vocab mismatch") != std::string::npos);
  // Flipped byte.
  {
    std::fstream f(dir / "ds" / "shard_00001.bin", std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(200);
    f.put('\x7f');
  }
  r = run_ptsim("data inspect " + q(dir / "ds"));
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("shard_00001.bin' is corrupt: payload checksum mismatch") != std::string::npos);
  // Truncated.
  fs::resize_file(dir / "ds" / "shard_00000.bin", 1000);
  r = run_ptsim("data inspect " + q(dir / "ds") + " --no-verify");
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("shard_00000.bin' is truncated") != std::string::npos);
  // Not a dataset.
  r = run_ptsim("data inspect " + q(dir / "nowhere"));
  CHECK(r.exit_code == 2);
}

TEST_CASE("ptsim data prepare: one 600,000-token line is truncated in linear time, not quadratic") {
  // A hostile corpus: one sentence of 600,000 words. truncate_seq_pair erased its tokens one at a time from
  // the front (quadratic): 500,000 words took 44 s on the 2-core host, so 600,000 take over a minute; the
  // linear cut takes about 0.6 s. 20 s is far from both, so a loaded machine does not make this flaky.
  const fs::path dir = ptsim::test::fresh_temp_dir("cli_long_line");
  {
    std::ofstream corpus(dir / "long.txt");
    for (int i = 0; i < 600'000; ++i) corpus << "the ";
    corpus << "\n";
  }
  auto r = run_ptsim("data vocab --corpus " + q(ptsim::test::small_corpus_path()) + " --vocab-size 300 --out " +
                     q(dir / "vocab.txt"));
  REQUIRE_MESSAGE(r.exit_code == 0, r.output);
  r = ptsim::test::run_command("timeout 20 " + std::string(PTSIM_BINARY) + " data prepare --corpus " + q(dir / "long.txt") +
                               " --vocab " + q(dir / "vocab.txt") + " --out " + q(dir / "ds") + " --seq-len 32 2>&1");
  CHECK_MESSAGE(r.exit_code == 0, "exit ", r.exit_code, " (124: killed after 20 s): ", r.output);
  fs::remove(dir / "long.txt");
}
