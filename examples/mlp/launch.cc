#include "launch.h"

#include <cstdlib>

#ifdef BRAID_EXAMPLE_MPI
#include <mpi.h>
#endif

namespace braid::examples {
namespace {

const char* env(const char* name) {
  const char* value = std::getenv(name);
  return (value && *value) ? value : nullptr;
}

bool parseCount(const char* text, int* value) {
  char* end = nullptr;
  const long parsed = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || parsed < 0 || parsed > (1 << 20)) return false;
  *value = static_cast<int>(parsed);
  return true;
}

bool underMpiLauncher() {
  return env("OMPI_COMM_WORLD_SIZE") || env("PMI_SIZE") || env("PMIX_RANK");
}

}  // namespace

bool joinCommunicator(int* argc, char*** argv, Launch* launch, std::string* error) {
  ncclUniqueId id{};
  if (underMpiLauncher()) {
#ifdef BRAID_EXAMPLE_MPI
    MPI_Init(argc, argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &launch->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &launch->nranks);
    launch->usedMpi = true;
    ncclResult_t made = launch->rank == 0 ? ncclGetUniqueId(&id) : ncclSuccess;
    int ok = made == ncclSuccess;
    MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (!ok) {
      *error = std::string("ncclGetUniqueId failed on rank 0: ") + ncclGetLastError(nullptr);
      return false;
    }
    MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD);
#else
    (void)argc;
    (void)argv;
    *error = "started by mpirun, but built without MPI: start the ranks with braidrun instead";
    return false;
#endif
  } else if (env("RANK") && env("WORLD_SIZE")) {
    if (!parseCount(env("RANK"), &launch->rank) ||
        !parseCount(env("WORLD_SIZE"), &launch->nranks) || launch->nranks < 1 ||
        launch->rank >= launch->nranks) {
      *error = "RANK and WORLD_SIZE must satisfy 0 <= RANK < WORLD_SIZE";
      return false;
    }
    if (ncclGetUniqueId(&id) != ncclSuccess) {
      *error = std::string("ncclGetUniqueId: ") + ncclGetLastError(nullptr);
      return false;
    }
  } else if (ncclGetUniqueId(&id) != ncclSuccess) {
    *error = std::string("ncclGetUniqueId: ") + ncclGetLastError(nullptr);
    return false;
  }
  if (ncclCommInitRank(&launch->comm, launch->nranks, id, launch->rank) != ncclSuccess) {
    *error = std::string("ncclCommInitRank: ") + ncclGetLastError(nullptr);
    return false;
  }
  return true;
}

void leaveCommunicator(Launch* launch) {
  if (launch->comm) ncclCommDestroy(launch->comm);
  launch->comm = nullptr;
#ifdef BRAID_EXAMPLE_MPI
  if (launch->usedMpi) MPI_Finalize();
#endif
}

}  // namespace braid::examples
