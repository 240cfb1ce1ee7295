/* nccl-tests' text layout, so that the peers' output reads (and parses) exactly like the output
 * of Braid's all_reduce_perf: same header lines, same column widths, same number formatting,
 * same footer. */
#include <math.h>

#include "perf_common.h"

/* A non-negative number in exactly `width` characters, as nccl-tests prints its columns: two
 * decimals while they fit, then one, then none, then an exponent. */
static void fixed_width(char* out, size_t outlen, double value, int width) {
  int digits = 0;
  for (double p = 1.0; value >= p && digits < 40; p *= 10.0) digits++;
  if (digits < width - 2) {
    snprintf(out, outlen, "%*.2f", width, value);
  } else if (digits < width - 1) {
    snprintf(out, outlen, "%*.1f", width, value);
  } else if (digits < width + 1) {
    snprintf(out, outlen, "%*.0f", width, value);
  } else {
    snprintf(out, outlen, width >= 7 ? "%*.1e" : "%*.0e", width, value);
  }
}

double perf_busbw(size_t bytes, double time_sec, int nranks) {
  if (time_sec <= 0.0) return 0.0;
  double algbw = (double)bytes / time_sec / 1e9;
  return algbw * 2.0 * (nranks - 1) / nranks;
}

double perf_reduce_times(const double* per_rank, int nranks, perf_time_reduce how) {
  double acc = per_rank[0];
  for (int r = 1; r < nranks; r++) {
    switch (how) {
      case PERF_TIME_AVG:
        acc += per_rank[r];
        break;
      case PERF_TIME_MIN:
        acc = fmin(acc, per_rank[r]);
        break;
      case PERF_TIME_MAX:
        acc = fmax(acc, per_rank[r]);
        break;
      default:
        break;
    }
  }
  return how == PERF_TIME_AVG ? acc / nranks : acc;
}

void perf_print_header(FILE* out, const perf_options* opts, const char* program,
                       const char* library, const char* transport, int nranks) {
  static const char* const kReduceNames[] = {"rank 0", "mean over ranks", "min over ranks",
                                             "max over ranks"};
  int factor = opts->step_factor > 1;
  fprintf(out, "# %s: %s, transport %s, %d ranks, one process per rank, host memory\n", program,
          library, transport, nranks);
  fprintf(out,
          "# nThread 1 nGpus 1 minBytes %zu maxBytes %zu step: %zu(%s) warmup iters: %d iters: %d "
          "agg iters: 1 validation: %d graph: 0\n",
          opts->min_bytes, opts->max_bytes, factor ? opts->step_factor : opts->step_bytes,
          factor ? "factor" : "bytes", opts->warmup_iters, opts->iters, opts->check);
  fprintf(out, "# time: average per call over the timed iterations, %s (-a %d)\n",
          kReduceNames[opts->time_reduce], (int)opts->time_reduce);
  fprintf(out, "#\n# Using devices\n");
}

void perf_print_rank_line(FILE* out, int rank, int pid, const char* host) {
  fprintf(out, "#  Rank %2d Group  0 Pid %6d on %10s device  0 [cpu] host memory\n", rank, pid,
          host);
}

void perf_print_table_header(FILE* out) {
  fprintf(out, "#\n");
  fprintf(out,
          "# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place     "
          "     \n",
          "", "", "", "", "");
  fprintf(out, "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s \n", "size",
          "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw",
          "busbw", "#wrong");
  fprintf(out, "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s \n", "(B)",
          "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "");
}

void perf_print_row_start(FILE* out, size_t bytes, size_t count, const perf_options* opts) {
  /* Allreduce has no root; nccl-tests prints -1 there. */
  fprintf(out, "%12zu  %12zu  %8s  %6s  %6d", bytes, count, perf_type_name(opts->type),
          perf_op_name(opts->op), -1);
}

void perf_print_row_mode(FILE* out, double time_sec, size_t bytes, int nranks, int64_t wrong) {
  perf_print_row_mode_factor(out, time_sec, bytes, 2.0 * (nranks - 1) / nranks, wrong);
}

void perf_print_row_start_named(FILE* out, size_t bytes, size_t count, perf_type type,
                                const char* op_name, int root) {
  fprintf(out, "%12zu  %12zu  %8s  %6s  %6d", bytes, count, perf_type_name(type), op_name, root);
}

void perf_print_row_mode_factor(FILE* out, double time_sec, size_t bytes, double bus_factor,
                                int64_t wrong) {
  if (time_sec < 0.0) {
    fprintf(out, "  %7s  %6s  %6s  %6s", "N/A", "N/A", "N/A", "N/A");
    return;
  }
  char time_str[32], algbw_str[32], busbw_str[32];
  double algbw = time_sec > 0.0 ? (double)bytes / time_sec / 1e9 : 0.0;
  double busbw = algbw * bus_factor;
  fixed_width(time_str, sizeof time_str, time_sec * 1e6, 7);
  fixed_width(algbw_str, sizeof algbw_str, algbw, 6);
  fixed_width(busbw_str, sizeof busbw_str, busbw, 6);
  if (wrong < 0) {
    fprintf(out, "  %7s  %6s  %6s    N/A", time_str, algbw_str, busbw_str);
  } else {
    fprintf(out, "  %7s  %6s  %6s  %6g", time_str, algbw_str, busbw_str, (double)wrong);
  }
}

void perf_print_row_end(FILE* out) {
  fputc('\n', out);
  fflush(out);
}

void perf_print_footer(FILE* out, int64_t failed_checks, double avg_busbw) {
  fprintf(out, "# %-20s : %lld %s\n", "Out of bounds values", (long long)failed_checks,
          failed_checks ? "FAILED" : "OK");
  fprintf(out, "# %-20s : %g \n", "Avg bus bandwidth", avg_busbw);
  fprintf(out, "#\n");
  fflush(out);
}
