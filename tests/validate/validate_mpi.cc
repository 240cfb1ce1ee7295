// validate_mpi: every collective x type x op through Braid and through Open MPI, on the same
// inputs, in the same processes, compared element by element.
//
//   mpirun --allow-run-as-root --oversubscribe -np 4 build/tests/validate/validate_mpi
//   tools/validate-mpi                          # 2..5 ranks, default and forced algorithms
//
// Each MPI process is one Braid rank (rank 0's ncclUniqueId is shared with MPI_Bcast). Integers
// and the small integer-valued floats must agree to the bit; real-valued floats within the
// bound of validate_data.h; copies byte for byte. fp16, bf16 and fp8 have no MPI type: MPI
// reduces them as float after widening. avg is checked against MPI's sum / n, premul-sum
// against MPI's sum of the scaled inputs. Exit status 1 on any mismatch (docs/validation.md).
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <sstream>
#include <string>
#include <vector>

#include "nccl.h"
#include "validate_collectives.h"

namespace braid::validate {
namespace {

struct Options {
  std::vector<std::size_t> counts = {0, 1, 3, 7, 31, 1021, 4099};
  std::uint64_t seed = 1;
  bool verbose = false;
  std::string only;      ///< run just this collective
  bool perturb = false;  ///< self-test: every case with output must report a mismatch
};

std::vector<std::size_t> parseCounts(const char* text) {
  std::vector<std::size_t> counts;
  std::stringstream stream(text);
  for (std::string item; std::getline(stream, item, ',');) counts.push_back(std::stoull(item));
  return counts;
}

bool parseOptions(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    bool hasValue = i + 1 < argc;
    if (arg == "--counts" && hasValue) {
      o->counts = parseCounts(argv[++i]);
    } else if (arg == "--seed" && hasValue) {
      o->seed = std::strtoull(argv[++i], nullptr, 0);
    } else if (arg == "--collective" && hasValue) {
      o->only = argv[++i];
    } else if (arg == "--perturb") {
      o->perturb = true;
    } else if (arg == "--verbose") {
      o->verbose = true;
    } else {
      std::fprintf(stderr,
                   "usage: %s [--counts 0,1,3,...] [--seed N] [--collective NAME] [--perturb] "
                   "[--verbose]\n",
                   argv[0]);
      return false;
    }
  }
  return true;
}

std::vector<int> rootsFor(Collective coll, int nranks) {
  if (!isRooted(coll)) return {0};
  std::vector<int> roots = {0};
  if (nranks / 2 != 0) roots.push_back(nranks / 2);  // middle
  if (nranks - 1 != nranks / 2) roots.push_back(nranks - 1);
  return roots;
}

struct Totals {
  long long cases = 0, compared = 0, mismatches = 0, failedGroups = 0;
  long long undetected = 0;  ///< --perturb: groups with output but no mismatch
};

// One (collective, type, op, values) group over every count and root; returns its mismatches.
void runGroup(const Options& o, Collective coll, ncclDataType_t type, Op op, Values values,
              ncclComm_t comm, int rank, int nranks, Totals* totals) {
  long long local[2] = {0, 0};  // compared, mismatches
  double worst = 0;
  std::string first;
  for (std::size_t count : o.counts) {
    for (int root : rootsFor(coll, nranks)) {
      Case c{coll, ValueSpec{type, op, values, nranks, o.seed}, count, root, o.perturb};
      CaseResult r = runCase(c, comm, rank);
      local[0] += r.compared;
      local[1] += r.mismatches;
      worst = std::max(worst, r.worstRatio);
      if (r.mismatches && first.empty()) {
        first = "count " + std::to_string(count) + " root " + std::to_string(root) + ": " +
                r.firstMismatch;
      }
      totals->cases++;
    }
  }
  long long global[2];
  double worstGlobal = 0;
  MPI_Allreduce(local, global, 2, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  MPI_Allreduce(&worst, &worstGlobal, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  totals->compared += global[0];
  totals->mismatches += global[1];
  if (global[1]) totals->failedGroups++;
  if (o.perturb && global[0] && !global[1]) totals->undetected++;
  const char* opText = isReducing(coll) ? opName(op) : "copy";
  const char* valuesText = values == Values::kExact ? "exact" : "real";
  if (!first.empty() && !o.perturb) {
    std::fprintf(stderr, "MISMATCH %s %s %s %s: %s\n", collectiveName(coll), typeName(type), opText,
                 valuesText, first.c_str());
  }
  if (rank == 0 && (o.verbose || (global[1] && !o.perturb))) {
    std::printf("%-13s %-8s %-9s %-5s compared %10lld  mismatches %lld  worst |diff|/bound %.3g\n",
                collectiveName(coll), typeName(type), opText, valuesText, global[0], global[1],
                worstGlobal);
  }
}

int run(const Options& o, int rank, int nranks) {
  ncclUniqueId id;
  if (rank == 0 && ncclGetUniqueId(&id) != ncclSuccess) {
    std::fprintf(stderr, "ncclGetUniqueId: %s\n", ncclGetLastError(nullptr));
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
  ncclComm_t comm = nullptr;
  if (ncclCommInitRank(&comm, nranks, id, rank) != ncclSuccess) {
    std::fprintf(stderr, "rank %d: ncclCommInitRank: %s\n", rank, ncclGetLastError(nullptr));
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  if (rank == 0) {
    const char* algo = std::getenv("NCCL_ALGO");
    const char* slot = std::getenv("BRAID_SLOT_BYTES");
    const char* shm = std::getenv("NCCL_SHM_DISABLE");
    std::printf(
        "# validate_mpi: %d ranks, NCCL_ALGO=%s BRAID_SLOT_BYTES=%s NCCL_SHM_DISABLE=%s, "
        "seed %llu, counts",
        nranks, algo ? algo : "(auto)", slot ? slot : "(default)", shm ? shm : "0",
        static_cast<unsigned long long>(o.seed));
    for (std::size_t c : o.counts) std::printf(" %zu", c);
    std::printf("\n");
  }
  Totals totals;
  for (int ci = 0; ci < kNumCollectives; ++ci) {
    Collective coll = static_cast<Collective>(ci);
    if (!o.only.empty() && o.only != collectiveName(coll)) continue;
    for (int t = 0; t < ncclNumTypes; ++t) {
      ncclDataType_t type = static_cast<ncclDataType_t>(t);
      if (!isReducing(coll)) {
        runGroup(o, coll, type, Op::kSum, Values::kExact, comm, rank, nranks, &totals);
        continue;
      }
      for (int op = 0; op < kNumOps; ++op) {
        runGroup(o, coll, type, static_cast<Op>(op), Values::kExact, comm, rank, nranks, &totals);
        if (isFloatType(type)) {
          runGroup(o, coll, type, static_cast<Op>(op), Values::kReal, comm, rank, nranks, &totals);
        }
      }
    }
  }
  ncclCommDestroy(comm);
  if (rank == 0) {
    std::printf(
        "# %lld cases (x %d ranks), %lld elements compared, %lld mismatches in %lld "
        "groups: %s\n",
        totals.cases, nranks, totals.compared, totals.mismatches, totals.failedGroups,
        totals.mismatches ? "FAILED" : "OK");
  }
  if (o.perturb) {
    // Exit 1 (as for a real mismatch) only when every altered group was caught.
    if (rank == 0 && totals.undetected)
      std::printf("# --perturb: %lld groups did not notice the altered element\n",
                  totals.undetected);
    return totals.undetected ? 0 : 1;
  }
  return totals.mismatches ? 1 : 0;
}

}  // namespace
}  // namespace braid::validate

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, nranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  braid::validate::Options options;
  if (!braid::validate::parseOptions(argc, argv, &options)) {
    MPI_Finalize();
    return 2;
  }
  int status = 0;
  try {
    status = braid::validate::run(options, rank, nranks);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d: %s\n", rank, e.what());
    MPI_Abort(MPI_COMM_WORLD, 3);
  }
  MPI_Finalize();
  return status;
}
