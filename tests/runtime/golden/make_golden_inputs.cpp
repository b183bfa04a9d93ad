// tests/runtime/golden/make_golden_inputs.cpp — writes the golden check's inputs (golden_inputs.hpp):
// config.json, model.safetensors and batch.safetensors into ROOT/bert and ROOT/gpt2 (default ROOT:
// tests/data/golden). Deterministic: the same bytes on every machine (counter-hash weights and batch).
// Regenerate the PyTorch side afterwards with tools/torch_reference.py (docs/golden-tests.md).
//   build/tests/runtime/make_golden_inputs [ROOT]
#include <cstdio>
#include <exception>
#include <filesystem>

#include "core/atomic_file.hpp"
#include "tests/runtime/golden/golden_inputs.hpp"

int main(int argc, char** argv) {
  using namespace ptsim;
  try {
    for (const test::golden::Case& c : {test::golden::bert_case(), test::golden::gpt2_case()}) {
      const std::string dir = argc > 1 ? std::string(argv[1]) + "/" + c.name : test::golden::data_dir(c);
      std::filesystem::create_directories(dir);
      const models::TaskGraph g = models::build_task_graph(c.spec, test::golden::recipe(c));
      runtime::ExecutorOptions options;
      options.time_ops = false;
      runtime::Executor ex(g, options);
      test::golden::make_weights(ex);
      test::golden::write_model(dir + "/model.safetensors", ex);
      test::golden::write_batch(dir + "/batch.safetensors", test::golden::make_batch(c));
      core::write_file_atomic(dir + "/config.json", c.hf_config.dump(2) + "\n");
      std::printf("wrote %s/{config.json,model.safetensors,batch.safetensors}\n", dir.c_str());
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "make_golden_inputs: %s\n", e.what());
    return 1;
  }
}
