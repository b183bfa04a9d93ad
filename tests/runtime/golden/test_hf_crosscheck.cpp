// tests/runtime/golden/test_hf_crosscheck.cpp — tools/hf_crosscheck.py, the cross-check of ptsim against
// HuggingFace transformers (docs/golden-tests.md), tested where transformers may be missing: ptsim's golden
// results (golden_run.hpp, CPU backend) through the script with --implementation reference
// (tools/torch_reference.py's module trees in transformers' place; the loader, losses, optimizers and
// comparison are the same code) must pass; a gradient moved by 1% must fail naming it; results of the other
// model must be refused as bad input; and --implementation transformers must either pass (transformers
// installed) or exit 77 saying it is missing. Needs /usr/bin/python3 with torch and numpy (skipped with a
// message otherwise).
#include <doctest/doctest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <list>
#include <string>
#include <utility>
#include <vector>

#include "core/data_path.hpp"
#include "runtime/checkpoint/safetensors.hpp"
#include "tests/runtime/golden/golden_run.hpp"
#include "tests/support/temp_dir.hpp"

using namespace ptsim;
namespace golden = ptsim::test::golden;
namespace fs = std::filesystem;

namespace {

bool python_has_torch() { return std::system("/usr/bin/python3 -c 'import torch, numpy' > /dev/null 2>&1") == 0; }

// Runs tools/hf_crosscheck.py; returns (exit code, output).
std::pair<int, std::string> crosscheck(const golden::Case& c, const fs::path& ptsim_file, const std::string& implementation) {
  const fs::path log = ptsim_file.string() + "." + implementation + ".log";
  const std::string cmd = "/usr/bin/python3 '" + core::data_path("tools/hf_crosscheck.py") + "' --dir '" +
                          golden::data_dir(c) + "' --ptsim '" + ptsim_file.string() + "' --implementation " +
                          implementation + " > '" + log.string() + "' 2>&1";
  const int status = std::system(cmd.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, golden::read_text(log)};
}

// A copy of a results file with one tensor scaled by `factor`.
void write_scaled(const fs::path& from, const fs::path& to, const std::string& name, float factor) {
  const runtime::SafetensorsFile f = runtime::read_safetensors(from.string());
  std::list<std::vector<float>> values;
  std::vector<runtime::SafetensorsView> views;
  for (const auto& t : f.tensors) {
    values.push_back(t.to_f32(f.source));
    if (t.name == name)
      for (float& x : values.back()) x *= factor;
    views.push_back(runtime::safetensors_f32_view(t.name, values.back(), t.shape));
  }
  runtime::write_safetensors(to.string(), views, f.metadata);
}

}  // namespace

TEST_CASE("hf_crosscheck: ptsim's results pass, a moved gradient fails, the wrong model's results are refused") {
  if (!python_has_torch()) {
    MESSAGE("skipped: /usr/bin/python3 cannot import torch and numpy (Debian: apt-get install python3-torch "
            "python3-numpy); tools/hf_crosscheck.py was not run");
    return;
  }
  test::TempDir dir("hf_crosscheck");
  const golden::Case bert = golden::bert_case(), gpt2 = golden::gpt2_case();
  const fs::path bert_out = dir.path / "ptsim_bert.safetensors", gpt2_out = dir.path / "ptsim_gpt2.safetensors";
  golden::write_ptsim_outputs(bert_out.string(), bert, runtime::BackendKind::cpu);
  golden::write_ptsim_outputs(gpt2_out.string(), gpt2, runtime::BackendKind::cpu);
  for (const auto& [case_ref, file_ref] : {std::pair{bert, bert_out}, std::pair{gpt2, gpt2_out}}) {
    const golden::Case& c = case_ref;  // not the binding in CHECK_MESSAGE: clang 14 cannot capture one
    const fs::path& file = file_ref;
    const auto r = crosscheck(c, file, "reference");
    CHECK_MESSAGE(r.first == 0, c.name << ":\n" << r.second);
    CHECK_MESSAGE(r.second.find(" 0 failing") != std::string::npos, r.second);
    MESSAGE(c.name << ": " << r.second);
    // transformers itself: passes where it is installed, else exit 77 with the reason.
    const auto hf = crosscheck(c, file, "transformers");
    if (hf.first == 77) {
      CHECK_MESSAGE(hf.second.find("transformers is not installed") != std::string::npos, hf.second);
      MESSAGE(c.name << ": transformers not installed here; --implementation transformers exits 77: " << hf.second);
    } else {
      CHECK_MESSAGE(hf.first == 0, c.name << " vs transformers:\n" << hf.second);
    }
  }
  // A gradient moved by 1% (10× the max-norm tolerance) fails, and the failure names it.
  const std::string victim = "grad.bert.encoder.layer.1.intermediate.dense.weight";
  const fs::path moved = dir.path / "ptsim_bert_moved.safetensors";
  write_scaled(bert_out, moved, victim, 1.01f);
  const auto bad = crosscheck(bert, moved, "reference");
  CHECK_MESSAGE(bad.first == 1, bad.second);
  CHECK_MESSAGE(bad.second.find("FAIL " + victim) != std::string::npos, bad.second);
  // GPT-2's results against BERT's inputs: refused as bad input (exit 2), naming a missing quantity.
  const auto wrong = crosscheck(bert, gpt2_out, "reference");
  CHECK_MESSAGE(wrong.first == 2, wrong.second);
  CHECK_MESSAGE(wrong.second.find("gpt2") != std::string::npos, wrong.second);
}
