// validate_nccl_worker: runs every collective x type x op x count through one NCCL-API library
// and writes every rank's outputs to a results file; --compare checks two such files.
//
//   validate_nccl_worker --library /usr/local/cuda/lib64/libnccl.so.2 --out nvidia.bin
//   validate_nccl_worker --library build/lib/libnccl.so.2 --out braid.bin    # host memory
//   validate_nccl_worker --compare nvidia.bin braid.bin
//   validate_nccl_worker --reference --out expected.bin   # 1 rank's closed forms, no library
//
// One process drives N ranks (ncclCommInitAll; rank r on device r) and loads the library with
// dlopen, so NVIDIA's NCCL and Braid, which export the same names, run in separate processes.
// tools/validate-nccl runs both and the comparison (docs/validation.md). Exit status: 0 done,
// 1 error (or a mismatch, --compare), 2 usage, 3 the library cannot run here (the one line
// "validate-nccl: NCCL cannot run: <reason>" says why).
#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "cases.h"
#include "compare.h"
#include "loader.h"
#include "memory.h"
#include "results.h"
#include "verifiable/element_codec.h"

namespace braid::validate_nccl {
namespace {

constexpr int kExitUsage = 2;
constexpr int kExitCannotRun = 3;

struct Options {
  std::string library, cudart, out, memory;  // memory: "", "host" or "device"
  int nranks = 1;
  std::vector<std::size_t> counts = {0, 1, 7, 31, 1021, 4099, 65537};
  std::uint64_t seed = 1;
  int poison = 0xa5;
  std::vector<Coll> colls;
  bool perturb = false;
  bool reference = false;  ///< write oneRankOutput's closed forms instead of running a library
  std::string compareA, compareB;
  int shown = 4;
};

constexpr const char* kUsage =
    "usage: validate_nccl_worker --library PATH|--reference --out FILE [--memory host|device]\n"
    "           [--cudart PATH] [--np N] [--counts 0,1,...] [--seed N] [--poison BYTE]\n"
    "           [--collective A,B] [--perturb]\n"
    "       validate_nccl_worker --compare A B [--show N]\n";

std::vector<std::string> split(const std::string& text) {
  std::vector<std::string> items;
  std::stringstream stream(text);
  for (std::string item; std::getline(stream, item, ',');) items.push_back(item);
  return items;
}

bool parseOptions(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    bool hasValue = i + 1 < argc;
    if (arg == "--compare" && i + 2 < argc) {
      o->compareA = argv[++i];
      o->compareB = argv[++i];
    } else if (arg == "--perturb") {
      o->perturb = true;
    } else if (arg == "--reference") {
      o->reference = true;
    } else if (!hasValue) {
      return false;
    } else if (arg == "--library") {
      o->library = argv[++i];
    } else if (arg == "--cudart") {
      o->cudart = argv[++i];
    } else if (arg == "--out") {
      o->out = argv[++i];
    } else if (arg == "--memory") {
      o->memory = argv[++i];
      if (o->memory != "host" && o->memory != "device") return false;
    } else if (arg == "--np") {
      o->nranks = std::atoi(argv[++i]);
      if (o->nranks < 1) return false;
    } else if (arg == "--counts") {
      o->counts.clear();
      for (const std::string& c : split(argv[++i])) o->counts.push_back(std::stoull(c));
    } else if (arg == "--seed") {
      o->seed = std::strtoull(argv[++i], nullptr, 0);
    } else if (arg == "--poison") {
      o->poison = static_cast<int>(std::strtol(argv[++i], nullptr, 0)) & 0xff;
    } else if (arg == "--show") {
      o->shown = std::atoi(argv[++i]);
    } else if (arg == "--collective") {
      for (const std::string& name : split(argv[++i])) {
        int found = -1;
        for (int c = 0; c < kNumColls; ++c)
          if (name == collName(static_cast<Coll>(c))) found = c;
        if (found < 0) return false;
        o->colls.push_back(static_cast<Coll>(found));
      }
    } else {
      return false;
    }
  }
  if (o->compareA.empty() && o->out.empty()) return false;
  if (o->compareA.empty() && o->library.empty() == !o->reference) return false;
  if (o->reference && o->nranks != 1) return false;
  return true;
}

// The smallest change of element 0 that the comparison must notice: one flipped low bit where
// it is exact (an integer unit, a float ulp, a copied bit), else more than the bound.
void perturb(unsigned char* data, const CaseKey& key, int nranks, std::uint64_t seed) {
  auto type = static_cast<ncclDataType_t>(key.type);
  double allowed = allowedDifference(key, nranks, seed, 0);
  if (allowed == 0) {
    data[0] ^= 1;
    return;
  }
  double value = verifiable::loadElement(data, 0, type);
  for (double delta = 2 * allowed;; delta *= 2) {
    verifiable::storeElement(data, 0, type, value + delta);
    double changed = verifiable::loadElement(data, 0, type);
    // NaN (e4m3 has no infinity) never compares within a bound either.
    if (std::isnan(changed) || std::fabs(changed - value) > allowed) return;
  }
}

class Runner {
 public:
  Runner(const Options& o, const NcclApi& api, Memory& memory, std::vector<ncclComm_t> comms,
         ResultsWriter& out)
      : o_(o), api_(api), memory_(memory), comms_(std::move(comms)), out_(out) {
    std::size_t maxCount = 0;
    for (std::size_t c : o.counts) maxCount = std::max(maxCount, c);
    bytes_ = maxCount * comms_.size() * 8;  // the largest buffer of any layout
    for (std::size_t r = 0; r < comms_.size(); ++r) {
      send_.push_back(memory_.allocate(static_cast<int>(r), bytes_));
      recv_.push_back(memory_.allocate(static_cast<int>(r), bytes_));
    }
  }
  ~Runner() {
    for (std::size_t r = 0; r < comms_.size(); ++r) {
      memory_.release(static_cast<int>(r), send_[r]);
      memory_.release(static_cast<int>(r), recv_[r]);
    }
  }

