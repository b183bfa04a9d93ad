// tests/runtime/train/test_train_mpi_precision.cpp — mixed precision under data parallelism, `mpi` suite, run
// as `mpirun -np 2` (each rank runs every case; mpirun's exit code is the verdict). Each rank calls
// run_training in process with the tiny BERT and the test corpus of train_test_support.hpp, through a
// ProbeCommunicator: the MpiCommunicator, plus a view of each gradient bucket this rank hands to the sum
// and gets back (non-finite or not), and test-only faults (an inf in one rank's gradients before the sum;
// one rank's summed gradient changed after it). What is checked, for bf16 and fp16 with AdamW, gradient
// accumulation 2 and 32 KiB buckets overlapped with backward:
//  * the trainer's replica check (runtime/train/replica_check.hpp) passes at every checkpoint: both ranks
//    hold the same masters, optimizer state, loss scaler and data cursor, so rank 0's checkpoint is both's;
//    it fails, on both ranks, when one rank's summed gradient is changed;
//  * losses and final masters equal the bits recorded from main (below), and --no-comm-overlap gives the
//    same bits (2 ranks: a + b in either path);
//  * an overflow on one rank only is skipped by both (the all-reduced gradients are non-finite on both),
//    weights and optimizer state unchanged, the scale halved;
//  * a 2-rank bf16 run resumed half-way equals the straight run byte for byte;
//  * bf16 and fp16 through fp32 staging (a communicator refusing 16-bit sums) give the 16-bit sum's bits,
//    and the trainer reports that fallback in one progress line.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "core/hash.hpp"
#include "core/json_reader.hpp"
#include "runtime/checkpoint/safetensors.hpp"
#include "runtime/comm/mpi_communicator.hpp"
#include "runtime/exec/backend.hpp"
#include "runtime/exec/precision.hpp"  // defines: widen_16bit, narrow_16bit
#include "runtime/train/trainer.hpp"
#include "tests/runtime/train/train_test_support.hpp"

using namespace ptsim::test;
using ptsim::core::Json;
namespace rt = ptsim::runtime;

namespace {

// Rank 0's string on every rank, through sums (the other ranks add zeros; every char is exact in double).
std::string from_rank0(rt::Communicator& comm, const std::string& mine) {
  double n = comm.rank() == 0 ? static_cast<double>(mine.size()) : 0;
  comm.all_reduce_sum(std::span<double>(&n, 1));
  std::vector<double> chars(static_cast<size_t>(n), 0.0);
  if (comm.rank() == 0)
    for (size_t i = 0; i < chars.size(); ++i) chars[i] = static_cast<unsigned char>(mine[i]);
  comm.all_reduce_sum(std::span<double>(chars));
  std::string out;
  for (double c : chars) out.push_back(static_cast<char>(static_cast<unsigned char>(c)));
  return out;
}

// The MPI communicator with a probe on the gradient buckets. A step is counted when the trainer makes its
// per-step all-reduce of 4 doubles (loss, mlm, nsp, stop flag; docs/training.md, "The loop"), which follows
// every bucket of that step. Buckets come as the executor hands them over: in the gradients' stored dtype
// (bf16/fp16 under 16-bit storage, which MPI sums natively; f32 otherwise): read widened to fp32 here.
class ProbeCommunicator final : public rt::Communicator {
 public:
  struct Fault {
    int rank = -1;      // the rank it happens on
    int64_t step = 0;   // 1-based optimizer step
  };
  Fault inf_before_sum;   // +inf written into the first element of that step's first bucket on that rank
  Fault change_after_sum; // 1 added to the first element of that step's first summed bucket on that rank

  // True: this communicator says it cannot sum 16-bit types, so the executor stages 16-bit buckets in fp32.
  bool refuse_16bit = false;

