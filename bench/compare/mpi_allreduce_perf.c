/* mpi_allreduce_perf: MPI_Allreduce measured and printed exactly as nccl-tests' all_reduce_perf
 * measures and prints an allreduce, so Braid can be compared with MPI column by column.
 *
 * Method (same as all_reduce_perf): a warm-up sweep first (-w calls per size, sizes doubling);
 * then per size, out-of-place and then in-place: one untimed call, a barrier, -n timed calls
 * back to back; time = elapsed / n on each rank, combined over ranks by -a (default: max);
 * algbw = bytes / time, busbw = algbw * 2(n-1)/n. Then -c checked calls on fresh inputs, each
 * result compared exactly (integer-valued inputs), #wrong summed over ranks.
 *
 * Run with mpirun; the transport is whatever Open MPI's MCA settings select. */
#include <limits.h>
#include <mpi.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "perf_common.h"

static const char* const kProgram = "mpi_allreduce_perf";

/* MPI has no standard half, bfloat16 or average: those are reported as unsupported. */
static int mpi_type(perf_type type, MPI_Datatype* out) {
  switch (type) {
    case PERF_INT8:
      *out = MPI_INT8_T;
      return 0;
    case PERF_UINT8:
      *out = MPI_UINT8_T;
      return 0;
    case PERF_INT32:
      *out = MPI_INT32_T;
      return 0;
    case PERF_UINT32:
      *out = MPI_UINT32_T;
      return 0;
    case PERF_INT64:
      *out = MPI_INT64_T;
      return 0;
    case PERF_UINT64:
      *out = MPI_UINT64_T;
      return 0;
    case PERF_FLOAT:
      *out = MPI_FLOAT;
      return 0;
    case PERF_DOUBLE:
      *out = MPI_DOUBLE;
      return 0;
    default:
      return -1;
  }
}

static int mpi_op(perf_op op, MPI_Op* out) {
  switch (op) {
    case PERF_SUM:
      *out = MPI_SUM;
      return 0;
    case PERF_PROD:
      *out = MPI_PROD;
      return 0;
    case PERF_MAX:
      *out = MPI_MAX;
      return 0;
    case PERF_MIN:
      *out = MPI_MIN;
      return 0;
    default:
      return -1;
  }
}

typedef struct {
  perf_options opts;
  MPI_Datatype type;
  MPI_Op op;
  int rank, nranks;
  void* send;
  void* recv;
} bench;

static void allreduce(const bench* b, size_t count, int in_place) {
  MPI_Allreduce(in_place ? MPI_IN_PLACE : b->send, b->recv, (int)count, b->type, b->op,
                MPI_COMM_WORLD);
}

static void fill(const bench* b, size_t count, int in_place) {
  perf_fill_input(in_place ? b->recv : b->send, count, b->opts.type, b->opts.op, b->rank,
                  b->nranks);
}

/* Average seconds per call, combined over ranks as -a asks. */
static double time_mode(const bench* b, size_t count, int in_place) {
  if (b->opts.check) fill(b, count, in_place);
  allreduce(b, count, in_place);
  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = MPI_Wtime();
  for (int i = 0; i < b->opts.iters; i++) allreduce(b, count, in_place);
  double mine = (MPI_Wtime() - t0) / b->opts.iters;
  double* all = malloc((size_t)b->nranks * sizeof(double));
  MPI_Allgather(&mine, 1, MPI_DOUBLE, all, 1, MPI_DOUBLE, MPI_COMM_WORLD);
  double t = perf_reduce_times(all, b->nranks, b->opts.time_reduce);
  free(all);
  return t;
}