  long long failures = 0;  ///< calls that returned an error (recorded, not fatal)

  void run(CaseKey key) {
    int n = static_cast<int>(comms_.size());
    auto type = static_cast<ncclDataType_t>(key.type);
    std::size_t size = validate::typeBytes(type);
    std::vector<Layout> layouts;
    std::vector<unsigned char*> sendAt(n), recvAt(n);
    for (int r = 0; r < n; ++r) {
      key.rank = r;
      Layout l = layoutOf(key, n);
      layouts.push_back(l);
      auto* send = static_cast<unsigned char*>(key.inPlace ? recv_[r] : send_[r]);
      auto* recv = static_cast<unsigned char*>(recv_[r]);
      stage(key, l, send, recv, size);
      sendAt[r] = send + l.sendAt * size;
      recvAt[r] = recv + l.recvAt * size;
    }

    bool premul = key.op == static_cast<int>(Op::kPreMulSum);
    std::vector<ncclRedOp_t> ops(n, static_cast<ncclRedOp_t>(premul || key.op < 0 ? 0 : key.op));
    std::vector<bool> created(n, false);
    ncclResult_t status = ncclSuccess;
    std::string error;
    if (premul) createPreMulSum(key, &ops, &created, &status, &error);
    if (status == ncclSuccess) {
      // One thread drives every rank: NCCL requires their calls in one group. Every rank's
      // call is made even after one failed, so that no rank waits for a peer never called.
      note(api_.groupStart(), -1, &status, &error);
      for (int r = 0; r < n; ++r) {
        key.rank = r;
        note(issue(key, sendAt[r], recvAt[r], ops[r]), r, &status, &error);
      }
      note(api_.groupEnd(), -1, &status, &error);
      for (int r = 0; r < n; ++r) memory_.synchronize(r);
    }
    for (int r = 0; r < n; ++r)
      if (created[r]) api_.redOpDestroy(ops[r], comms_[r]);
    if (status != ncclSuccess) failures++;
    if (status != ncclSuccess && failures <= 5) {
      key.rank = 0;
      std::fprintf(stderr, "%s: %s\n", describe(key).c_str(), error.c_str());
    }

    for (int r = 0; r < n; ++r) {
      if (!layouts[r].hasOutput) continue;
      key.rank = r;
      RecordHeader record;
      record.key = key;
      record.status = status;
      if (status != ncclSuccess) {
        record.bytes = error.size();
        out_.write(record, error.data());
        continue;
      }
      record.bytes = layouts[r].output * size;
      std::vector<unsigned char> output(record.bytes + 1);
      memory_.download(r, output.data(),
                       static_cast<unsigned char*>(recv_[r]) + layouts[r].outputAt * size,
                       record.bytes);
      if (o_.perturb && layouts[r].output) perturb(output.data(), key, n, o_.seed);
      out_.write(record, output.data());
    }
  }

 private:
  // Writes the rank's input and poison into its buffers.
  void stage(const CaseKey& key, const Layout& l, unsigned char* send, unsigned char* recv,
             std::size_t size) {
    int n = static_cast<int>(comms_.size());
    if (key.inPlace) {
      std::vector<unsigned char> buffer(l.buffer * size + 1, static_cast<unsigned char>(o_.poison));
      if (l.placesInput) fillInput(key, n, o_.seed, buffer.data() + l.inputAt * size, l.send);
      memory_.upload(key.rank, recv, buffer.data(), l.buffer * size);
      return;
    }
    std::vector<unsigned char> input(l.send * size + 1);
    fillInput(key, n, o_.seed, input.data(), l.send);
    memory_.upload(key.rank, send, input.data(), l.send * size);
    std::vector<unsigned char> poison(l.recv * size + 1, static_cast<unsigned char>(o_.poison));
    memory_.upload(key.rank, recv, poison.data(), l.recv * size);
  }

