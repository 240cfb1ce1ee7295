/* mpi_perf: Open MPI's collectives measured and printed exactly as nccl-tests' *_perf programs
 * (and Braid's) measure and print the NCCL collective they stand beside, so that the two can be
 * compared column by column. --collective picks the call:
 *
 *   allreduce      MPI_Allreduce              beside all_reduce_perf
 *   reduce         MPI_Reduce                 beside reduce_perf
 *   broadcast      MPI_Bcast                  beside broadcast_perf
 *   allgather      MPI_Allgather              beside all_gather_perf
 *   reducescatter  MPI_Reduce_scatter_block   beside reduce_scatter_perf
 *   alltoall       MPI_Alltoall               beside alltoall_perf
 *   gather         MPI_Gather                 beside gather_perf
 *   scatter        MPI_Scatter                beside scatter_perf
 *   sendrecv       MPI_Sendrecv (rank+1 / rank-1)  beside sendrecv_perf
 *
 * Sizes, counts, in-place layouts and busbw factors are nccl-tests' (see bench/perf/README.md):
 * the per-rank collectives round each rank's block down to 16 bytes and print the whole buffer
 * as the size. In place uses MPI_IN_PLACE (MPI_Sendrecv_replace for sendrecv). NCCL's
 * out-of-place broadcast also copies the root's send buffer to its receive buffer, so the MPI
 * root does that copy too.
 *
 * Method (as the *_perf programs): a warm-up sweep first (-w calls per size, sizes doubling);
 * then per size, out-of-place and then in-place: one untimed call, a barrier, -n timed calls
 * back to back; time = elapsed / n on each rank, combined over ranks by -a (default: max).
 * Then -c checked calls on fresh inputs, poisoned outputs, every element compared exactly
 * (integer-valued inputs), #wrong summed over ranks.
 *
 * Run with mpirun; the transport is whatever Open MPI's MCA settings select. */
#include <limits.h>
#include <mpi.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mpi_perf_collectives.h"
#include "perf_common.h"

static const char* const kProgram = "mpi_perf";

static void print_preamble(const mpi_bench* b) {
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
  char transport[160];
  snprintf(transport, sizeof transport, "%s, btl=%s", mpi_coll_call_name(b->coll),
           btl ? btl : "(Open MPI default)");
  perf_print_header(stdout, &b->opts, kProgram, version, transport, b->nranks);
  for (int r = 0; r < b->nranks; r++)
    perf_print_rank_line(stdout, r, pids[r], hosts + r * sizeof host);
  perf_print_table_header(stdout);
  free(hosts);
  free(pids);
}

/* Average seconds per call, combined over ranks as -a asks. */
static double time_mode(mpi_bench* b, size_t count, int in_place) {
  if (b->opts.check) mpi_coll_prepare(b, count, in_place);
  mpi_coll_run(b, count, in_place);
  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = MPI_Wtime();
  for (int i = 0; i < b->opts.iters; i++) mpi_coll_run(b, count, in_place);
  double mine = (MPI_Wtime() - t0) / b->opts.iters;
  double* all = malloc((size_t)b->nranks * sizeof(double));
  MPI_Allgather(&mine, 1, MPI_DOUBLE, all, 1, MPI_DOUBLE, MPI_COMM_WORLD);
  double t = perf_reduce_times(all, b->nranks, b->opts.time_reduce);
  free(all);
  return t;
}

