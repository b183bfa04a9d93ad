// runtime/comm/mpi_communicator.cpp — MpiSession and MpiCommunicator (see the header).
// Built only when meson found MPI (runtime/meson.build), which also defines PTSIM_HAVE_MPI.
#include "runtime/comm/mpi_communicator.hpp"

#include <fmt/format.h>

#include <limits>

#include <algorithm>
#include <climits>
#include <cstring>
#include <cstdlib>
#include <stdexcept>

#ifdef PTSIM_HAVE_MPI
// The C API only: skip the deprecated C++ bindings (Open MPI, MPICH), which warn under -Wextra.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#endif

#include "runtime/exec/backend.hpp"
#include "runtime/exec/math/half_bits.hpp"
#include "runtime/exec/precision.hpp"  // defines: is_16bit_float
#include "runtime/exec/span_elements.hpp"

namespace ptsim::runtime {

#ifdef PTSIM_HAVE_MPI

namespace {

void check_mpi(int code, const char* call) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  MPI_Error_string(code, text, &length);
  throw std::runtime_error(fmt::format("{} failed: {}", call, std::string(text, static_cast<size_t>(length))));
}

// The 16-bit sums (MPI_Op_create, commutative): inout[i] ← round(widen(in[i]) + widen(inout[i])), the fp32
// add rounded to nearest even once per pairwise add (math/half_bits.hpp, the conversions of the whole
// runtime). The elements are MPI_UINT16_T (2 bytes, carried as bits).
template <float (*widen)(uint16_t), uint16_t (*narrow)(float)>
void sum_16bit(void* in, void* inout, int* len, MPI_Datatype*) {
  const auto* a = static_cast<const uint16_t*>(in);
  auto* b = static_cast<uint16_t*>(inout);
  for (int i = 0; i < *len; ++i) b[i] = narrow(widen(a[i]) + widen(b[i]));
}

}  // namespace

// The two 16-bit sum ops of a communicator (MPI_Op_create in its constructor, MPI_Op_free in its destructor).
struct MpiSumOps {
  MPI_Op bf16 = MPI_OP_NULL;
  MPI_Op f16 = MPI_OP_NULL;
};

namespace {

// An element type as MPI sums it: the datatype and the op.
struct MpiSum {
  MPI_Datatype type;
  MPI_Op op;
};

// MPI counts are int: split big buffers into chunks of at most INT_MAX elements.
void all_reduce_in_place(void* data, size_t count, size_t element_bytes, MpiSum sum) {
  for (size_t done = 0; done < count;) {
    const size_t n = std::min<size_t>(count - done, static_cast<size_t>(INT_MAX));
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, static_cast<std::byte*>(data) + done * element_bytes, static_cast<int>(n),
                            sum.type, sum.op, MPI_COMM_WORLD),
              "MPI_Allreduce");
    done += n;
  }
}

// MPI_Iallreduce in place over chunks of at most INT_MAX elements; one request per chunk.
void start_in_place(void* data, size_t count, size_t element_bytes, MpiSum sum, std::vector<MPI_Request>& requests) {
  for (size_t done = 0; done < count;) {
    const size_t n = std::min<size_t>(count - done, static_cast<size_t>(INT_MAX));
    requests.emplace_back();
    check_mpi(MPI_Iallreduce(MPI_IN_PLACE, static_cast<std::byte*>(data) + done * element_bytes, static_cast<int>(n),
                             sum.type, sum.op, MPI_COMM_WORLD, &requests.back()),
              "MPI_Iallreduce");
    done += n;
  }
}

}  // namespace

// A started collective: its MPI requests and, for a backend that is not host-addressable, the host copy it
// reduces (copied back to `span` in wait).
struct MpiCommunicator::Pending {
  std::vector<MPI_Request> requests;
  std::vector<std::byte> host;
  Backend* backend = nullptr;
  DeviceSpan span;
};

MpiSession::MpiSession() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) return;
  int provided = 0;
  check_mpi(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
  owns_ = true;
  if (provided < MPI_THREAD_FUNNELED)
    throw std::runtime_error(fmt::format("MPI_Init_thread gave thread level {} (< MPI_THREAD_FUNNELED)", provided));
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
}

MpiSession::~MpiSession() {
  if (!owns_) return;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

std::string MpiSession::library_version() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int length = 0;
  MPI_Get_library_version(text, &length);
  std::string s(text, static_cast<size_t>(length));
  if (auto nl = s.find('\n'); nl != std::string::npos) s.resize(nl);
  if (auto comma = s.find(','); comma != std::string::npos) s.resize(comma);
  return s;
}

void MpiSession::abort(int code) {
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);  // MPI_Abort does not return; this keeps [[noreturn]] honest if it did
}

