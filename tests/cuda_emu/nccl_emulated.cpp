// tests/cuda_emu/nccl_emulated.cpp — the NCCL shim (include/nccl.h; docs/cuda-emulation.md, "The NCCL shim"):
// communicators over MPI, one MPI process per emulated GPU (without MPI: one rank). Init and ncclAllReduce
// exchange what every rank was given (unique id, rank, nranks; count, type, op) and refuse, on every rank,
// what NCCL would hang or corrupt on; a rank's own bad arguments travel in that exchange too, so every rank
// refuses them together. The sum is in NCCL rank order, each partial rounded to the element type.
// A non-blocking call (config.blocking = 0) returns ncclInProgress and is carried forward by
// ncclCommGetAsyncError, whose first poll after a call always reports ncclInProgress. Faults for tests:
// PTSIM_EMU_NCCL_FAULT (nccl_emulated_fault.hpp). Single-threaded use only, like the rest of the emulator.
#include <cuda_runtime_api.h>  // the emulator's: cuda_emu::stall_stream
#include <nccl.h>

#include <fmt/format.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <unistd.h>

#ifdef PTSIM_HAVE_MPI
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#endif

#include "nccl_emulated_fault.hpp"
#include "nccl_emulated_state.hpp"
#include "nccl_emulated_sum.hpp"

namespace {

using cuda_emu::nccl::Fault;

// ncclGetUniqueId's ids start with this, so an id that never came from it (a default ncclUniqueId{}, the
// broadcast missing) is recognised.
constexpr char kIdMagic[] = "ptsim cuda_emu NCCL id";
constexpr unsigned kConfigMagic = 0xcafebeef;

// One call's remaining work: steps run in order; a step that starts an MPI request returns ncclInProgress and
// the next advance waits for the request before running the following step.
struct Operation {
  std::vector<std::function<ncclResult_t(ncclComm&)>> steps;
  size_t next = 0;
#ifdef PTSIM_HAVE_MPI
  MPI_Request request = MPI_REQUEST_NULL;
#endif
  std::vector<char> mine, all;  // what this rank sends and what every rank sent (by MPI rank)
  bool refused = false;         // it ended in a refusal every rank made alike: the communicator stays usable
};

// What a rank found wrong with its own arguments. It travels in the rank's record, so that every rank refuses
// the call together instead of the others waiting for a rank that already returned.
struct LocalRefusal {
  int32_t result = ncclSuccess;
  char text[256] = {};
};

}  // namespace

struct ncclComm {
  int rank = 0, nranks = 1;
  bool blocking = true;
  bool finalized = false;
  const char* dead = nullptr;      // "destroyed" or "aborted": any later use is refused
  ncclResult_t failure = ncclSuccess;  // an asynchronous error: the communicator must be aborted
  std::unique_ptr<Operation> op;   // the call in progress
  // Aborted calls: kept, never freed, because a pending MPI request may still write their buffers (MPI
  // requests cannot be cancelled; a late peer completes them).
  std::vector<std::unique_ptr<Operation>> abandoned;
  bool fresh = false;              // a non-blocking call has not been polled yet
  bool last_refused = false;       // the last call that failed was refused alike on every rank
  std::optional<Fault> fault;
  int64_t all_reduces = 0;
  bool hung = false;  // a hung all-reduce (PTSIM_EMU_NCCL_FAULT=hang): every later one hangs behind it
  std::vector<std::shared_ptr<cuda_emu::StreamStall>> stalls;  // theirs, released by ncclCommAbort
  std::vector<int> mpi_rank_of;    // [NCCL rank]: the MPI_COMM_WORLD rank that holds it (set by init)
#ifdef PTSIM_HAVE_MPI
  MPI_Comm mpi = MPI_COMM_NULL;    // a duplicate of MPI_COMM_WORLD: the shim's traffic never meets the caller's
#endif
};

