#include "mpi_perf_collectives.h"

#include <string.h>

static const char* const kNames[MPI_COLL_COUNT] = {"allreduce", "reduce",        "broadcast",
                                                   "allgather", "reducescatter", "alltoall",
                                                   "gather",    "scatter",       "sendrecv"};
static const char* const kCalls[MPI_COLL_COUNT] = {
    "MPI_Allreduce", "MPI_Reduce", "MPI_Bcast",   "MPI_Allgather", "MPI_Reduce_scatter_block",
    "MPI_Alltoall",  "MPI_Gather", "MPI_Scatter", "MPI_Sendrecv"};

int mpi_coll_from_name(const char* name, mpi_coll* out) {
  for (int c = 0; c < MPI_COLL_COUNT; c++) {
    if (strcmp(name, kNames[c]) == 0) {
      *out = (mpi_coll)c;
      return 0;
    }
  }
  return -1;
}

const char* mpi_coll_call_name(mpi_coll coll) {
  return kCalls[coll];
}

int mpi_coll_uses_op(mpi_coll coll) {
  return coll == MPI_COLL_ALLREDUCE || coll == MPI_COLL_REDUCE || coll == MPI_COLL_REDUCESCATTER;
}

int mpi_coll_uses_root(mpi_coll coll) {
  return coll == MPI_COLL_REDUCE || coll == MPI_COLL_BROADCAST || coll == MPI_COLL_GATHER ||
         coll == MPI_COLL_SCATTER;
}

/* Collectives whose count is one rank's block of an n-block buffer. */
static int per_rank_blocks(mpi_coll coll) {
  return coll == MPI_COLL_ALLGATHER || coll == MPI_COLL_REDUCESCATTER ||
         coll == MPI_COLL_ALLTOALL || coll == MPI_COLL_GATHER || coll == MPI_COLL_SCATTER;
}

double mpi_coll_bus_factor(mpi_coll coll, int nranks) {
  if (coll == MPI_COLL_ALLREDUCE) return 2.0 * (nranks - 1) / nranks;
  if (per_rank_blocks(coll)) return (double)(nranks - 1) / nranks;
  return 1.0; /* reduce, broadcast, sendrecv: every byte crosses each link once */
}

int mpi_coll_types(mpi_bench* b) {
  static const MPI_Datatype kTypes[PERF_NUM_TYPES] = {
      MPI_INT8_T,   MPI_UINT8_T,       MPI_INT32_T, MPI_UINT32_T, MPI_INT64_T,
      MPI_UINT64_T, MPI_DATATYPE_NULL, MPI_FLOAT,   MPI_DOUBLE,   MPI_DATATYPE_NULL};
  static const MPI_Op kOps[PERF_NUM_OPS] = {MPI_SUM, MPI_PROD, MPI_MAX, MPI_MIN, MPI_OP_NULL};
  b->type = kTypes[b->opts.type];
  b->op = kOps[b->opts.op];
  /* MPI has no standard half, bfloat16 or average. Copies need no op. */
  if (b->type == MPI_DATATYPE_NULL) return -1;
  if (mpi_coll_uses_op(b->coll) && b->op == MPI_OP_NULL) return -1;
  return 0;
}

size_t mpi_coll_param_count(const mpi_bench* b, size_t elements) {
  if (!per_rank_blocks(b->coll)) return elements;
  size_t elem = perf_type_size(b->opts.type);
  return (elements / (size_t)b->nranks) & ~(16 / elem - 1);
}

size_t mpi_coll_row_bytes(const mpi_bench* b, size_t count) {
  size_t n = per_rank_blocks(b->coll) ? (size_t)b->nranks : 1;
  return count * n * perf_type_size(b->opts.type);
}

static char* at(void* base, size_t elements, const mpi_bench* b) {
  return (char*)base + elements * perf_type_size(b->opts.type);
}

/* Where this rank's input goes. */
void mpi_coll_prepare(mpi_bench* b, size_t count, int in_place) {
  size_t n = (size_t)b->nranks, me = (size_t)b->rank, block = count;
  int root = b->opts.root;
  perf_type type = b->opts.type;
  void* input = in_place ? b->recv : b->send;
  switch (b->coll) {
    case MPI_COLL_ALLREDUCE:
    case MPI_COLL_REDUCE:
      if (!in_place) perf_poison_output(b->recv, count, type);
      perf_fill_input(input, count, type, b->opts.op, b->rank, b->nranks);
      break;
    case MPI_COLL_REDUCESCATTER:
      perf_poison_output(b->recv, in_place ? 0 : block, type);
      perf_fill_input(input, block * n, type, b->opts.op, b->rank, b->nranks);
      break;
    case MPI_COLL_BROADCAST:
      perf_poison_output(b->recv, count, type);
      if (b->rank == root) perf_fill_copy(input, count, 0, type, root);
      break;
    case MPI_COLL_ALLGATHER:
    case MPI_COLL_GATHER:
      perf_poison_output(b->recv, block * n, type);
      perf_fill_copy(in_place ? at(b->recv, me * block, b) : b->send, block, 0, type, b->rank);
      break;
    case MPI_COLL_ALLTOALL:
      perf_poison_output(b->recv, block * n, type);
      perf_fill_copy(input, block * n, 0, type, b->rank);
      break;
    case MPI_COLL_SCATTER:
      perf_poison_output(b->recv, in_place ? block * n : block, type);
      if (b->rank == root) perf_fill_copy(input, block * n, 0, type, root);
      break;
    case MPI_COLL_SENDRECV:
      if (!in_place) perf_poison_output(b->recv, count, type);
      perf_fill_copy(input, count, 0, type, b->rank);
      break;
    default:
      break;
  }
}

