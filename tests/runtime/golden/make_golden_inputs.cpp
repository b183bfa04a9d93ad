// tests/runtime/golden/make_golden_inputs.cpp — writes the golden check's inputs (golden_bert.hpp):
// config.json, model.safetensors and batch.safetensors into DIR (default: tests/data/golden/bert).
// Deterministic: the same files on every machine (counter-hash weights and batch). Regenerate the PyTorch
// side afterwards with tools/torch_reference.py (docs/golden-tests.md).
//   build/tests/runtime/make_golden_inputs [DIR]
#include <cstdio>
#include <exception>
#include <filesystem>

#include "runtime/checkpoint/atomic_file.hpp"
#include "runtime/train/trainer.hpp"
#include "tests/runtime/golden/golden_bert.hpp"

int main(int argc, char** argv) {
  using namespace ptsim;
  try {
    const std::string dir = argc > 1 ? argv[1] : test::golden::data_dir();
    std::filesystem::create_directories(dir);
    const models::TaskGraph g = models::build_task_graph(test::golden::bert_spec(), test::golden::bert_recipe());
    runtime::ExecutorOptions options;
    options.time_ops = false;
    runtime::Executor ex(g, options);
    test::golden::make_weights(ex);
    test::golden::write_model(dir + "/model.safetensors", ex);
    test::golden::write_batch(dir + "/batch.safetensors", test::golden::make_batch(g.model.vocab_size));
    runtime::write_file_atomic(dir + "/config.json", runtime::hf_bert_config(g.model).dump(2) + "\n");
    std::printf("wrote %s/{config.json,model.safetensors,batch.safetensors}\n", dir.c_str());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "make_golden_inputs: %s\n", e.what());
    return 1;
  }
}