  explicit ProbeCommunicator(rt::Communicator& inner) : inner_(inner) {}
  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  bool sums_natively(ptsim::models::DType t) const override {
    return !(refuse_16bit && rt::is_16bit_float(t)) && inner_.sums_natively(t);
  }
  void all_reduce_sum(std::span<float> data) override { inner_.all_reduce_sum(data); }
  void all_reduce_sum(std::span<double> data) override {
    inner_.all_reduce_sum(data);
    if (data.size() == 4) next_step();
  }
  void all_reduce_sum(rt::Backend& b, const rt::DeviceSpan& s, ptsim::models::DType t, rt::Stream stream) override {
    before_sum(b, s, t);
    inner_.all_reduce_sum(b, s, t, stream);
    after_sum(b, s, t);
  }
  rt::CommRequest start_all_reduce_sum(rt::Backend& b, const rt::DeviceSpan& s, ptsim::models::DType t,
                                       rt::Stream stream) override {
    before_sum(b, s, t);
    const rt::CommRequest r = inner_.start_all_reduce_sum(b, s, t, stream);
    started_[r.id] = Started{&b, s, t};
    return r;
  }
  void wait(rt::CommRequest r) override {
    inner_.wait(r);
    const Started s = started_.at(r.id);
    started_.erase(r.id);
    after_sum(*s.backend, s.span, s.dtype);
  }
  void progress() override { inner_.progress(); }
  void barrier() override { inner_.barrier(); }

  // Steps in which a bucket held a non-finite value going into the sum (this rank's own gradients) / coming
  // out of it (the sum over ranks).
  const std::set<int64_t>& nonfinite_before() const { return nonfinite_before_; }
  const std::set<int64_t>& nonfinite_after() const { return nonfinite_after_; }
  // fp16 elements handed to the sum (this rank's, after the executor's divide) that were fp16 subnormals.
  int64_t subnormal_handed() const { return subnormal_handed_; }

 private:
  struct Started {
    rt::Backend* backend = nullptr;
    rt::DeviceSpan span;
    ptsim::models::DType dtype = ptsim::models::DType::f32;
  };
  // The bucket's elements widened to fp32 (exact), and its first element written back as `first` (rounded
  // to the bucket's dtype: inf and x + 1 stay what they are for the checks).
  static std::vector<float> read(rt::Backend& b, const rt::DeviceSpan& s, ptsim::models::DType t) {
    if (t == ptsim::models::DType::f32) {
      std::vector<float> v(s.bytes / sizeof(float));
      b.copy_to_host(v.data(), s);
      return v;
    }
    std::vector<uint16_t> bits(s.bytes / 2);
    b.copy_to_host(bits.data(), s);
    std::vector<float> v(bits.size());
    rt::widen_16bit(v.data(), bits.data(), bits.size(), t);
    return v;
  }
  static void write_first(rt::Backend& b, const rt::DeviceSpan& s, ptsim::models::DType t, float first) {
    if (t == ptsim::models::DType::f32) return b.copy_to_device(s.sub(0, sizeof(float)), &first);
    uint16_t bits = 0;
    rt::narrow_16bit(&bits, &first, 1, t);
    b.copy_to_device(s.sub(0, 2), &bits);
  }
  static bool all_finite(const std::vector<float>& v) {
    for (float x : v)
      if (!std::isfinite(x)) return false;
    return true;
  }
  bool fault_now(const Fault& f) const { return f.rank == rank() && f.step == step_; }
  void before_sum(rt::Backend& b, const rt::DeviceSpan& s, ptsim::models::DType t) {
    std::vector<float> v = read(b, s, t);
    if (fault_now(inf_before_sum) && !injected_) {
      v[0] = INFINITY;
      write_first(b, s, t, v[0]);
      injected_ = true;
    }
    if (!all_finite(v)) nonfinite_before_.insert(step_);
    if (t == ptsim::models::DType::f16)
      for (float x : v) subnormal_handed_ += x != 0.0f && std::fabs(x) < 0x1p-14f;  // fp16's smallest normal
  }
  void after_sum(rt::Backend& b, const rt::DeviceSpan& s, ptsim::models::DType t) {
    std::vector<float> v = read(b, s, t);
    if (fault_now(change_after_sum) && !changed_) {
      v[0] += 1.0f;
      write_first(b, s, t, v[0]);
      changed_ = true;
    }
    if (!all_finite(v)) nonfinite_after_.insert(step_);
  }
  void next_step() {
    ++step_;
    injected_ = changed_ = false;
  }