namespace {

std::string last_error;                              // ncclGetLastError's: global, as NCCL's is
std::vector<std::unique_ptr<ncclComm>> every_comm;   // never freed: a dead handle stays recognisable
std::set<const ncclComm*> known_comms;

// last_error as a refusal (`result` not ncclSuccess), or none.
LocalRefusal refusal_from(ncclResult_t result) {
  LocalRefusal refusal;
  refusal.result = result;
  if (result != ncclSuccess) std::strncpy(refusal.text, last_error.c_str(), sizeof refusal.text - 1);
  return refusal;
}

template <class... Args>
ncclResult_t fail(ncclResult_t result, fmt::format_string<Args...> text, Args&&... args) {
  last_error = fmt::format(text, std::forward<Args>(args)...);
  return result;
}

ncclResult_t check_handle(const ncclComm* comm, const char* call) {
  if (comm == nullptr) return fail(ncclInvalidArgument, "{}: comm is NULL", call);
  if (known_comms.count(comm) == 0)
    return fail(ncclInvalidArgument, "{}: comm {} is not a communicator from ncclCommInitRankConfig", call,
                static_cast<const void*>(comm));
  if (comm->dead != nullptr)
    return fail(ncclInvalidArgument, "{}: comm {} was {} (use after ncclComm{})", call, static_cast<const void*>(comm),
                comm->dead, comm->dead[0] == 'd' ? "Destroy" : "Abort");
  return ncclSuccess;
}

// What a new call on `comm` needs: a live communicator with no call in progress and no asynchronous error.
ncclResult_t check_usable(const ncclComm* comm, const char* call) {
  if (ncclResult_t r = check_handle(comm, call); r != ncclSuccess) return r;
  if (comm->op != nullptr || comm->fresh)
    return fail(ncclInvalidUsage, "{}: the previous call on this communicator is still in progress "
                "(poll ncclCommGetAsyncError until it is no longer ncclInProgress)", call);
  if (comm->failure != ncclSuccess)
    return fail(ncclInvalidUsage, "{}: the communicator has an asynchronous error ({}); it must be aborted", call,
                ncclGetErrorString(comm->failure));
  if (comm->finalized) return fail(ncclInvalidUsage, "{}: the communicator was finalized", call);
  return ncclSuccess;
}

// Runs `comm`'s operation on as far as it goes; `wait`: blocks on MPI until it is done.
ncclResult_t advance(ncclComm& comm, bool wait) {
  Operation& op = *comm.op;
  for (;;) {
#ifdef PTSIM_HAVE_MPI
    if (op.request != MPI_REQUEST_NULL) {
      int done = 0;
      const int rc = wait ? MPI_Wait(&op.request, MPI_STATUS_IGNORE) : MPI_Test(&op.request, &done, MPI_STATUS_IGNORE);
      if (rc != MPI_SUCCESS) {
        comm.op.reset();
        return fail(ncclSystemError, "the emulated NCCL's MPI transport failed (MPI error {})", rc);
      }
      if (!wait && !done) return ncclInProgress;
    }
#endif
    if (op.next == op.steps.size()) {
      comm.op.reset();
      return ncclSuccess;
    }
    const ncclResult_t r = op.steps[op.next++](comm);
    if (r != ncclSuccess && r != ncclInProgress) {
      comm.last_refused = op.refused;
      comm.op.reset();
      return r;
    }
  }
}

// Starts `op` on `comm`: a blocking communicator runs it to its end (its error is the call's); a non-blocking
// one returns ncclInProgress and leaves it to ncclCommGetAsyncError.
ncclResult_t start(ncclComm& comm, std::unique_ptr<Operation> op) {
  comm.op = std::move(op);
  comm.last_refused = false;
  if (!comm.blocking) {
    comm.fresh = true;
    return ncclInProgress;
  }
  const ncclResult_t r = advance(comm, true);
  if (r != ncclSuccess && !comm.last_refused) comm.failure = r;
  return r;
}

#ifdef PTSIM_HAVE_MPI
bool mpi_running() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  return initialized != 0 && finalized == 0;
}

// A step that gathers every rank's `op.mine` into `op.all` (all the same size).
ncclResult_t start_allgather(ncclComm& comm, Operation& op) {
  if (op.mine.size() > static_cast<size_t>(INT32_MAX))
    return fail(ncclInvalidUsage, "the emulated NCCL moves at most 2 GiB per rank and call ({} bytes asked)",
                op.mine.size());
  int world = 1;  // not comm.nranks: init gathers before nranks is known to match the world
  MPI_Comm_size(comm.mpi, &world);
  op.all.resize(op.mine.size() * static_cast<size_t>(world));
  const int rc = MPI_Iallgather(op.mine.data(), static_cast<int>(op.mine.size()), MPI_BYTE, op.all.data(),
                                static_cast<int>(op.mine.size()), MPI_BYTE, comm.mpi, &op.request);
  if (rc != MPI_SUCCESS) return fail(ncclSystemError, "MPI_Iallgather failed (MPI error {})", rc);
  return ncclInProgress;
}
#endif

