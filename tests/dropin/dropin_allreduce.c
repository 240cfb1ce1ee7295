/* Drop-in check: an ordinary NCCL application, compiled against NVIDIA's nccl.h and linked
 * against NVIDIA's libnccl.so (so it records NEEDED libnccl.so.2), run with Braid's
 * libnccl.so.2 first on LD_LIBRARY_PATH. Two processes (parent = rank 0, child = rank 1) all-reduce
 * host buffers with stream NULL and check every element exactly.
 *
 * Usage: dropin_allreduce [--require-library-dir DIR]
 * With DIR, the run fails unless the loaded libnccl.so.2 lives in DIR, proving the loader picked
 * Braid's library rather than NVIDIA's. */
#define _GNU_SOURCE
#include <nccl.h>

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

enum { kRanks = 2, kTimeoutSeconds = 50 };
/* Odd and not a multiple of anything convenient, so chunking and tails get exercised. */
static const size_t kCount = 1000003;

#define CHECK_NCCL(rank, call)                                                                 \
  do {                                                                                         \
    ncclResult_t result_ = (call);                                                             \
    if (result_ != ncclSuccess) {                                                              \
      fprintf(stderr, "rank %d: %s failed: %s\n", (rank), #call, ncclGetErrorString(result_)); \
      return 1;                                                                                \
    }                                                                                          \
  } while (0)

/* Writes the resolved directory holding `path` (after resolving a link to the file itself when
 * `followFile` is set) into out. Returns 0 on success. */
static int directoryOf(const char* path, int followFile, char out[PATH_MAX]) {
  char copy[PATH_MAX];
  if (followFile) {
    if (realpath(path, copy) == NULL) return 1;
  } else {
    snprintf(copy, sizeof copy, "%s", path);
  }
  char* slash = strrchr(copy, '/');
  if (slash == NULL) return 1;
  *slash = '\0';
  return realpath(copy, out) == NULL;
}

/* Returns 0 when the loaded libnccl.so.2 lives in requiredDir (or anywhere when it is NULL). */
static int checkLoadedLibrary(const char* requiredDir) {
  /* Ask the already loaded libnccl.so.2 itself: in a non-PIE program &ncclAllReduce could be
   * the executable's PLT stub. */
  void* library = dlopen("libnccl.so.2", RTLD_LAZY | RTLD_NOLOAD);
  void* symbol = library != NULL ? dlsym(library, "ncclAllReduce") : NULL;
  Dl_info info;
  if (symbol == NULL || dladdr(symbol, &info) == 0 || info.dli_fname == NULL) {
    fprintf(stderr, "cannot locate the loaded libnccl.so.2: %s\n", dlerror());
    return 1;
  }
  char resolved[PATH_MAX];
  if (realpath(info.dli_fname, resolved) == NULL) resolved[0] = '\0';
  printf("ncclAllReduce comes from %s (%s)\n", info.dli_fname, resolved);
  if (requiredDir == NULL) return 0;

  /* libnccl.so.2 may be a link to libbraid.so elsewhere, so accept either directory. */
  char required[PATH_MAX];
  char linkDir[PATH_MAX];
  char fileDir[PATH_MAX];
  if (realpath(requiredDir, required) == NULL) {
    fprintf(stderr, "cannot resolve %s: %s\n", requiredDir, strerror(errno));
    return 1;
  }
  const int inLinkDir =
      directoryOf(info.dli_fname, 0, linkDir) == 0 && strcmp(linkDir, required) == 0;
  const int inFileDir =
      directoryOf(info.dli_fname, 1, fileDir) == 0 && strcmp(fileDir, required) == 0;
  if (!inLinkDir && !inFileDir) {
    fprintf(stderr, "FAIL: NCCL was loaded from %s, not from Braid's %s\n", resolved, required);
    return 1;
  }
  printf("library check: libnccl.so.2 was loaded from the required directory %s\n", required);
  return 0;
}

/* Prints the mapped files whose name mentions braid or nccl, for the test log. */
static void printMappedLibraries(void) {
  FILE* maps = fopen("/proc/self/maps", "r");
  if (maps == NULL) return;
  char line[4096];
  char last[4096] = "";
  while (fgets(line, sizeof line, maps) != NULL) {
    const char* path = strchr(line, '/');
    if (path == NULL || (strstr(path, "braid") == NULL && strstr(path, "nccl") == NULL)) continue;
    if (strcmp(path, last) == 0) continue;
    snprintf(last, sizeof last, "%s", path);
    printf("mapped: %s", path);
  }
  fclose(maps);
}

static float floatInput(int rank, size_t i) {
  return (float)(i % 4099) + (float)(rank * 7);
}
static int32_t intInput(int rank, size_t i) {
  /* Rank 1 is a permutation-like pattern so that max picks either side and sums vary. */
  return rank == 0 ? (int32_t)i : (int32_t)((i * 7919) % kCount) - 500000;
}

/* Sum of float, max of int32 and an in-place sum of int32, all on host buffers, stream NULL. */
static int runRank(int rank, ncclUniqueId id) {
  ncclComm_t comm = NCCL_COMM_NULL;
  CHECK_NCCL(rank, ncclCommInitRank(&comm, kRanks, id, rank));
  int count = 0;
  int userRank = -1;
  CHECK_NCCL(rank, ncclCommCount(comm, &count));
  CHECK_NCCL(rank, ncclCommUserRank(comm, &userRank));
  if (count != kRanks || userRank != rank) {
    fprintf(stderr, "rank %d: communicator reports rank %d of %d\n", rank, userRank, count);
    return 1;
  }

  float* floatsIn = malloc(kCount * sizeof(float));
  float* floatsOut = malloc(kCount * sizeof(float));
  int32_t* intsIn = malloc(kCount * sizeof(int32_t));
  int32_t* intsOut = malloc(kCount * sizeof(int32_t));
  if (!floatsIn || !floatsOut || !intsIn || !intsOut) {
    fprintf(stderr, "rank %d: out of memory\n", rank);
    return 1;
  }
  for (size_t i = 0; i < kCount; ++i) {
    floatsIn[i] = floatInput(rank, i);
    floatsOut[i] = -1.0f;
    intsIn[i] = intInput(rank, i);
    intsOut[i] = INT32_MIN;
  }
  cudaStream_t stream = (cudaStream_t)0;
  CHECK_NCCL(rank, ncclAllReduce(floatsIn, floatsOut, kCount, ncclFloat, ncclSum, comm, stream));
  CHECK_NCCL(rank, ncclAllReduce(intsIn, intsOut, kCount, ncclInt32, ncclMax, comm, stream));
  CHECK_NCCL(rank, ncclAllReduce(intsIn, intsIn, kCount, ncclInt32, ncclSum, comm, stream));

  size_t errors = 0;
  for (size_t i = 0; i < kCount; ++i) {
    /* Integer-valued floats below 2^24 add exactly, so equality is the right test. */
    const float floatSum = floatInput(0, i) + floatInput(1, i);
    const int32_t a = intInput(0, i);
    const int32_t b = intInput(1, i);
    const int32_t intMax = a > b ? a : b;
    if (floatsOut[i] != floatSum || intsOut[i] != intMax || intsIn[i] != a + b) {
      if (errors < 5) {
        fprintf(stderr,
                "rank %d: element %zu: sum %g (want %g), max %d (want %d), in-place %d (want %d)\n",
                rank, i, floatsOut[i], floatSum, intsOut[i], intMax, intsIn[i], a + b);
      }
      ++errors;
    }
  }
  free(floatsIn);
  free(floatsOut);
  free(intsIn);
  free(intsOut);
  CHECK_NCCL(rank, ncclCommDestroy(comm));
  if (errors != 0) {
    fprintf(stderr, "rank %d: %zu of %zu elements wrong\n", rank, errors, kCount);
    return 1;
  }
  printf("rank %d: %zu elements correct (float sum, int32 max, int32 in-place sum)\n", rank,
         kCount);
  return 0;
}

static int writeAll(int fd, const void* data, size_t size) {
  const char* bytes = data;
  while (size > 0) {
    ssize_t n = write(fd, bytes, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return 1;
    bytes += n;
    size -= (size_t)n;
  }
  return 0;
}

static int readAll(int fd, void* data, size_t size) {
  char* bytes = data;
  while (size > 0) {
    ssize_t n = read(fd, bytes, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return 1;
    bytes += n;
    size -= (size_t)n;
  }
  return 0;
}

int main(int argc, char** argv) {
  const char* requiredDir = NULL;
  if (argc == 3 && strcmp(argv[1], "--require-library-dir") == 0) {
    requiredDir = argv[2];
  } else if (argc != 1) {
    fprintf(stderr, "usage: %s [--require-library-dir DIR]\n", argv[0]);
    return 2;
  }
  setvbuf(stdout, NULL, _IOLBF, 0);

  int version = 0;
  CHECK_NCCL(0, ncclGetVersion(&version));
  printf("ncclGetVersion: %d (header %d)\n", version, NCCL_VERSION_CODE);
  if (checkLoadedLibrary(requiredDir) != 0) return 1;
  printMappedLibraries();

  /* The id travels through a pipe, as it would between independently started processes. */
  int idPipe[2];
  if (pipe(idPipe) != 0) {
    perror("pipe");
    return 1;
  }
  const pid_t child = fork();
  if (child < 0) {
    perror("fork");
    return 1;
  }
  alarm(kTimeoutSeconds); /* a hang becomes a failure even without an outside timeout */
  ncclUniqueId id;
  if (child == 0) {
    close(idPipe[1]);
    if (readAll(idPipe[0], &id, sizeof id) != 0) {
      fprintf(stderr, "rank 1: no unique id from rank 0\n");
      _exit(1);
    }
    _exit(runRank(1, id));
  }
  close(idPipe[0]);
  int failed = 0;
  if (ncclGetUniqueId(&id) != ncclSuccess || writeAll(idPipe[1], &id, sizeof id) != 0) {
    fprintf(stderr, "rank 0: cannot create or send the unique id\n");
    kill(child, SIGKILL);
    failed = 1;
  }
  close(idPipe[1]);
  if (!failed) {
    failed = runRank(0, id);
    if (failed) kill(child, SIGKILL);
  }
  int status = 0;
  if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    fprintf(stderr, "rank 1 failed (status 0x%x)\n", (unsigned)status);
    failed = 1;
  }
  printf("%s\n", failed ? "DROPIN FAILED" : "DROPIN PASSED");
  return failed;
}
