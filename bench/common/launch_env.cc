#include "launch_env.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#ifdef BRAID_BENCH_MPI
#include <mpi.h>
#endif

namespace braid::bench {
namespace {

const char* env(const char* name) {
  const char* value = std::getenv(name);
  return (value && *value) ? value : nullptr;
}

bool underMpiLauncher() {
  return env("OMPI_COMM_WORLD_SIZE") || env("PMI_SIZE") || env("PMIX_RANK") ||
         env("MV2_COMM_WORLD_SIZE");
}

bool parseNonNegative(const char* text, int* value) {
  char* end = nullptr;
  long parsed = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || parsed < 0 || parsed > (1 << 24)) return false;
  *value = static_cast<int>(parsed);
  return true;
}

std::string shortHostname() {
  char name[1024] = {};
  gethostname(name, sizeof(name) - 1);
  if (char* dot = std::strchr(name, '.')) *dot = '\0';
  return name;
}

#ifdef BRAID_BENCH_MPI
MPI_Op mpiOp(Combine how) {
  switch (how) {
    case Combine::kMin:
      return MPI_MIN;
    case Combine::kMax:
      return MPI_MAX;
    default:
      return MPI_SUM;
  }
}
#else
[[noreturn]] void noMpi() {
  std::fprintf(stderr, "MPI support is not built in\n");
  std::abort();
}
#endif

}  // namespace

bool mpiSupported() {
#ifdef BRAID_BENCH_MPI
  return true;
#else
  return false;
#endif
}

bool detectLaunch(int* argc, char*** argv, LaunchInfo* info, std::string* error) {
  info->hostname = shortHostname();
  if (underMpiLauncher()) {
#ifdef BRAID_BENCH_MPI
    int provided = 0;
    // Several threads call MPI, but never two at once (the last thread to arrive does).
    MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &info->proc);
    MPI_Comm_size(MPI_COMM_WORLD, &info->nProcs);
    MPI_Comm local;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, info->proc, MPI_INFO_NULL, &local);
    MPI_Comm_rank(local, &info->localRank);
    MPI_Comm_size(local, &info->localProcs);
    MPI_Comm_free(&local);
    info->mode = LaunchMode::kMpi;
    return true;
#else
    (void)argc;
    (void)argv;
    *error =
        "started by an MPI launcher, but this build has no MPI support (install Open MPI and "
        "rebuild, or start the ranks with braidrun)";
    return false;
#endif
  }
  const char* rank = env("RANK");
  const char* worldSize = env("WORLD_SIZE");
  if (rank && worldSize) {
    if (!parseNonNegative(rank, &info->proc) || !parseNonNegative(worldSize, &info->nProcs) ||
        info->nProcs < 1 || info->proc >= info->nProcs) {
      *error = "RANK and WORLD_SIZE must satisfy 0 <= RANK < WORLD_SIZE";
      return false;
    }
    if (!env("MASTER_ADDR") || !env("MASTER_PORT")) {
      *error = "RANK/WORLD_SIZE are set but MASTER_ADDR/MASTER_PORT are not (use braidrun)";
      return false;
    }
    const char* localRank = env("LOCAL_RANK");
    const char* localSize = env("LOCAL_WORLD_SIZE");
    if (!localRank || !parseNonNegative(localRank, &info->localRank)) info->localRank = info->proc;
    if (!localSize || !parseNonNegative(localSize, &info->localProcs)) {
      info->localProcs = info->nProcs;
    }
    // One process is a single-process run, whatever launched it.
    info->mode = info->nProcs > 1 ? LaunchMode::kBraidrun : LaunchMode::kSingleProcess;
    return true;
  }
  info->mode = LaunchMode::kSingleProcess;
  return true;
}

void finishLaunch(const LaunchInfo& info) {
#ifdef BRAID_BENCH_MPI
  if (info.mode == LaunchMode::kMpi) MPI_Finalize();
#else
  (void)info;
#endif
}

#ifdef BRAID_BENCH_MPI
void mpiBarrier() {
  MPI_Barrier(MPI_COMM_WORLD);
}

void mpiBroadcastBytes(void* data, std::size_t bytes, int root) {
  MPI_Bcast(data, static_cast<int>(bytes), MPI_BYTE, root, MPI_COMM_WORLD);
}

void mpiAllreduce(double* values, std::size_t count, Combine how) {
  MPI_Allreduce(MPI_IN_PLACE, values, static_cast<int>(count), MPI_DOUBLE, mpiOp(how),
                MPI_COMM_WORLD);
}

void mpiAllreduce(std::int64_t* values, std::size_t count, Combine how) {
  MPI_Allreduce(MPI_IN_PLACE, values, static_cast<int>(count), MPI_INT64_T, mpiOp(how),
                MPI_COMM_WORLD);
}

void mpiGatherBytes(const void* data, std::size_t bytes, void* gathered) {
  MPI_Gather(data, static_cast<int>(bytes), MPI_BYTE, gathered, static_cast<int>(bytes), MPI_BYTE,
             0, MPI_COMM_WORLD);
}

void mpiAbort(int status) {
  MPI_Abort(MPI_COMM_WORLD, status);
  std::_Exit(status);
}
#else
void mpiBarrier() {
  noMpi();
}
void mpiBroadcastBytes(void*, std::size_t, int) {
  noMpi();
}
void mpiAllreduce(double*, std::size_t, Combine) {
  noMpi();
}
void mpiAllreduce(std::int64_t*, std::size_t, Combine) {
  noMpi();
}
void mpiGatherBytes(const void*, std::size_t, void*) {
  noMpi();
}
void mpiAbort(int) {
  noMpi();
}
#endif

}  // namespace braid::bench