// --- ncclCommInitRankConfig -------------------------------------------------------------------------------

struct InitRecord {
  ncclUniqueId id;
  int rank, nranks;
  LocalRefusal refusal;
};

// Any rank's local refusal, as every rank's error, naming the rank (records by MPI rank).
template <class Record>
ncclResult_t check_refusals(const std::vector<Record>& records, const char* call, Operation& op) {
  for (size_t m = 0; m < records.size(); ++m) {
    const LocalRefusal& refusal = records[m].refusal;
    if (refusal.result == ncclSuccess) continue;
    op.refused = true;
    return fail(static_cast<ncclResult_t>(refusal.result), "{} (MPI rank {}'s {}; refused on every rank)",
                refusal.text, m, call);
  }
  return ncclSuccess;
}

bool id_from_get_unique_id(const ncclUniqueId& id) { return std::memcmp(id.internal, kIdMagic, sizeof kIdMagic) == 0; }

// Every rank's record (by MPI rank) against the others: the same id from ncclGetUniqueId, the same nranks, each
// rank once. Fills comm.mpi_rank_of.
ncclResult_t check_init_records(ncclComm& comm, const std::vector<InitRecord>& records) {
  if (records.size() != static_cast<size_t>(comm.nranks))  // a rank with another nranks refused it locally
    return fail(ncclInvalidUsage, "ncclCommInitRankConfig: nranks {} but there are {} MPI processes", comm.nranks,
                records.size());
  for (size_t m = 0; m < records.size(); ++m)
    if (!id_from_get_unique_id(records[m].id))
      return fail(ncclInvalidUsage, "ncclCommInitRankConfig: the unique id given to rank {} did not come from "
                  "ncclGetUniqueId (was rank 0's id broadcast to every rank?)", records[m].rank);
  for (size_t m = 1; m < records.size(); ++m) {
    if (std::memcmp(&records[m].id, &records[0].id, sizeof(ncclUniqueId)) != 0)
      return fail(ncclInvalidUsage, "ncclCommInitRankConfig: ranks {} and {} were given different unique ids (every "
                  "rank must get the id rank 0's ncclGetUniqueId made: a missing broadcast?)", records[0].rank,
                  records[m].rank);
    if (records[m].nranks != records[0].nranks)
      return fail(ncclInvalidUsage, "ncclCommInitRankConfig: rank {} was given nranks {}, rank {} nranks {}",
                  records[0].rank, records[0].nranks, records[m].rank, records[m].nranks);
  }
  comm.mpi_rank_of.assign(static_cast<size_t>(comm.nranks), -1);
  for (size_t m = 0; m < records.size(); ++m) {
    int& holder = comm.mpi_rank_of[static_cast<size_t>(records[m].rank)];
    if (holder >= 0)
      return fail(ncclInvalidUsage, "ncclCommInitRankConfig: rank {} was given to two processes (MPI ranks {} and {})",
                  records[m].rank, holder, m);
    holder = static_cast<int>(m);
  }
  return ncclSuccess;
}

