// How this training process joins its communicator, decided from the environment:
//  - braidrun or torchrun (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT): every process calls
//    ncclGetUniqueId and Braid derives the same id from the rendezvous variables;
//  - mpirun (Open MPI, MPICH/PMI, PMIx): rank 0 makes the id and MPI_Bcast shares it (builds with
//    MPI only);
//  - neither: a single rank.
#pragma once

#include <string>

#include "nccl.h"

namespace braid::examples {

struct Launch {
  int rank = 0;
  int nranks = 1;
  bool usedMpi = false;
  ncclComm_t comm = nullptr;
};

/// Creates the communicator of this process. On failure returns false with the reason.
bool joinCommunicator(int* argc, char*** argv, Launch* launch, std::string* error);
/// Destroys the communicator (and finalises MPI when it was used).
void leaveCommunicator(Launch* launch);

}  // namespace braid::examples