  // Each rank's op with its own scalar (host immediate: read during this call).
  void createPreMulSum(const CaseKey& key, std::vector<ncclRedOp_t>* ops,
                       std::vector<bool>* created, ncclResult_t* status, std::string* error) {
    auto type = static_cast<ncclDataType_t>(key.type);
    int n = static_cast<int>(comms_.size());
    validate::ValueSpec spec = specOf(key, n, o_.seed);
    for (int r = 0; r < n && *status == ncclSuccess; ++r) {
      alignas(8) unsigned char scalar[8] = {};
      verifiable::storeElement(scalar, 0, type, validate::premulScalar(spec, r));
      ncclResult_t result =
          api_.redOpCreatePreMulSum(&(*ops)[r], scalar, type, ncclScalarHostImmediate, comms_[r]);
      (*created)[r] = result == ncclSuccess;
      note(result, r, status, error);
    }
  }

  // Keeps the first error with the rank that saw it and the library's own explanation.
  void note(ncclResult_t result, int rank, ncclResult_t* status, std::string* error) {
    if (result == ncclSuccess || *status != ncclSuccess) return;
    *status = result;
    *error = rank >= 0 ? "rank " + std::to_string(rank) + ": " : std::string();
    *error += api_.getErrorString(result);
    const char* last = api_.getLastError(rank >= 0 ? comms_[rank] : nullptr);
    if (last && *last) *error += std::string(": ") + last;
  }

  ncclResult_t issue(const CaseKey& key, unsigned char* send, unsigned char* recv, ncclRedOp_t op) {
    auto type = static_cast<ncclDataType_t>(key.type);
    int n = static_cast<int>(comms_.size()), r = key.rank, root = key.root;
    std::size_t c = key.count, block = c * validate::typeBytes(type);
    ncclComm_t comm = comms_[r];
    cudaStream_t s = memory_.stream(r);
    ncclResult_t result = ncclSuccess;
    auto keep = [&result](ncclResult_t next) {
      if (result == ncclSuccess) result = next;
    };
    switch (static_cast<Coll>(key.coll)) {
      case Coll::kAllReduce:
        return api_.allReduce(send, recv, c, type, op, comm, s);
      case Coll::kReduce:
        return api_.reduce(send, recv, c, type, op, root, comm, s);
      case Coll::kReduceScatter:
        return api_.reduceScatter(send, recv, c, type, op, comm, s);
      case Coll::kBroadcast:
        return api_.broadcast(send, recv, c, type, root, comm, s);
      case Coll::kAllGather:
        return api_.allGather(send, recv, c, type, comm, s);
      case Coll::kAlltoAll:
        for (int p = 0; p < n; ++p) {
          keep(api_.send(send + p * block, c, type, p, comm, s));
          keep(api_.recv(recv + p * block, c, type, p, comm, s));
        }
        return result;
      case Coll::kGather:
        keep(api_.send(send, c, type, root, comm, s));
        if (r == root)
          for (int p = 0; p < n; ++p) keep(api_.recv(recv + p * block, c, type, p, comm, s));
        return result;
      case Coll::kScatter:
        if (r == root)
          for (int p = 0; p < n; ++p) keep(api_.send(send + p * block, c, type, p, comm, s));
        keep(api_.recv(recv, c, type, root, comm, s));
        return result;
      case Coll::kSendRecv:
        keep(api_.send(send, c, type, (r + 1) % n, comm, s));
        keep(api_.recv(recv, c, type, (r + n - 1) % n, comm, s));
        return result;
      case Coll::kAlltoAllApi:
        return api_.alltoAll(send, recv, c, type, comm, s);
      case Coll::kGatherApi:
        return api_.gather(send, recv, c, type, root, comm, s);
      case Coll::kScatterApi:
        return api_.scatter(send, recv, c, type, root, comm, s);
    }
    return ncclInternalError;
  }