std::unique_ptr<Operation> init_operation(const ncclUniqueId& id, const LocalRefusal& refusal) {
  auto op = std::make_unique<Operation>();
  Operation* o = op.get();
#ifdef PTSIM_HAVE_MPI
  if (mpi_running()) {
    InitRecord mine{id, 0, 0, refusal};
    op->steps.push_back([o](ncclComm& comm) {
      const int rc = MPI_Comm_idup(MPI_COMM_WORLD, &comm.mpi, &o->request);
      if (rc != MPI_SUCCESS) return fail(ncclSystemError, "MPI_Comm_idup failed (MPI error {})", rc);
      return ncclInProgress;
    });
    op->steps.push_back([o, mine](ncclComm& comm) mutable {
      mine.rank = comm.rank;
      mine.nranks = comm.nranks;
      o->mine.assign(reinterpret_cast<const char*>(&mine), reinterpret_cast<const char*>(&mine) + sizeof mine);
      return start_allgather(comm, *o);
    });
    op->steps.push_back([o](ncclComm& comm) {
      std::vector<InitRecord> records(o->all.size() / sizeof(InitRecord));
      std::memcpy(records.data(), o->all.data(), o->all.size());
      if (ncclResult_t r = check_refusals(records, "ncclCommInitRankConfig", *o); r != ncclSuccess) return r;
      return check_init_records(comm, records);
    });
    return op;
  }
#endif
  op->steps.push_back([o, id, refusal](ncclComm& comm) {
    const std::vector<InitRecord> records{InitRecord{id, comm.rank, comm.nranks, refusal}};
    if (ncclResult_t r = check_refusals(records, "ncclCommInitRankConfig", *o); r != ncclSuccess) return r;
    return check_init_records(comm, records);
  });
  return op;
}

// The world the shim runs in must be the communicator's: nranks MPI processes (or one process without MPI).
ncclResult_t check_world(int nranks) {
  int world = 1;
#ifdef PTSIM_HAVE_MPI
  if (mpi_running()) MPI_Comm_size(MPI_COMM_WORLD, &world);
#endif
  if (nranks != world)
    return fail(ncclInvalidUsage, "ncclCommInitRankConfig: nranks {} but the emulated NCCL runs one rank per MPI "
                "process and there are {} (MPI_COMM_WORLD; 1 without MPI)", nranks, world);
  return ncclSuccess;
}

ncclResult_t blocking_from(const ncclConfig_t* config, bool& blocking) {
  blocking = true;
  if (config == nullptr) return ncclSuccess;
  if (config->size != sizeof(ncclConfig_t) || config->magic != kConfigMagic)
    return fail(ncclInvalidArgument, "ncclCommInitRankConfig: config was not initialised with NCCL_CONFIG_INITIALIZER "
                "(size {}, magic {:#x})", config->size, config->magic);
  if (config->blocking == NCCL_CONFIG_UNDEF_INT || config->blocking == 1) return ncclSuccess;
  if (config->blocking != 0)
    return fail(ncclInvalidArgument, "ncclCommInitRankConfig: config.blocking is {}; expected 0 or 1", config->blocking);
  blocking = false;
  return ncclSuccess;
}

// Everything init can check on this rank alone, in order; the first failure is the rank's refusal.
ncclResult_t check_init_arguments(int nranks, int rank, const ncclConfig_t* config, bool& blocking,
                                  std::optional<Fault>& fault) {
  if (nranks < 1) return fail(ncclInvalidArgument, "ncclCommInitRankConfig: nranks is {}; expected at least 1", nranks);
  if (rank < 0 || rank >= nranks)
    return fail(ncclInvalidArgument, "ncclCommInitRankConfig: rank {} is outside [0, nranks = {})", rank, nranks);
  if (ncclResult_t r = blocking_from(config, blocking); r != ncclSuccess) return r;
  if (ncclResult_t r = check_world(nranks); r != ncclSuccess) return r;
  std::string why;
  if (!cuda_emu::nccl::fault_from_env(fault, why)) return fail(ncclInvalidArgument, "{}", why);
  if (fault && fault->rank >= nranks)
    return fail(ncclInvalidArgument, "PTSIM_EMU_NCCL_FAULT={} names NCCL rank {}, but the communicator has ranks 0 "
                "to {}: the fault would never fire", fault->text, fault->rank, nranks - 1);
  return ncclSuccess;
}

// --- ncclAllReduce ----------------------------------------------------------------------------------------

struct CallRecord {
  uint64_t count;
  int32_t type, op;
  LocalRefusal refusal;
};

ncclResult_t check_buffer(const void* buffer, const char* name, size_t bytes) {
  if (bytes == 0) return ncclSuccess;
  const size_t held = cuda_emu::device_bytes_from(buffer);
  if (held == 0)
    return fail(ncclInvalidArgument, "ncclAllReduce: {} {} is not device memory (inside no emulated cudaMalloc "
                "allocation)", name, buffer);
  if (held < bytes)
    return fail(ncclInvalidArgument, "ncclAllReduce: {} {} has {} bytes of its cudaMalloc allocation from there; "
                "the all-reduce needs {}", name, buffer, held, bytes);
  return ncclSuccess;
}