MpiCommunicator::MpiCommunicator() {
  check_mpi(MPI_Comm_rank(MPI_COMM_WORLD, &rank_), "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(MPI_COMM_WORLD, &size_), "MPI_Comm_size");
  sum_ops_ = std::make_unique<MpiSumOps>();
  check_mpi(MPI_Op_create(&sum_16bit<math::bf16_to_float, math::float_to_bf16>, 1, &sum_ops_->bf16),
            "MPI_Op_create (bf16 sum)");
  check_mpi(MPI_Op_create(&sum_16bit<math::f16_to_float, math::float_to_f16>, 1, &sum_ops_->f16),
            "MPI_Op_create (f16 sum)");
}

MpiCommunicator::~MpiCommunicator() {
  // A request left behind (an exception between start and wait) must finish before its memory goes.
  for (auto& p : pending_)
    if (p) MPI_Waitall(static_cast<int>(p->requests.size()), p->requests.data(), MPI_STATUSES_IGNORE);
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  for (MPI_Op* op : {&sum_ops_->bf16, &sum_ops_->f16})
    if (*op != MPI_OP_NULL) MPI_Op_free(op);
}

bool MpiCommunicator::sums_natively(models::DType dtype) const { return is_summable_float(dtype); }

namespace {
// How MPI sums elements of `dtype`: MPI_SUM over MPI_FLOAT / MPI_DOUBLE, the 16-bit ops over MPI_UINT16_T.
MpiSum mpi_sum(models::DType dtype, const MpiSumOps& ops) {
  switch (dtype) {
    case models::DType::f32: return {MPI_FLOAT, MPI_SUM};
    case models::DType::f64: return {MPI_DOUBLE, MPI_SUM};
    case models::DType::bf16: return {MPI_UINT16_T, ops.bf16};
    case models::DType::f16: return {MPI_UINT16_T, ops.f16};
    default: break;
  }
  throw std::invalid_argument(fmt::format("MpiCommunicator: cannot sum elements of dtype {} (f32, f64, f16, bf16)",
                                          models::to_string(dtype)));
}
}  // namespace

CommRequest MpiCommunicator::start_all_reduce_sum(Backend& backend, const DeviceSpan& data, models::DType dtype,
                                                  Stream stream) {
  const MpiSum sum = mpi_sum(dtype, *sum_ops_);
  const size_t count = whole_element_count(data, dtype, "MpiCommunicator");
  const auto element = static_cast<size_t>(models::dtype_bytes(dtype));
  backend.synchronize(stream);  // the host collective reads the memory from now on
  auto p = std::make_unique<Pending>();
  std::byte* bytes = nullptr;
  if (backend.host_addressable()) {
    bytes = static_cast<std::byte*>(backend.kernel_address(data));
  } else {
    p->host.resize(data.bytes);
    backend.copy_to_host(p->host.data(), data);
    p->backend = &backend;
    p->span = data;
    bytes = p->host.data();
  }
  start_in_place(bytes, count, element, sum, p->requests);
  pending_.push_back(std::move(p));
  return CommRequest{static_cast<int32_t>(pending_.size() - 1)};
}

void MpiCommunicator::wait(CommRequest request) {
  const auto id = static_cast<size_t>(request.id);
  if (!request.valid() || id >= pending_.size() || !pending_[id])
    throw std::logic_error(fmt::format("MpiCommunicator::wait: request {} was not started or was waited for already",
                                       request.id));
  std::unique_ptr<Pending> p = std::move(pending_[id]);
  check_mpi(MPI_Waitall(static_cast<int>(p->requests.size()), p->requests.data(), MPI_STATUSES_IGNORE), "MPI_Waitall");
  if (p->backend) p->backend->copy_to_device(p->span, p->host.data());
  // Ids are indices: once nothing is in flight the table starts over (one step's buckets at a time).
  if (std::all_of(pending_.begin(), pending_.end(), [](const auto& q) { return !q; })) pending_.clear();
}

void MpiCommunicator::progress() {
  for (auto& p : pending_) {
    if (!p) continue;
    int done = 0;
    check_mpi(MPI_Testall(static_cast<int>(p->requests.size()), p->requests.data(), &done, MPI_STATUSES_IGNORE),
              "MPI_Testall");
  }
}

void MpiCommunicator::all_reduce_sum(std::span<float> data) {
  all_reduce_in_place(data.data(), data.size(), sizeof(float), {MPI_FLOAT, MPI_SUM});
}
void MpiCommunicator::all_reduce_sum(std::span<double> data) {
  all_reduce_in_place(data.data(), data.size(), sizeof(double), {MPI_DOUBLE, MPI_SUM});
}
void MpiCommunicator::all_reduce_sum_16bit(std::span<uint16_t> data, models::DType dtype) {
  if (!is_16bit_float(dtype))
    throw std::invalid_argument(fmt::format("MpiCommunicator::all_reduce_sum_16bit: dtype {} is not f16 or bf16",
                                            models::to_string(dtype)));
  all_reduce_in_place(data.data(), data.size(), sizeof(uint16_t), mpi_sum(dtype, *sum_ops_));
}
void MpiCommunicator::barrier() { check_mpi(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier"); }

std::vector<std::string> MpiCommunicator::gather_strings_to_root(const std::string& mine) {
  if (mine.size() > static_cast<size_t>(std::numeric_limits<int>::max()))
    throw std::runtime_error(fmt::format("rank {}: {} bytes to gather exceed MPI's int count", rank_, mine.size()));
  int length = static_cast<int>(mine.size());
  std::vector<int> lengths(rank_ == 0 ? static_cast<size_t>(size_) : 0);
  check_mpi(MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0, MPI_COMM_WORLD), "MPI_Gather");
  std::vector<int> offsets(lengths.size());
  size_t total = 0;
  for (size_t r = 0; r < lengths.size(); ++r) {
    if (total > static_cast<size_t>(std::numeric_limits<int>::max()))
      throw std::runtime_error("gathered results exceed MPI's int displacement (2 GiB)");
    offsets[r] = static_cast<int>(total);
    total += static_cast<size_t>(lengths[r]);
  }
  std::string all(total, '\0');
  check_mpi(MPI_Gatherv(mine.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(), MPI_CHAR, 0,
                        MPI_COMM_WORLD),
            "MPI_Gatherv");
  std::vector<std::string> out;
  for (size_t r = 0; r < lengths.size(); ++r) out.push_back(all.substr(static_cast<size_t>(offsets[r]), static_cast<size_t>(lengths[r])));
  return out;
}

#endif  // PTSIM_HAVE_MPI

}  // namespace ptsim::runtime