  rt::Communicator& inner_;
  int64_t step_ = 1;
  bool injected_ = false, changed_ = false;
  std::map<int32_t, Started> started_;
  std::set<int64_t> nonfinite_before_, nonfinite_after_;
  int64_t subnormal_handed_ = 0;
};

// MPI, and the tiny BERT's data prepared once by rank 0 (paths shared with rank 1).
struct World {
  rt::MpiSession session;
  rt::MpiCommunicator comm;
  TinySetup setup;
  World() {
    REQUIRE_MESSAGE(comm.size() == 2, "run as mpirun -np 2");
    if (comm.rank() == 0) setup = make_tiny_setup("mpi_precision");
    setup.dir = from_rank0(comm, setup.dir.string());
    setup.model = from_rank0(comm, setup.model);
    setup.data = from_rank0(comm, setup.data);
  }
};
World& world() {
  static World w;
  return w;
}
bool rank0() { return world().comm.rank() == 0; }

// 3 AdamW steps (lr 1e-3, constant: every step moves the weights) of micro-batch 4 × accumulation 2 per rank, dropout on,
// 32 KiB buckets (several per step, most started during backward), one GEMM thread, a checkpoint every step.
rt::TrainConfig config(ptsim::models::Precision p, const std::string& name) {
  rt::TrainConfig c;
  const TinySetup& s = world().setup;
  c.data_dir = s.data;
  c.model = s.model;
  c.steps = 3;
  c.micro_batch = 4;
  c.grad_accum = 2;
  c.optimizer = ptsim::models::OptimizerKind::adamw;
  c.schedule = rt::LrScheduleKind::constant;  // (poly would give the last step lr 0)
  c.precision = p;
  c.threads = 1;  // GEMM results depend on the thread count
  c.bucket_mib = 0.03125;
  c.checkpoint_dir = (s.dir / name).string();
  c.checkpoint_every = 1;
  c.metrics_path = (s.dir / (name + ".jsonl")).string();
  c.progress_every = 0;
  return c;
}

// run_training on both ranks; the barriers keep rank 1 from starting the next run (a --resume reads the
// checkpoint) before rank 0 has written this run's last checkpoint.
rt::TrainSummary train(const rt::TrainConfig& c, ProbeCommunicator& probe) {
  world().comm.barrier();
  rt::TrainSummary s = rt::run_training(c, probe, nullptr);
  world().comm.barrier();
  return s;
}
// train(c, probe) with the trainer's progress lines written to a temporary file: they are returned.
std::string train_with_progress(const rt::TrainConfig& c, ProbeCommunicator& probe, rt::TrainSummary& summary) {
  std::FILE* progress = std::tmpfile();
  REQUIRE(progress != nullptr);
  world().comm.barrier();
  summary = rt::run_training(c, probe, progress);
  world().comm.barrier();
  std::string text(static_cast<size_t>(std::ftell(progress)), '\0');
  std::rewind(progress);
  text.resize(std::fread(text.data(), 1, text.size(), progress));
  std::fclose(progress);
  return text;
}
rt::TrainSummary train(const rt::TrainConfig& c) {
  ProbeCommunicator probe(world().comm);
  return train(c, probe);
}

fs::path step_dir(const rt::TrainConfig& c, int64_t step) { return fs::path(c.checkpoint_dir) / ("step_" + std::to_string(step)); }

// FNV-1a over the names and bytes of a safetensors file's tensors, in file order.
uint64_t tensors_hash(const fs::path& file) {
  const auto f = rt::read_safetensors(file.string());
  uint64_t h = ptsim::core::kFnv1aOffset;
  for (const auto& t : f.tensors) {
    h = ptsim::core::fnv1a64(t.name, h);
    h = ptsim::core::fnv1a64(t.data.data(), t.data.size(), h);
  }
  return h;
}

std::vector<Json> json_lines(const fs::path& path) {
  std::vector<Json> out;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) out.push_back(Json::parse(line));
  return out;
}

Json state_extra(const rt::TrainConfig& c, int64_t step) {
  return Json::parse(read_file(step_dir(c, step) / "state.json")).at("extra");
}

// What a run is pinned by: the bits of each step's loss (mean over micro-steps and ranks, a double) and the
// hashes of the final checkpoint's fp32 masters and optimizer moments.
struct RunBits {
  std::vector<uint64_t> losses;
  uint64_t masters = 0, optimizer = 0;
  bool operator==(const RunBits&) const = default;
};

