// How this process was started, decided from its environment at run time:
//  - by mpirun (Open MPI, MPICH/PMI, PMIx variables): MPI is initialised and ranks share the
//    unique id through MPI_Bcast (only in builds with MPI support);
//  - by braidrun or torchrun (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT): every process calls
//    ncclGetUniqueId and Braid derives the same id everywhere from the rendezvous variables;
//  - otherwise: one process drives every rank.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "combine.h"

namespace braid::bench {

enum class LaunchMode { kSingleProcess, kMpi, kBraidrun };

struct LaunchInfo {
  LaunchMode mode = LaunchMode::kSingleProcess;
  int proc = 0;  ///< this process among all
  int nProcs = 1;
  int localRank = 0;  ///< this process among those on the same host
  int localProcs = 1;
  std::string hostname;  ///< short host name (up to the first '.')
};

/// Fills info from the environment, initialising MPI under mpirun. On failure returns false
/// with a message (e.g. started by mpirun but built without MPI support).
bool detectLaunch(int* argc, char*** argv, LaunchInfo* info, std::string* error);

/// Finalises MPI if detectLaunch initialised it.
void finishLaunch(const LaunchInfo& info);

/// Whether this build can run under mpirun.
bool mpiSupported();

// MPI collectives over MPI_COMM_WORLD for the kMpi mode; each aborts the job if MPI is not
// built in (never reached: kMpi is only chosen when it is).
void mpiBarrier();
void mpiBroadcastBytes(void* data, std::size_t bytes, int root);
void mpiAllreduce(double* values, std::size_t count, Combine how);
void mpiAllreduce(std::int64_t* values, std::size_t count, Combine how);
/// Gathers `bytes` from every process into gathered (nProcs * bytes, on process 0 only).
void mpiGatherBytes(const void* data, std::size_t bytes, void* gathered);
/// Ends every process of the job (MPI_Abort) with the given status.
[[noreturn]] void mpiAbort(int status);

}  // namespace braid::bench
