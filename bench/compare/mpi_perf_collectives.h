/* The collectives of mpi_perf: for each, nccl-tests' geometry (what "size" and "count" mean),
 * its busbw factor, the MPI call in and out of place, its inputs and its exact check. */
#ifndef BRAID_BENCH_COMPARE_MPI_PERF_COLLECTIVES_H_
#define BRAID_BENCH_COMPARE_MPI_PERF_COLLECTIVES_H_

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#include "perf_common.h"

typedef enum {
  MPI_COLL_ALLREDUCE,
  MPI_COLL_REDUCE,
  MPI_COLL_BROADCAST,
  MPI_COLL_ALLGATHER,
  MPI_COLL_REDUCESCATTER,
  MPI_COLL_ALLTOALL,
  MPI_COLL_GATHER,
  MPI_COLL_SCATTER,
  MPI_COLL_SENDRECV,
  MPI_COLL_COUNT
} mpi_coll;

typedef struct {
  perf_options opts;
  mpi_coll coll;
  MPI_Datatype type;
  MPI_Op op;
  int rank, nranks;
  size_t capacity; /* elements in each buffer */
  void* send;
  void* recv;
  void* scratch; /* expected output, built for the check */
} mpi_bench;

/* 0 and *out set for a known name ("allreduce", ..., "sendrecv"), -1 otherwise. */
int mpi_coll_from_name(const char* name, mpi_coll* out);
const char* mpi_coll_call_name(mpi_coll coll); /* "MPI_Allreduce", ... */
int mpi_coll_uses_op(mpi_coll coll);
int mpi_coll_uses_root(mpi_coll coll);
/* busbw / algbw, nccl-tests' factor for the NCCL collective this call stands beside. */
double mpi_coll_bus_factor(mpi_coll coll, int nranks);

/* Sets b->type (and b->op for reducing collectives); -1 when MPI lacks them. */
int mpi_coll_types(mpi_bench* b);

/* The count argument for a requested size of `elements` (per-rank block for the per-rank
 * collectives, rounded down to 16 bytes) and the bytes the size column shows for it. */
size_t mpi_coll_param_count(const mpi_bench* b, size_t elements);
size_t mpi_coll_row_bytes(const mpi_bench* b, size_t count);

/* Fresh inputs and poisoned outputs, the call, and the wrong elements of this rank. */
void mpi_coll_prepare(mpi_bench* b, size_t count, int in_place);
void mpi_coll_run(mpi_bench* b, size_t count, int in_place);
int64_t mpi_coll_count_wrong(mpi_bench* b, size_t count, int in_place);

#endif /* BRAID_BENCH_COMPARE_MPI_PERF_COLLECTIVES_H_ */