/* Wrong elements summed over ranks, or -1 when checking is off. */
static int64_t check_mode(const bench* b, size_t count, int in_place) {
  if (!b->opts.check) return -1;
  long long wrong = 0;
  for (int c = 0; c < b->opts.check && wrong == 0; c++) {
    fill(b, count, in_place);
    if (!in_place) perf_poison_output(b->recv, count, b->opts.type);
    allreduce(b, count, in_place);
    long long mine = perf_count_wrong(b->recv, count, b->opts.type, b->opts.op, b->nranks);
    MPI_Allreduce(&mine, &wrong, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  }
  return wrong;
}

static void print_preamble(const bench* b) {
  char host[64] = {0};
  gethostname(host, sizeof host - 1);
  int pid = (int)getpid();
  char* hosts = b->rank == 0 ? malloc((size_t)b->nranks * sizeof host) : NULL;
  int* pids = b->rank == 0 ? malloc((size_t)b->nranks * sizeof(int)) : NULL;
  MPI_Gather(host, sizeof host, MPI_CHAR, hosts, sizeof host, MPI_CHAR, 0, MPI_COMM_WORLD);
  MPI_Gather(&pid, 1, MPI_INT, pids, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (b->rank != 0) return;

  char version[MPI_MAX_LIBRARY_VERSION_STRING] = {0};
  int len = 0;
  MPI_Get_library_version(version, &len);
  char* newline = strchr(version, '\n');
  if (newline) *newline = '\0';
  /* mpirun hands --mca settings to the ranks as OMPI_MCA_* variables. */
  const char* btl = getenv("OMPI_MCA_btl");
  char transport[128];
  snprintf(transport, sizeof transport, "btl=%s", btl ? btl : "(Open MPI default)");
  perf_print_header(stdout, &b->opts, kProgram, version, transport, b->nranks);
  for (int r = 0; r < b->nranks; r++)
    perf_print_rank_line(stdout, r, pids[r], hosts + r * sizeof host);
  perf_print_table_header(stdout);
  free(hosts);
  free(pids);
}

static int run(bench* b) {
  const perf_options* o = &b->opts;
  size_t elem = perf_type_size(o->type);
  size_t max_count = o->max_bytes / elem;
  if (max_count == 0) max_count = 1;
  if (max_count > (size_t)INT_MAX) { /* MPI counts are int */
    if (b->rank == 0)
      fprintf(stderr, "%s: -e %zu is more than INT_MAX elements\n", kProgram, o->max_bytes);
    return 2;
  }
  if (posix_memalign(&b->send, 4096, max_count * elem) ||
      posix_memalign(&b->recv, 4096, max_count * elem)) {
    fprintf(stderr, "%s: rank %d cannot allocate 2 x %zu bytes\n", kProgram, b->rank,
            max_count * elem);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  perf_fill_input(b->send, max_count, o->type, o->op, b->rank, b->nranks);
  memset(b->recv, 0, max_count * elem);
  print_preamble(b);

  /* Warm-up sweep over all sizes first, as all_reduce_perf does. */
  for (size_t bytes = o->min_bytes; bytes && bytes <= o->max_bytes; bytes *= 2) {
    for (int i = 0; i < o->warmup_iters; i++) allreduce(b, bytes / elem, 0);
  }

  long long failed = 0;
  double busbw_sum = 0.0;
  int busbw_n = 0;
  for (size_t size = o->min_bytes; size; size = perf_next_size(o, size)) {
    size_t count = size / elem;
    if (count == 0) continue;
    size_t bytes = count * elem;
    if (b->rank == 0) perf_print_row_start(stdout, bytes, count, o);
    for (int in_place = 0; in_place <= 1; in_place++) {
      double t = time_mode(b, count, in_place);
      int64_t wrong = check_mode(b, count, in_place);
      failed += wrong > 0;
      busbw_sum += perf_busbw(bytes, t, b->nranks);
      busbw_n++;
      if (b->rank == 0) perf_print_row_mode(stdout, t, bytes, b->nranks, wrong);
    }
    if (b->rank == 0) perf_print_row_end(stdout);
  }
  if (b->rank == 0) perf_print_footer(stdout, failed, busbw_n ? busbw_sum / busbw_n : 0.0);
  free(b->send);
  free(b->recv);
  return failed ? 1 : 0;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  bench b;
  memset(&b, 0, sizeof b);
  MPI_Comm_rank(MPI_COMM_WORLD, &b.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &b.nranks);

  int rc = perf_parse_options(argc, argv, &b.opts, kProgram, b.rank == 0);
  int help = rc == 1;
  if (rc == 0 && (mpi_type(b.opts.type, &b.type) || mpi_op(b.opts.op, &b.op))) {
    if (b.rank == 0)
      fprintf(stderr, "%s: MPI has no built-in %s %s allreduce (unsupported by this peer)\n",
              kProgram, perf_type_name(b.opts.type), perf_op_name(b.opts.op));
    rc = PERF_EXIT_UNSUPPORTED;
  }
  if (rc == 0) rc = run(&b); /* 1 when a result was wrong */
  MPI_Finalize();
  return help ? 0 : rc;
}