ncclResult_t check_call(const void* sendbuff, const void* recvbuff, size_t count, ncclDataType_t type, ncclRedOp_t op) {
  if (op < 0 || op >= ncclNumOps) return fail(ncclInvalidArgument, "ncclAllReduce: invalid reduction op {}", int{op});
  if (op != ncclSum)
    return fail(ncclInvalidArgument, "ncclAllReduce: op {} is not emulated (the shim sums: ncclSum only)", int{op});
  const size_t element = cuda_emu::nccl::element_bytes(type);
  if (element == 0)
    return fail(ncclInvalidArgument, "ncclAllReduce: datatype {} is not emulated (expected ncclFloat16, ncclBfloat16, "
                "ncclFloat32 or ncclFloat64)", int{type});
  if (ncclResult_t r = check_buffer(sendbuff, "sendbuff", count * element); r != ncclSuccess) return r;
  return check_buffer(recvbuff, "recvbuff", count * element);
}

ncclResult_t check_call_records(const std::vector<CallRecord>& records, const std::vector<int>& mpi_rank_of) {
  const CallRecord& first = records[static_cast<size_t>(mpi_rank_of[0])];
  for (size_t r = 1; r < mpi_rank_of.size(); ++r) {
    const CallRecord& other = records[static_cast<size_t>(mpi_rank_of[r])];
    if (other.count != first.count || other.type != first.type || other.op != first.op)
      return fail(ncclInvalidUsage, "ncclAllReduce: rank 0 called it with count {}, datatype {}, op {}; rank {} with "
                  "count {}, datatype {}, op {}", first.count, first.type, first.op, r, other.count, other.type, other.op);
  }
  return ncclSuccess;
}

// `refusal`: what check_call found; the call is gathered anyway, so every rank refuses it together.
std::unique_ptr<Operation> all_reduce_operation(const void* sendbuff, void* recvbuff, size_t count,
                                                ncclDataType_t type, [[maybe_unused]] ncclRedOp_t reduction,
                                                const LocalRefusal& refusal) {
  auto op = std::make_unique<Operation>();
  Operation* o = op.get();
  const size_t bytes = count * cuda_emu::nccl::element_bytes(type);
#ifdef PTSIM_HAVE_MPI
  if (mpi_running()) {
    op->steps.push_back([o, count, type, reduction, refusal](ncclComm& comm) {
      const CallRecord mine{count, type, reduction, refusal};
      o->mine.assign(reinterpret_cast<const char*>(&mine), reinterpret_cast<const char*>(&mine) + sizeof mine);
      return start_allgather(comm, *o);
    });
    op->steps.push_back([o, sendbuff, bytes](ncclComm& comm) {
      std::vector<CallRecord> records(static_cast<size_t>(comm.nranks));
      std::memcpy(records.data(), o->all.data(), o->all.size());
      if (ncclResult_t r = check_refusals(records, "ncclAllReduce", *o); r != ncclSuccess) return r;
      if (ncclResult_t r = check_call_records(records, comm.mpi_rank_of); r != ncclSuccess) return r;
      o->mine.assign(static_cast<const char*>(sendbuff), static_cast<const char*>(sendbuff) + bytes);
      return start_allgather(comm, *o);
    });
    op->steps.push_back([o, recvbuff, count, type, bytes](ncclComm& comm) {
      std::vector<const void*> by_nccl_rank;
      for (int m : comm.mpi_rank_of) by_nccl_rank.push_back(o->all.data() + static_cast<size_t>(m) * bytes);
      cuda_emu::nccl::sum_in_rank_order(by_nccl_rank, recvbuff, count, type);
      return ncclSuccess;
    });
    return op;
  }
#endif
  op->steps.push_back([o, sendbuff, recvbuff, count, type, refusal](ncclComm&) {
    if (refusal.result != ncclSuccess) {
      o->refused = true;
      return fail(static_cast<ncclResult_t>(refusal.result), "{}", refusal.text);
    }
    cuda_emu::nccl::sum_in_rank_order({sendbuff}, recvbuff, count, type);
    return ncclSuccess;
  });
  return op;
}