/* Wrong elements summed over ranks, or -1 when checking is off. */
static int64_t check_mode(mpi_bench* b, size_t count, int in_place) {
  if (!b->opts.check) return -1;
  long long wrong = 0;
  for (int c = 0; c < b->opts.check && wrong == 0; c++) {
    mpi_coll_prepare(b, count, in_place);
    mpi_coll_run(b, count, in_place);
    long long mine = mpi_coll_count_wrong(b, count, in_place);
    MPI_Allreduce(&mine, &wrong, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  }
  return wrong;
}

static int run(mpi_bench* b) {
  const perf_options* o = &b->opts;
  size_t elem = perf_type_size(o->type);
  size_t max_count = o->max_bytes / elem;
  if (max_count == 0) max_count = 1;
  if (max_count > (size_t)INT_MAX) { /* MPI counts are int */
    if (b->rank == 0)
      fprintf(stderr, "%s: -e %zu is more than INT_MAX elements\n", kProgram, o->max_bytes);
    return 2;
  }
  b->capacity = max_count;
  if (posix_memalign(&b->send, 4096, max_count * elem) ||
      posix_memalign(&b->recv, 4096, max_count * elem) ||
      posix_memalign(&b->scratch, 4096, max_count * elem)) {
    fprintf(stderr, "%s: rank %d cannot allocate 3 x %zu bytes\n", kProgram, b->rank,
            max_count * elem);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  memset(b->send, 0, max_count * elem);
  memset(b->recv, 0, max_count * elem);
  print_preamble(b);

  /* Warm-up sweep over all sizes first, as the *_perf programs do. */
  for (size_t bytes = o->min_bytes; bytes && bytes <= o->max_bytes; bytes *= 2) {
    size_t count = mpi_coll_param_count(b, bytes / elem);
    for (int i = 0; i < o->warmup_iters; i++) mpi_coll_run(b, count, 0);
  }

  long long failed = 0;
  double busbw_sum = 0.0;
  int busbw_n = 0;
  double factor = mpi_coll_bus_factor(b->coll, b->nranks);
  const char* op_name = mpi_coll_uses_op(b->coll) ? perf_op_name(o->op) : "none";
  int root = mpi_coll_uses_root(b->coll) ? o->root : -1;
  for (size_t size = o->min_bytes; size; size = perf_next_size(o, size)) {
    size_t count = mpi_coll_param_count(b, size / elem);
    size_t bytes = mpi_coll_row_bytes(b, count);
    if (b->rank == 0) perf_print_row_start_named(stdout, bytes, count, o->type, op_name, root);
    for (int in_place = 0; in_place <= 1; in_place++) {
      double t = time_mode(b, count, in_place);
      int64_t wrong = check_mode(b, count, in_place);
      failed += wrong > 0;
      if (t > 0.0) busbw_sum += (double)bytes / t / 1e9 * factor;
      busbw_n++;
      if (b->rank == 0) perf_print_row_mode_factor(stdout, t, bytes, factor, wrong);
    }
    if (b->rank == 0) perf_print_row_end(stdout);
  }
  if (b->rank == 0) perf_print_footer(stdout, failed, busbw_n ? busbw_sum / busbw_n : 0.0);
  free(b->send);
  free(b->recv);
  free(b->scratch);
  return failed ? 1 : 0;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  mpi_bench b;
  memset(&b, 0, sizeof b);
  MPI_Comm_rank(MPI_COMM_WORLD, &b.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &b.nranks);

  int rc = perf_parse_options(argc, argv, &b.opts, kProgram, b.rank == 0);
  int help = rc == 1;
  if (rc == 0) {
    const char* name = b.opts.collective ? b.opts.collective : "allreduce";
    if (mpi_coll_from_name(name, &b.coll) != 0) {
      if (b.rank == 0) fprintf(stderr, "%s: unknown --collective %s\n", kProgram, name);
      rc = 2;
    } else if (b.opts.root >= b.nranks) {
      if (b.rank == 0)
        fprintf(stderr, "%s: -r %d is not a rank (%d ranks)\n", kProgram, b.opts.root, b.nranks);
      rc = 2;
    }
  }
  if (rc == 0 && mpi_coll_types(&b) != 0) {
    if (b.rank == 0)
      fprintf(stderr, "%s: MPI has no built-in %s %s %s (unsupported by this peer)\n", kProgram,
              perf_type_name(b.opts.type), perf_op_name(b.opts.op), mpi_coll_call_name(b.coll));
    rc = PERF_EXIT_UNSUPPORTED;
  }
  if (rc == 0) rc = run(&b); /* 1 when a result was wrong */
  MPI_Finalize();
  return help ? 0 : rc;
}
