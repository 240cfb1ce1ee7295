/* Shared pieces of the peer allreduce benchmarks (mpi_allreduce_perf, gloo_allreduce_perf).
 *
 * The peers must print exactly what Braid's nccl-tests compatible all_reduce_perf prints, so
 * that one parser and one set of rules cover all libraries: option names, data types, the
 * integer-valued inputs that make #wrong an exact check, and the column layout live here once.
 * Plain C so the MPI benchmark (C) and the Gloo benchmark (C++) both use it. */
#ifndef BRAID_BENCH_COMPARE_PERF_COMMON_H_
#define BRAID_BENCH_COMPARE_PERF_COMMON_H_

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Exit status of a peer benchmark asked for a type or op its library lacks (sysexits'
 * EX_UNAVAILABLE), apart from 1 (a wrong result) and 2 (bad arguments). */
#define PERF_EXIT_UNSUPPORTED 69

/* Element types, named as nccl-tests names them (-d). */
typedef enum {
  PERF_INT8,
  PERF_UINT8,
  PERF_INT32,
  PERF_UINT32,
  PERF_INT64,
  PERF_UINT64,
  PERF_HALF,
  PERF_FLOAT,
  PERF_DOUBLE,
  PERF_BFLOAT16,
  PERF_NUM_TYPES
} perf_type;

/* Reductions, named as nccl-tests names them (-o). */
typedef enum { PERF_SUM, PERF_PROD, PERF_MAX, PERF_MIN, PERF_AVG, PERF_NUM_OPS } perf_op;

/* How the per-rank average call time is combined over ranks (-a, as in nccl-tests). */
typedef enum {
  PERF_TIME_RANK0 = 0,
  PERF_TIME_AVG = 1,
  PERF_TIME_MIN = 2,
  PERF_TIME_MAX = 3
} perf_time_reduce;

typedef struct {
  size_t min_bytes;             /* -b */
  size_t max_bytes;             /* -e */
  size_t step_bytes;            /* -i, used when step_factor <= 1 */
  size_t step_factor;           /* -f */
  int iters;                    /* -n timed calls per size and mode */
  int warmup_iters;             /* -w calls per size in the up-front warm-up sweep */
  int check;                    /* -c number of checked calls per size and mode (0 = no check) */
  perf_type type;               /* -d */
  perf_op op;                   /* -o */
  perf_time_reduce time_reduce; /* -a */
  int root;                     /* -r root of rooted collectives (default 0) */
  const char* collective;       /* --collective (programs that run several; default NULL) */
} perf_options;

/* Parses nccl-tests style flags. Returns 0 on success, 1 after -h, 2 on a bad flag. Only a
 * caller with `verbose` set prints usage and errors, so that N ranks do not print N copies. */
int perf_parse_options(int argc, char** argv, perf_options* opts, const char* program, int verbose);

const char* perf_type_name(perf_type type);
size_t perf_type_size(perf_type type);
const char* perf_op_name(perf_op op);

/* The next message size of the sweep, or 0 when the sweep is over. */
size_t perf_next_size(const perf_options* opts, size_t bytes);

/* Element i of rank `rank`'s input. Values are small integers chosen so that every reduction
 * over `nranks` ranks is exact in `type`; a wrong element can therefore be detected with ==. */
void perf_fill_input(void* buf, size_t count, perf_type type, perf_op op, int rank, int nranks);

/* Like perf_count_wrong for elements [first, first + count) of the reduction (reduce-scatter
 * blocks). */
int64_t perf_count_wrong_at(const void* buf, size_t count, size_t first, perf_type type, perf_op op,
                            int nranks);

/* Data that collectives move unchanged (broadcast, gathers, alltoall, send/recv): elements
 * [first, first + count) of rank `source`'s copied data, small integers exact in every type and
 * different per source and per index, so a block from the wrong rank or offset is counted. */
void perf_fill_copy(void* buf, size_t count, size_t first, perf_type type, int source);

/* Writes a value that no correct result has, so a call that leaves the output untouched is
 * counted as wrong. */
void perf_poison_output(void* buf, size_t count, perf_type type);

/* Number of elements of `buf` that differ from the exact reduction of all ranks' inputs. */
int64_t perf_count_wrong(const void* buf, size_t count, perf_type type, perf_op op, int nranks);

/* Output in nccl-tests' layout. Only the printing rank calls these. */
void perf_print_header(FILE* out, const perf_options* opts, const char* program,
                       const char* library, const char* transport, int nranks);
void perf_print_rank_line(FILE* out, int rank, int pid, const char* host);
void perf_print_table_header(FILE* out);
void perf_print_row_start(FILE* out, size_t bytes, size_t count, const perf_options* opts);
/* One mode's columns; time_sec < 0 prints N/A (mode not supported by the peer). wrong < 0
 * prints N/A (not checked). */
void perf_print_row_mode(FILE* out, double time_sec, size_t bytes, int nranks, int64_t wrong);
/* The same, for a collective whose busbw is algbw * bus_factor (nccl-tests' formulas). */
void perf_print_row_mode_factor(FILE* out, double time_sec, size_t bytes, double bus_factor,
                                int64_t wrong);
/* Row start with an explicit op name ("none" for collectives without one) and root. */
void perf_print_row_start_named(FILE* out, size_t bytes, size_t count, perf_type type,
                                const char* op_name, int root);
void perf_print_row_end(FILE* out);
/* failed_checks: number of (size, mode) results with a wrong element. */
void perf_print_footer(FILE* out, int64_t failed_checks, double avg_busbw);

/* busbw of an allreduce: algbw * 2(n-1)/n, GB = 1e9 B. */
double perf_busbw(size_t bytes, double time_sec, int nranks);

/* Combines the per-rank average call times (seconds) as -a asks. */
double perf_reduce_times(const double* per_rank, int nranks, perf_time_reduce how);

#ifdef __cplusplus
}
#endif

#endif /* BRAID_BENCH_COMPARE_PERF_COMMON_H_ */