// A hung all-reduce, as on a GPU: the call and its enqueueing finish as a healthy one's, nothing is sent, and
// `stream` never passes it (cuda_emu::stall_stream) until ncclCommAbort. NCCL's kernels on one communicator
// run in order, so every later all-reduce of `comm` hangs behind it (hung).
ncclResult_t hang(ncclComm& comm, cudaStream_t stream) {
  comm.hung = true;
  comm.stalls.push_back(cuda_emu::stall_stream(
      stream, fmt::format("the hung ncclAllReduce #{} of NCCL rank {} (PTSIM_EMU_NCCL_FAULT={})", comm.all_reduces,
                          comm.rank, comm.fault->text)));
  return start(comm, std::make_unique<Operation>());
}

// The fault of PTSIM_EMU_NCCL_FAULT, in place of an all-reduce: the call returns as a healthy one does (an
// asynchronous error is reported by ncclCommGetAsyncError, in either mode), and nothing is sent.
ncclResult_t inject(ncclComm& comm, cudaStream_t stream) {
  if (comm.fault->kind == Fault::Kind::hang) return hang(comm, stream);
  fail(ncclRemoteError, "emulated fault (PTSIM_EMU_NCCL_FAULT={}): rank {}'s ncclAllReduce #{} failed as if a peer's "
       "connection closed", comm.fault->text, comm.rank, comm.all_reduces);
  comm.failure = ncclRemoteError;
  comm.fresh = !comm.blocking;
  return comm.blocking ? ncclSuccess : ncclInProgress;
}

}  // namespace

cuda_emu::nccl::CommunicatorCounts cuda_emu::nccl::communicator_counts() {
  CommunicatorCounts counts;
  for (const auto& comm : every_comm) {
    if (comm->dead == nullptr) ++counts.live;
    else if (std::strcmp(comm->dead, "aborted") == 0) ++counts.aborted;
    else if (comm->finalized) ++counts.finalized_destroyed;
    else ++counts.destroyed_unfinalized;
  }
  return counts;
}

// --- the API ----------------------------------------------------------------------------------------------

ncclResult_t ncclGetVersion(int* version) {
  if (version == nullptr) return fail(ncclInvalidArgument, "ncclGetVersion: version is NULL");
  *version = NCCL_VERSION_CODE;
  return ncclSuccess;
}

ncclResult_t ncclGetUniqueId(ncclUniqueId* id) {
  if (id == nullptr) return fail(ncclInvalidArgument, "ncclGetUniqueId: uniqueId is NULL");
  static uint64_t made = 0;  // with the process id and the clock: distinct per process and call
  *id = ncclUniqueId{};
  std::memcpy(id->internal, kIdMagic, sizeof kIdMagic);
  const uint64_t parts[3] = {++made, static_cast<uint64_t>(::getpid()),
                             static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count())};
  std::memcpy(id->internal + sizeof kIdMagic, parts, sizeof parts);
  return ncclSuccess;
}

ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank, ncclConfig_t* config) {
  if (comm == nullptr) return fail(ncclInvalidArgument, "ncclCommInitRankConfig: comm is NULL");
  bool blocking = true;  // a refused config: blocking, so the refusal is the call's
  std::optional<Fault> fault;
  const LocalRefusal refusal = refusal_from(check_init_arguments(nranks, rank, config, blocking, fault));
  auto made = std::make_unique<ncclComm>();
  made->rank = rank;
  made->nranks = nranks;
  made->blocking = blocking;
  made->fault = fault;
  ncclComm& c = *made;
  known_comms.insert(made.get());
  every_comm.push_back(std::move(made));
  *comm = &c;
  const ncclResult_t r = start(c, init_operation(id, refusal));
  if (r != ncclSuccess && r != ncclInProgress) c.failure = r;  // a refused init leaves no usable communicator
  return r;
}

ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank) {
  return ncclCommInitRankConfig(comm, nranks, id, rank, nullptr);
}

ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* async_error) {
  if (ncclResult_t r = check_handle(comm, "ncclCommGetAsyncError"); r != ncclSuccess) return r;
  if (async_error == nullptr) return fail(ncclInvalidArgument, "ncclCommGetAsyncError: asyncError is NULL");
  if (comm->fresh) {  // the first poll after a non-blocking call: still in progress, so the caller's loop runs
    comm->fresh = false;
    *async_error = ncclInProgress;
    return ncclSuccess;
  }
  if (comm->op != nullptr) {
    const ncclResult_t r = advance(*comm, false);
    if (r == ncclInProgress) {
      *async_error = ncclInProgress;
      return ncclSuccess;
    }
    if (r != ncclSuccess) comm->failure = r;
  }
  *async_error = comm->failure;
  return ncclSuccess;
}

ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op,
                           ncclComm_t comm, cudaStream_t stream) {
  if (ncclResult_t r = check_usable(comm, "ncclAllReduce"); r != ncclSuccess) return r;
  const LocalRefusal refusal = refusal_from(check_call(sendbuff, recvbuff, count, datatype, op));
  if (refusal.result == ncclSuccess) {
    ++comm->all_reduces;
    if (comm->hung) return hang(*comm, stream);
    if (comm->fault && comm->fault->strikes(comm->rank, comm->all_reduces)) return inject(*comm, stream);
  }
  return start(*comm, all_reduce_operation(sendbuff, recvbuff, count, datatype, op, refusal));
}