void mpi_coll_run(mpi_bench* b, size_t count, int in_place) {
  MPI_Comm w = MPI_COMM_WORLD;
  MPI_Datatype t = b->type;
  int c = (int)count, root = b->opts.root, me = b->rank, n = b->nranks;
  void* ip = MPI_IN_PLACE;
  switch (b->coll) {
    case MPI_COLL_ALLREDUCE:
      MPI_Allreduce(in_place ? ip : b->send, b->recv, c, t, b->op, w);
      break;
    case MPI_COLL_REDUCE:
      /* MPI_IN_PLACE is the root's; in place, the others send from their receive buffer. */
      MPI_Reduce(in_place ? (me == root ? ip : b->recv) : b->send, b->recv, c, t, b->op, root, w);
      break;
    case MPI_COLL_BROADCAST:
      if (in_place) {
        MPI_Bcast(b->recv, c, t, root, w);
      } else if (me == root) {
        MPI_Bcast(b->send, c, t, root, w);
        memcpy(b->recv, b->send, count * perf_type_size(b->opts.type)); /* NCCL's root copy */
      } else {
        MPI_Bcast(b->recv, c, t, root, w);
      }
      break;
    case MPI_COLL_ALLGATHER:
      MPI_Allgather(in_place ? ip : b->send, c, t, b->recv, c, t, w);
      break;
    case MPI_COLL_REDUCESCATTER:
      /* In place, MPI leaves rank r's block at the start of recv, NCCL at r * count. */
      MPI_Reduce_scatter_block(in_place ? ip : b->send, b->recv, c, t, b->op, w);
      break;
    case MPI_COLL_ALLTOALL:
      MPI_Alltoall(in_place ? ip : b->send, c, t, b->recv, c, t, w);
      break;
    case MPI_COLL_GATHER:
      if (in_place) {
        MPI_Gather(me == root ? ip : at(b->recv, (size_t)me * count, b), c, t, b->recv, c, t, root,
                   w);
      } else {
        MPI_Gather(b->send, c, t, b->recv, c, t, root, w);
      }
      break;
    case MPI_COLL_SCATTER:
      if (in_place) {
        MPI_Scatter(b->recv, c, t, me == root ? ip : at(b->recv, (size_t)me * count, b), c, t, root,
                    w);
      } else {
        MPI_Scatter(b->send, c, t, b->recv, c, t, root, w);
      }
      break;
    case MPI_COLL_SENDRECV:
      if (in_place) {
        MPI_Sendrecv_replace(b->recv, c, t, (me + 1) % n, 0, (me - 1 + n) % n, 0, w,
                             MPI_STATUS_IGNORE);
      } else {
        MPI_Sendrecv(b->send, c, t, (me + 1) % n, 0, b->recv, c, t, (me - 1 + n) % n, 0, w,
                     MPI_STATUS_IGNORE);
      }
      break;
    default:
      break;
  }
}

/* Elements of got[0..count) whose bytes differ from want's. */
static int64_t count_differing(const void* got, const void* want, size_t count, size_t elem) {
  int64_t wrong = 0;
  for (size_t i = 0; i < count; i++)
    wrong += memcmp((const char*)got + i * elem, (const char*)want + i * elem, elem) != 0;
  return wrong;
}

int64_t mpi_coll_count_wrong(mpi_bench* b, size_t count, int in_place) {
  size_t n = (size_t)b->nranks, me = (size_t)b->rank, block = count;
  size_t elem = perf_type_size(b->opts.type);
  int root = b->opts.root;
  perf_type type = b->opts.type;
  void* want = b->scratch;
  size_t extent = count; /* elements of recv compared with want */
  switch (b->coll) {
    case MPI_COLL_ALLREDUCE:
      return perf_count_wrong(b->recv, count, type, b->opts.op, b->nranks);
    case MPI_COLL_REDUCE:
      if (b->rank == root) return perf_count_wrong(b->recv, count, type, b->opts.op, b->nranks);
      /* Elsewhere the receive buffer (in place: the input) stays as it was. */
      if (in_place) {
        perf_fill_input(want, count, type, b->opts.op, b->rank, b->nranks);
      } else {
        perf_poison_output(want, count, type);
      }
      break;
    case MPI_COLL_REDUCESCATTER:
      return perf_count_wrong_at(b->recv, block, me * block, type, b->opts.op, b->nranks);
    case MPI_COLL_BROADCAST:
      perf_fill_copy(want, count, 0, type, root);
      break;
    case MPI_COLL_ALLGATHER:
    case MPI_COLL_GATHER:
      extent = block * n;
      for (size_t s = 0; s < n; s++) {
        int written = b->coll == MPI_COLL_ALLGATHER || b->rank == root || (in_place && s == me);
        if (written) {
          perf_fill_copy(at(want, s * block, b), block, 0, type, (int)s);
        } else {
          perf_poison_output(at(want, s * block, b), block, type);
        }
      }
      break;
    case MPI_COLL_ALLTOALL:
      extent = block * n;
      for (size_t s = 0; s < n; s++)
        perf_fill_copy(at(want, s * block, b), block, me * block, type, (int)s);
      break;
    case MPI_COLL_SCATTER:
      if (!in_place) {
        perf_fill_copy(want, block, me * block, type, root);
        break;
      }
      extent = block * n;
      for (size_t s = 0; s < n; s++) {
        if (b->rank == root || s == me) {
          perf_fill_copy(at(want, s * block, b), block, s * block, type, root);
        } else {
          perf_poison_output(at(want, s * block, b), block, type);
        }
      }
      break;
    case MPI_COLL_SENDRECV:
      perf_fill_copy(want, count, 0, type, (int)((me + n - 1) % n));
      break;
    default:
      return 0;
  }
  return count_differing(b->recv, want, extent, elem);
}