// Rank 0's 64-bit value on every rank (four 16-bit words through sums, exact in double).
uint64_t from_rank0(rt::Communicator& comm, uint64_t mine) {
  double words[4];
  for (int k = 0; k < 4; ++k) words[k] = comm.rank() == 0 ? static_cast<double>((mine >> (16 * k)) & 0xffffu) : 0.0;
  comm.all_reduce_sum(std::span<double>(words, 4));
  uint64_t out = 0;
  for (int k = 0; k < 4; ++k) out |= static_cast<uint64_t>(words[k]) << (16 * k);
  return out;
}

// The same on every rank: the losses are averaged over ranks, the hashes are of rank 0's checkpoint.
RunBits bits_of(const rt::TrainConfig& c, const rt::TrainSummary& s) {
  RunBits r;
  for (double x : s.losses) r.losses.push_back(std::bit_cast<uint64_t>(x));
  if (rank0()) {
    r.masters = tensors_hash(step_dir(c, c.steps) / "model.safetensors");
    r.optimizer = tensors_hash(step_dir(c, c.steps) / "optimizer.safetensors");
  }
  r.masters = from_rank0(world().comm, r.masters);
  r.optimizer = from_rank0(world().comm, r.optimizer);
  return r;
}

std::string describe(const RunBits& r) {
  std::string t = "losses {";
  for (uint64_t x : r.losses) t += fmt::format("0x{:016x}ull, ", x);
  return t + fmt::format("}}, masters 0x{:016x}ull, optimizer 0x{:016x}ull", r.masters, r.optimizer);
}

// Every checkpoint of the run carries the replica hash both ranks agreed on (the run would have thrown
// otherwise); returns them in step order.
std::vector<std::string> replica_hashes(const rt::TrainConfig& c) {
  std::vector<std::string> out;
  for (int64_t step = 1; step <= c.steps; ++step) {
    const Json extra = state_extra(c, step);
    CHECK_MESSAGE(extra.contains("replica_state_hash"), step_dir(c, step));
    if (extra.contains("replica_state_hash")) out.push_back(extra.at("replica_state_hash").get<std::string>());
  }
  return out;
}

// Whether each rank saw a step in `steps`, as a list over ranks (the same list on every rank).
std::vector<std::set<int64_t>> on_every_rank(const std::set<int64_t>& steps, int64_t max_step) {
  rt::Communicator& comm = world().comm;
  std::vector<double> flags(static_cast<size_t>(comm.size() * max_step), 0.0);
  for (int64_t s : steps)
    if (s >= 1 && s <= max_step) flags[static_cast<size_t>(comm.rank() * max_step + s - 1)] = 1;
  comm.all_reduce_sum(std::span<double>(flags));
  std::vector<std::set<int64_t>> out(static_cast<size_t>(comm.size()));
  for (int r = 0; r < comm.size(); ++r)
    for (int64_t s = 1; s <= max_step; ++s)
      if (flags[static_cast<size_t>(r * max_step + s - 1)] > 0) out[static_cast<size_t>(r)].insert(s);
  return out;
}

}  // namespace

// Recorded from main at 41ecc72 (16-bit activations stored as 16 bits on the CPU; weight copies and
// parameter gradients in fp32 storage holding 16-bit values, the all-reduce summing them as fp32 and
// average() rounding the mean to the 16-bit type), Debian 12's OpenBLAS 0.3.21, one GEMM thread, on the
// project's development machine: `mpirun -np 2 build/tests/runtime/test_train_mpi_precision` printed these
// with describe() (the MESSAGE lines). The replica check this test came with only reads state: with
// 41ecc72's runtime/train/trainer.cpp put back, every bit comparison below passes unchanged (only the
// replica_state_hash checks fail). Compared exactly (no tolerance): the point is that a change of storage
// (weights and gradients as 16 bits, the all-reduce through an fp32 staging buffer, and since then the
// buckets summed in their 16-bit type: for 2 ranks the same bits, docs/executor.md) computes what main
// computes, to the bit, as test_16bit_storage.cpp holds the 16-bit activations to. Another OpenBLAS
// kernel sums the GEMMs in another order and gives other bits at every precision, so the recorded 16-bit
// bits are compared only where the fp32 run reproduces its recorded bits (the same GEMM arithmetic);
// everything else in these tests (ranks agree, overlap = no overlap, skip, resume) holds on every machine.
const RunBits kRecordedFp32{{0x401abf2ef8000000ull, 0x401a98b960000000ull, 0x401ab547e8000000ull},
                            0xd93abfb70c81225full, 0xf27c941c05a3bddeull};