ncclResult_t ncclCommFinalize(ncclComm_t comm) {
  if (ncclResult_t r = check_usable(comm, "ncclCommFinalize"); r != ncclSuccess) return r;
  auto op = std::make_unique<Operation>();
  op->steps.push_back([](ncclComm& c) {
    c.finalized = true;
    return ncclSuccess;
  });
  return start(*comm, std::move(op));
}

ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  if (comm == nullptr) return ncclSuccess;
  if (ncclResult_t r = check_handle(comm, "ncclCommDestroy"); r != ncclSuccess) return r;
  if (comm->op != nullptr || comm->fresh)
    return fail(ncclInvalidUsage, "ncclCommDestroy: a non-blocking call is still in progress (finish it, or "
                "ncclCommAbort)");
#ifdef PTSIM_HAVE_MPI
  if (comm->mpi != MPI_COMM_NULL && mpi_running()) MPI_Comm_free(&comm->mpi);
#endif
  comm->dead = "destroyed";
  return ncclSuccess;
}

ncclResult_t ncclCommAbort(ncclComm_t comm) {
  if (comm == nullptr) return ncclSuccess;
  if (ncclResult_t r = check_handle(comm, "ncclCommAbort"); r != ncclSuccess) return r;
  // An MPI request still pending cannot be cancelled and may still write the operation's buffers (a late peer
  // completes it): the operation is kept, never freed. So is comm->mpi, which that request uses.
  if (comm->op != nullptr) comm->abandoned.push_back(std::move(comm->op));
  for (const auto& stall : comm->stalls) stall->released = true;  // as NCCL's abort ends its hung kernels
  comm->stalls.clear();
  comm->fresh = false;
  comm->dead = "aborted";
  return ncclSuccess;
}

ncclResult_t ncclCommCount(const ncclComm_t comm, int* count) {
  if (ncclResult_t r = check_handle(comm, "ncclCommCount"); r != ncclSuccess) return r;
  *count = comm->nranks;
  return ncclSuccess;
}

ncclResult_t ncclCommUserRank(const ncclComm_t comm, int* rank) {
  if (ncclResult_t r = check_handle(comm, "ncclCommUserRank"); r != ncclSuccess) return r;
  *rank = comm->rank;
  return ncclSuccess;
}

// NCCL's texts, without its "run with NCCL_DEBUG" hints: the shim's details are in ncclGetLastError.
const char* ncclGetErrorString(ncclResult_t result) {
  switch (result) {
    case ncclSuccess: return "no error";
    case ncclUnhandledCudaError: return "unhandled cuda error";
    case ncclSystemError: return "unhandled system error";
    case ncclInternalError: return "internal error";
    case ncclInvalidArgument: return "invalid argument";
    case ncclInvalidUsage: return "invalid usage";
    case ncclRemoteError: return "remote process exited or there was a network error";
    case ncclInProgress: return "NCCL operation in progress";
    default: return "unknown result code";
  }
}

const char* ncclGetLastError(ncclComm_t) { return last_error.c_str(); }
