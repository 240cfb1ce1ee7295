/* stream_probe: a short STREAM-like memory bandwidth probe (copy, add, triad).
 *
 * The machine is shared with other virtual machines and its memory bandwidth moves by a factor
 * of two within an hour, so compare.py runs this before each repeat of the comparison and prints
 * it next to the results; the best multi-thread copy figure is also the memory bound that the
 * shared-memory busbw numbers are related to.
 *
 * usage: stream_probe [-s MiB per array (128)] [-r repeats (5)] [-t max threads (online CPUs)]
 * Runs with 1 thread and with the max thread count. GB/s = 1e9 B/s with STREAM's byte counting:
 * copy a[i]=b[i] moves 16 B per element, add a[i]=b[i]+c[i] and triad a[i]=b[i]+s*c[i] 24 B.
 * Output: comment lines, then "kernel threads best_GBps avg_GBps" rows. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

enum { kCopy, kAdd, kTriad, kNumKernels };
static const char* const kKernelNames[kNumKernels] = {"copy", "add", "triad"};
static const double kBytesPerElement[kNumKernels] = {16.0, 24.0, 24.0};

typedef struct {
  double* a;
  double* b;
  double* c;
  size_t n;
  int nthreads;
  int repeats;
  pthread_barrier_t barrier;
  double seconds[kNumKernels][64]; /* per repeat, measured by thread 0 */
} probe;

typedef struct {
  probe* p;
  int id;
} worker_arg;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void run_kernel(int kernel, double* restrict a, const double* restrict b,
                       const double* restrict c, size_t lo, size_t hi) {
  const double s = 3.0;
  switch (kernel) {
    case kCopy:
      for (size_t i = lo; i < hi; i++) a[i] = b[i];
      break;
    case kAdd:
      for (size_t i = lo; i < hi; i++) a[i] = b[i] + c[i];
      break;
    default:
      for (size_t i = lo; i < hi; i++) a[i] = b[i] + s * c[i];
      break;
  }
}

static void* worker(void* argp) {
  worker_arg* arg = (worker_arg*)argp;
  probe* p = arg->p;
  size_t lo = p->n * (size_t)arg->id / (size_t)p->nthreads;
  size_t hi = p->n * (size_t)(arg->id + 1) / (size_t)p->nthreads;
  /* Each thread touches its own slice first, so pages are placed where they are used. */
  for (size_t i = lo; i < hi; i++) {
    p->a[i] = 0.0;
    p->b[i] = 1.0;
    p->c[i] = 2.0;
  }
  for (int r = 0; r < p->repeats; r++) {
    for (int k = 0; k < kNumKernels; k++) {
      pthread_barrier_wait(&p->barrier);
      double t0 = now();
      run_kernel(k, p->a, p->b, p->c, lo, hi);
      pthread_barrier_wait(&p->barrier);
      if (arg->id == 0) p->seconds[k][r] = now() - t0;
    }
  }
  return NULL;
}

static int measure(probe* p, int nthreads) {
  pthread_t threads[64];
  worker_arg args[64];
  p->nthreads = nthreads;
  pthread_barrier_init(&p->barrier, NULL, (unsigned)nthreads);
  for (int t = 1; t < nthreads; t++) {
    args[t] = (worker_arg){p, t};
    if (pthread_create(&threads[t], NULL, worker, &args[t]) != 0) return -1;
  }
  args[0] = (worker_arg){p, 0};
  worker(&args[0]);
  for (int t = 1; t < nthreads; t++) pthread_join(threads[t], NULL);
  pthread_barrier_destroy(&p->barrier);

  for (int k = 0; k < kNumKernels; k++) {
    double best = 0.0, sum = 0.0;
    for (int r = 0; r < p->repeats; r++) {
      double gbps = kBytesPerElement[k] * (double)p->n / p->seconds[k][r] / 1e9;
      sum += gbps;
      if (gbps > best) best = gbps;
    }
    printf("%-6s %7d %10.2f %9.2f\n", kKernelNames[k], nthreads, best, sum / p->repeats);
  }
  return 0;
}

int main(int argc, char** argv) {
  long mib = 128;
  int repeats = 5;
  long max_threads = sysconf(_SC_NPROCESSORS_ONLN);
  int opt;
  while ((opt = getopt(argc, argv, "s:r:t:")) != -1) {
    switch (opt) {
      case 's':
        mib = atol(optarg);
        break;
      case 'r':
        repeats = atoi(optarg);
        break;
      case 't':
        max_threads = atol(optarg);
        break;
      default:
        fprintf(stderr, "usage: %s [-s MiB per array] [-r repeats] [-t max threads]\n", argv[0]);
        return 2;
    }
  }
  if (mib < 1 || repeats < 1 || repeats > 64 || max_threads < 1 || max_threads > 64) {
    fprintf(stderr, "%s: -s >= 1, -r in 1..64, -t in 1..64\n", argv[0]);
    return 2;
  }
  probe p = {0};
  p.n = (size_t)mib * 1024 * 1024 / sizeof(double);
  p.repeats = repeats;
  p.a = malloc(p.n * sizeof(double));
  p.b = malloc(p.n * sizeof(double));
  p.c = malloc(p.n * sizeof(double));
  if (!p.a || !p.b || !p.c) {
    fprintf(stderr, "%s: cannot allocate 3 x %ld MiB\n", argv[0], mib);
    return 1;
  }
  printf(
      "# stream_probe: 3 arrays x %ld MiB of doubles, best of %d, GB/s = 1e9 B/s, STREAM "
      "byte counting (copy 16 B, add and triad 24 B per element)\n",
      mib, repeats);
  printf("# kernel threads  best_GBps  avg_GBps\n");
  int rc = measure(&p, 1);
  if (rc == 0 && max_threads > 1) rc = measure(&p, (int)max_threads);
  /* Keeps the stores observable so the kernels are not optimised away. */
  if (p.a[p.n / 2] < 0.0) printf("# unexpected value\n");
  free(p.a);
  free(p.b);
  free(p.c);
  return rc == 0 ? 0 : 1;
}