const RunBits kRecordedBf16{{0x401abf23a8000000ull, 0x401a98be20000000ull, 0x401ab564b8000000ull},
                            0xad09904d4b7be6e3ull, 0xeb33672663d8eb7eull};
const RunBits kRecordedFp16{{0x401abf2f18000000ull, 0x401a98b6b8000000ull, 0x401ab54740000000ull},
                            0x69ad2bcae2e1df09ull, 0x0d4f437416796622ull};

const RunBits& fp32_bits() {
  static const RunBits bits = [] {
    const rt::TrainConfig c = config(ptsim::models::Precision::fp32, "fp32");
    const RunBits b = bits_of(c, train(c));
    MESSAGE("fp32, 2 ranks: " << describe(b));
    return b;
  }();
  return bits;
}
bool recorded_machine() {
  const bool same = fp32_bits() == kRecordedFp32;
  if (!same) MESSAGE("fp32 does not give the recorded bits here (another GEMM kernel): recorded 16-bit bits not compared");
  return same;
}

// The checkpoint files of two runs at `step`, byte for byte (rank 0).
void check_same_checkpoint_files(const rt::TrainConfig& a, const rt::TrainConfig& b, int64_t step) {
  for (const char* file : {"model.safetensors", "optimizer.safetensors"}) {
    const std::string x = read_file(step_dir(a, step) / file);
    const std::string y = read_file(step_dir(b, step) / file);
    CHECK_MESSAGE(!x.empty(), std::string(file));
    CHECK_MESSAGE(x == y, file << " at step " << step << " differs between " << a.checkpoint_dir << " and " << b.checkpoint_dir);
  }
}

TEST_CASE("mpi bf16, 2 ranks: ranks agree at every checkpoint; the recorded bits; --no-comm-overlap gives the same bits") {
  const bool machine = recorded_machine();
  const rt::TrainConfig overlap = config(ptsim::models::Precision::bf16, "bf16");
  rt::TrainConfig after = config(ptsim::models::Precision::bf16, "bf16_after");
  after.comm_overlap = false;
  const RunBits a = bits_of(overlap, train(overlap));
  const RunBits b = bits_of(after, train(after));
  MESSAGE("bf16, 2 ranks: " << describe(a));
  CHECK(a.losses.size() == 3);
  CHECK(a == b);
  if (machine) CHECK(a == kRecordedBf16);
  CHECK(a.losses != fp32_bits().losses);  // the bf16 run rounded something
  if (rank0()) {
    check_same_checkpoint_files(overlap, after, 3);
    CHECK(replica_hashes(overlap) == replica_hashes(after));
  }
}

TEST_CASE("mpi fp16, 2 ranks, dynamic scale 2^16 (no overflow): recorded bits; the scale and skip count agree") {
  const bool machine = recorded_machine();
  ProbeCommunicator probe(world().comm), probe_after(world().comm);
  const rt::TrainConfig overlap = config(ptsim::models::Precision::fp16, "fp16");
  rt::TrainConfig after = config(ptsim::models::Precision::fp16, "fp16_after");
  after.comm_overlap = false;
  const RunBits a = bits_of(overlap, train(overlap, probe));
  const RunBits b = bits_of(after, train(after, probe_after));
  MESSAGE("fp16, 2 ranks: " << describe(a));
  CHECK(a == b);
  if (machine) CHECK(a == kRecordedFp16);
  CHECK(a.losses != fp32_bits().losses);
  // No bucket of either rank held an inf or NaN, before or after the sum (2^16 is a scale without overflow).
  for (const auto& steps : on_every_rank(probe.nonfinite_before(), 3)) CHECK(steps.empty());
  for (const auto& steps : on_every_rank(probe.nonfinite_after(), 3)) CHECK(steps.empty());
  if (rank0()) {
    check_same_checkpoint_files(overlap, after, 3);
    // The scaler is part of the state the ranks agreed on (replica_state_hash), so rank 0's numbers are both's.
    CHECK(replica_hashes(overlap) == replica_hashes(after));
    for (const Json& line : json_lines(overlap.metrics_path)) {
      CHECK(line.at("loss_scale") == 65536.0);
      CHECK(line.at("skipped_steps") == 0);
      CHECK_FALSE(line.contains("skipped"));
    }
    const Json scaler = state_extra(overlap, 3).at("loss_scaler");
    CHECK(scaler.at("scale") == 65536.0);
    CHECK(scaler.at("skipped_steps") == 0);
    CHECK(scaler.at("growth_tracker") == 3);
  }
}