  const Options& o_;
  const NcclApi& api_;
  Memory& memory_;
  std::vector<ncclComm_t> comms_;
  ResultsWriter& out_;
  std::size_t bytes_ = 0;
  std::vector<void*> send_, recv_;
};

int cannotRun(const std::string& reason) {
  std::printf("validate-nccl: NCCL cannot run: %s\n", reason.c_str());
  return kExitCannotRun;
}

// The collectives asked for that the library has (NCCL before 2.28 lacks the .api ones).
std::vector<Coll> availableColls(const Options& o, const NcclApi& api) {
  std::vector<Coll> wanted = o.colls;
  if (wanted.empty())
    for (int c = 0; c < kNumColls; ++c) wanted.push_back(static_cast<Coll>(c));
  std::vector<Coll> colls;
  for (Coll c : wanted) {
    bool missing = (c == Coll::kAlltoAllApi && !api.alltoAll) ||
                   (c == Coll::kGatherApi && !api.gather) ||
                   (c == Coll::kScatterApi && !api.scatter);
    if (missing) std::fprintf(stderr, "# %s: not exported, left out\n", collName(c));
    if (!missing) colls.push_back(c);
  }
  return colls;
}

// The closed forms of oneRankOutput, as a results file: what NVIDIA's NCCL must match at 1 rank,
// so that Braid can be held to it on a machine without a GPU.
int writeReference(const Options& o) {
  FileHeader header;
  header.nranks = 1;
  header.seed = o.seed;
  std::snprintf(header.library, sizeof header.library, "closed form (1 rank)");
  std::vector<Coll> colls = o.colls;
  if (colls.empty())
    for (int c = 0; c < kNumColls; ++c) colls.push_back(static_cast<Coll>(c));
  for (Coll c : colls) header.collMask |= 1u << static_cast<int>(c);
  std::vector<CaseKey> cases = enumerateCases(1, o.counts, colls);
  ResultsWriter out(o.out, header);
  for (const CaseKey& key : cases) {
    std::vector<unsigned char> output = oneRankOutput(key, o.seed);
    if (o.perturb && !output.empty()) perturb(output.data(), key, 1, o.seed);
    RecordHeader record;
    record.key = key;
    record.bytes = output.size();
    out.write(record, output.data());
  }
  out.close();
  std::printf("# validate_nccl_worker: closed forms of %zu calls at 1 rank -> %s\n", cases.size(),
              o.out.c_str());
  return 0;
}

int runWorker(const Options& o) {
  NcclApi api;
  std::string error;
  if (!loadNccl(o.library, &api, &error)) return cannotRun(error);
  // Braid exports its extensions next to the NCCL names; its collectives run on host memory
  // until its device path lands, NVIDIA's only on device memory.
  bool isBraid = dlsym(api.handle, "braidBarrier") != nullptr;
  bool device = o.memory.empty() ? !isBraid : o.memory == "device";
  std::unique_ptr<Memory> memory;
  if (device) {
    memory = makeDeviceMemory(o.cudart, o.nranks, &error);
    if (!memory) return cannotRun(error);
  } else {
    memory = makeHostMemory();
  }
  std::vector<ncclComm_t> comms(o.nranks, nullptr);
  ncclResult_t init = api.commInitAll(comms.data(), o.nranks, nullptr);
  if (init != ncclSuccess) {
    return cannotRun("ncclCommInitAll(" + std::to_string(o.nranks) + ") in " + o.library + ": " +
                     api.getErrorString(init) + " (" + api.getLastError(nullptr) + ")");
  }
  FileHeader header;
  header.nranks = o.nranks;
  api.getVersion(&header.libraryVersion);
  header.seed = o.seed;
  header.memory = device ? 1 : 0;
  std::snprintf(header.library, sizeof header.library, "%s", o.library.c_str());
  std::vector<Coll> colls = availableColls(o, api);
  for (Coll c : colls) header.collMask |= 1u << static_cast<int>(c);

  std::vector<CaseKey> cases = enumerateCases(o.nranks, o.counts, colls);
  ResultsWriter out(o.out, header);
  long long failures = 0;
  {
    Runner runner(o, api, *memory, comms, out);
    for (const CaseKey& key : cases) runner.run(key);
    failures = runner.failures;
  }
  out.close();
  for (ncclComm_t comm : comms) api.commDestroy(comm);
  std::printf(
      "# validate_nccl_worker: %s (version %d, %s), %d ranks, %s memory: %zu calls, "
      "%lld failed -> %s\n",
      o.library.c_str(), header.libraryVersion, isBraid ? "Braid" : "not Braid", o.nranks,
      device ? "device" : "host", cases.size(), failures, o.out.c_str());
  return 0;
}

}  // namespace
}  // namespace braid::validate_nccl

int main(int argc, char** argv) {
  using namespace braid::validate_nccl;
  Options options;
  if (!parseOptions(argc, argv, &options)) {
    std::fputs(kUsage, stderr);
    return kExitUsage;
  }
  try {
    if (!options.compareA.empty())
      return compareFiles(options.compareA, options.compareB, options.shown);
    if (options.reference) return writeReference(options);
    return runWorker(options);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "validate_nccl_worker: %s\n", e.what());
    return 1;
  }
}