// The 2-rank claim of docs/executor.md ("Mixed precision"): dividing each 16-bit bucket by 2 and summing it
// in its type gives the fp32 staging's bits, except where a half is subnormal in the type. bf16's start at
// 2^-126 (none here): the same bits. fp16's at 2^-14: this run hands the sum such halves (tiny gradients even
// × the loss scale 2^16), so its bits may differ, and differ only if it did. And the trainer says, once and
// on rank 0 only, when a communicator falls back to the staging.
TEST_CASE("mpi bf16 and fp16, 2 ranks: the same bits as through fp32 staging; the staging fallback is reported") {
  const std::string reported = "cannot sum 16-bit gradients in their type";
  for (ptsim::models::Precision p : {ptsim::models::Precision::bf16, ptsim::models::Precision::fp16}) {
    const std::string name = ptsim::models::to_string(p);
    CAPTURE(name);
    const rt::TrainConfig native_config = config(p, name + "_native");
    const rt::TrainConfig staged_config = config(p, name + "_staged");
    ProbeCommunicator native(world().comm), staged(world().comm);
    staged.refuse_16bit = true;
    rt::TrainSummary native_summary, staged_summary;
    const std::string native_progress = train_with_progress(native_config, native, native_summary);
    const std::string staged_progress = train_with_progress(staged_config, staged, staged_summary);
    const RunBits native_bits = bits_of(native_config, native_summary);
    const RunBits staged_bits = bits_of(staged_config, staged_summary);
    MESSAGE(name << ": divided first " << describe(native_bits) << "; staged " << describe(staged_bits)
                 << "; fp16 subnormals handed to the sum on this rank: " << native.subnormal_handed());
    if (p == ptsim::models::Precision::bf16) CHECK(native_bits == staged_bits);
    else CHECK((native_bits == staged_bits || native.subnormal_handed() > 0));
    CHECK(native_progress.find(reported) == std::string::npos);
    const size_t at = staged_progress.find(reported);
    CHECK((at != std::string::npos) == rank0());  // run_training prints progress on rank 0 only
    if (at != std::string::npos) CHECK(staged_progress.find(reported, at + 1) == std::string::npos);  // once
  }
}

TEST_CASE("mpi fp16, 2 ranks: an overflow on rank 1 only is skipped by both ranks; state unchanged; scale halved on both") {
  // +inf in rank 1's gradients of step 2 going into the sum (what an fp16 overflow in its backward leaves):
  // the sum is inf on both ranks, so both see a non-finite global norm and skip. Rank 0, which writes the
  // metrics and the checkpoint, had finite gradients of its own.
  ProbeCommunicator probe(world().comm);
  probe.inf_before_sum = {1, 2};
  const rt::TrainConfig c = config(ptsim::models::Precision::fp16, "fp16_overflow");
  const rt::TrainSummary s = train(c, probe);
  CHECK(s.last_step == 3);
  const auto before = on_every_rank(probe.nonfinite_before(), 3);
  const auto after = on_every_rank(probe.nonfinite_after(), 3);
  CHECK(before[0].empty());
  CHECK(before[1] == std::set<int64_t>{2});
  CHECK(after[0] == std::set<int64_t>{2});
  CHECK(after[1] == std::set<int64_t>{2});
  if (!rank0()) return;
  const std::vector<Json> lines = json_lines(c.metrics_path);
  REQUIRE(lines.size() == 3);
  CHECK_FALSE(lines[0].contains("skipped"));
  CHECK(lines[1].at("skipped") == true);
  CHECK(lines[1].at("grad_norm").is_null());
  CHECK(lines[1].at("skipped_steps") == 1);
  CHECK(lines[1].at("loss_scale") == 65536.0);  // the scale step 2 ran with
  CHECK(lines[2].at("loss_scale") == 32768.0);  // halved for step 3
  CHECK(lines[2].at("skipped_steps") == 1);
  CHECK_FALSE(lines[2].contains("skipped"));
  // Both ranks agreed on the state after every step (replica_state_hash), and after the skipped step it is
  // the state before it: masters and moments bit-identical, the optimizer's step counter not advanced.
  const std::vector<std::string> hashes = replica_hashes(c);
  CHECK(hashes.size() == 3);
  for (const char* file : {"model.safetensors", "optimizer.safetensors"}) {
    CHECK_MESSAGE(tensors_hash(step_dir(c, 2) / file) == tensors_hash(step_dir(c, 1) / file), std::string(file));
    CHECK_MESSAGE(tensors_hash(step_dir(c, 3) / file) != tensors_hash(step_dir(c, 2) / file), std::string(file));  // step 3 updated
  }
  const Json state2 = Json::parse(read_file(step_dir(c, 2) / "state.json"));
  CHECK(state2.at("optimizer_step") == 1);
  const Json& scaler = state2.at("extra").at("loss_scaler");
  CHECK(scaler.at("scale") == 32768.0);
  CHECK(scaler.at("skipped_steps") == 1);
  CHECK(scaler.at("growth_tracker") == 0);
  CHECK(Json::parse(read_file(step_dir(c, 3) / "state.json")).at("optimizer_step") == 2);
}

TEST_CASE("mpi bf16, 2 ranks: 4 steps straight equal 2 steps + --resume + 2 steps, byte for byte") {
  rt::TrainConfig straight = config(ptsim::models::Precision::bf16, "bf16_straight");
  straight.steps = 4;
  rt::TrainConfig split = config(ptsim::models::Precision::bf16, "bf16_split");
  split.steps = 4;
  split.stop_after = 2;
  const rt::TrainSummary a = train(straight);
  const rt::TrainSummary b1 = train(split);
  split.stop_after = 0;
  split.resume = true;
  const rt::TrainSummary b2 = train(split);
  CHECK(b1.last_step == 2);
  CHECK(b2.first_step == 3);
  std::vector<double> b = b1.losses;
  b.insert(b.end(), b2.losses.begin(), b2.losses.end());
  CHECK(a.losses == b);  // exact
  if (!rank0()) return;
  check_same_checkpoint_files(straight, split, 4);
  CHECK(replica_hashes(straight) == replica_hashes(split));
  const std::vector<Json> x = json_lines(straight.metrics_path), y = json_lines(split.metrics_path);
  REQUIRE(x.size() == 4);
  REQUIRE(y.size() == 4);
  for (size_t i = 0; i < x.size(); ++i) CHECK(x[i].at("loss").get<double>() == y[i].at("loss").get<double>());
}

TEST_CASE("mpi: ranks that diverge are caught at the next checkpoint, on both ranks, and nothing is saved") {
  // Rank 1's summed gradient of step 2 changed after the sum (what a collective that reduced differently on
  // one rank does): its masters and moments differ from rank 0's after step 2.
  ProbeCommunicator probe(world().comm);
  probe.change_after_sum = {1, 2};
  const rt::TrainConfig c = config(ptsim::models::Precision::bf16, "diverged");
  std::string error;
  try {
    train(c, probe);
  } catch (const std::runtime_error& e) {
    error = e.what();
  }
  world().comm.barrier();
  CHECK_MESSAGE(error.find("data-parallel ranks diverged: the state after step 2") != std::string::npos, error);
  CHECK_MESSAGE(error.find(fmt::format("on rank {} of 2", world().comm.rank())) != std::string::npos, error);
  if (rank0()) {
    CHECK(fs::exists(step_dir(c, 1) / "model.safetensors"));
    CHECK_FALSE(fs::exists(step_dir(c, 2)));
  }
}
