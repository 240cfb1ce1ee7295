#include "validate_collectives.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "verifiable/element_codec.h"
#include "verifiable/input_words.h"

namespace braid::validate {
namespace {

using Bytes = std::vector<unsigned char>;

void check(ncclResult_t result, const char* what) {
  if (result != ncclSuccess) {
    throw std::runtime_error(std::string(what) + ": " + ncclGetErrorString(result) + " (" +
                             ncclGetLastError(nullptr) + ")");
  }
}

// MPI's twin of an element type: itself where MPI has it, float for the widened ones.
MPI_Datatype mpiType(ncclDataType_t type) {
  switch (type) {
    case ncclInt8:
      return MPI_INT8_T;
    case ncclUint8:
      return MPI_UINT8_T;
    case ncclInt32:
      return MPI_INT32_T;
    case ncclUint32:
      return MPI_UINT32_T;
    case ncclInt64:
      return MPI_INT64_T;
    case ncclUint64:
      return MPI_UINT64_T;
    case ncclFloat64:
      return MPI_DOUBLE;
    default:
      return MPI_FLOAT;
  }
}

ncclDataType_t mpiStorage(ncclDataType_t type) {
  return isWidenedType(type) ? ncclFloat32 : type;
}

MPI_Op mpiOp(Op op) {
  switch (op) {
    case Op::kProd:
      return MPI_PROD;
    case Op::kMax:
      return MPI_MAX;
    case Op::kMin:
      return MPI_MIN;
    default:
      return MPI_SUM;  // sum, and the sums behind avg and premul-sum
  }
}

double load(const Bytes& buffer, std::size_t index, ncclDataType_t type) {
  return verifiable::loadElement(buffer.data(), index, type);
}

// The reference for one output element from MPI's reduced value: an integer avg divides the sum
// and truncates; a float avg is already the sum of the premultiplied contributions (NCCL's).
double referenceFromMpi(double mpiValue, const ValueSpec& spec) {
  if (spec.op != Op::kAvg || isFloatType(spec.type)) return mpiValue;
  return std::trunc(mpiValue / spec.nranks);
}

class Runner {
 public:
  Runner(const Case& c, ncclComm_t comm, int rank)
      : c_(c),
        s_(c.spec),
        comm_(comm),
        rank_(rank),
        n_(c.spec.nranks),
        size_(typeBytes(c.spec.type)) {}

  CaseResult run() {
    if (isReducing(c_.coll)) {
      runReducing();
    } else {
      runCopying();
    }
    return result_;
  }

 private:
  // ---- reducing collectives ----------------------------------------------------------------

  std::size_t inputCount() const {
    return c_.coll == Collective::kReduceScatter ? c_.count * n_ : c_.count;
  }
  std::size_t outputCount() const { return c_.count; }
  // Index, in the input numbering, of output element i on this rank.
  std::size_t inputIndex(std::size_t i) const {
    return c_.coll == Collective::kReduceScatter ? rank_ * c_.count + i : i;
  }
  bool hasResult() const { return c_.coll != Collective::kReduce || rank_ == c_.root; }

  void runReducing() {
    std::size_t in = inputCount(), out = outputCount();
    Bytes input(in * size_ + 1);
    for (std::size_t i = 0; i < in; ++i)
      verifiable::storeElement(input.data(), i, s_.type, inputValue(s_, rank_, i));

    // MPI on the same values (premul-sum and float avg: each rank's scaled contribution), in
    // MPI's type.
    ncclDataType_t storage = mpiStorage(s_.type);
    std::size_t mpiSize = typeBytes(storage);
    Bytes mpiIn(in * mpiSize + 1), mpiOut(in * mpiSize + 1);
    for (std::size_t i = 0; i < in; ++i)
      verifiable::storeElement(mpiIn.data(), i, storage, contribution(s_, rank_, i));
    runMpiReduction(mpiIn, mpiOut);

    ncclRedOp_t op = braidOp();
    for (int inPlace = 0; inPlace <= 1; ++inPlace) {
      Bytes result = runBraidReduction(input, op, inPlace != 0);
      if (!hasResult()) continue;
      for (std::size_t i = 0; i < out; ++i) {
        double braid = load(result, i, s_.type);
        if (c_.perturb && i == 0) braid = perturbed(braid, allowedDifference(s_, inputIndex(i)));
        double reference = referenceFromMpi(verifiable::loadElement(mpiOut.data(), i, storage), s_);
        compare(braid, reference, allowedDifference(s_, inputIndex(i)), i, inPlace != 0);
      }
    }
    if (s_.op == Op::kPreMulSum) check(ncclRedOpDestroy(op, comm_), "ncclRedOpDestroy");
  }

  // Just outside what the comparison allows: one unit (integers), one part in 2^50 (exact
  // floats), or twice the bound.
  static double perturbed(double value, double allowed) {
    if (allowed > 0) return value + 2 * allowed;
    return value + std::max(1e-300, std::fabs(value) * 0x1p-50);
  }

  ncclRedOp_t braidOp() {
    if (s_.op != Op::kPreMulSum) return static_cast<ncclRedOp_t>(s_.op);
    alignas(8) unsigned char scalar[8] = {};
    verifiable::storeElement(scalar, 0, s_.type, premulScalar(s_, rank_));
    ncclRedOp_t op;
    check(ncclRedOpCreatePreMulSum(&op, scalar, s_.type, ncclScalarHostImmediate, comm_),
          "ncclRedOpCreatePreMulSum");
    return op;
  }

  void runMpiReduction(Bytes& in, Bytes& out) {
    MPI_Datatype type = mpiType(s_.type);
    MPI_Op op = mpiOp(s_.op);
    int count = static_cast<int>(c_.count);
    switch (c_.coll) {
      case Collective::kAllReduce:
        MPI_Allreduce(in.data(), out.data(), count, type, op, MPI_COMM_WORLD);
        break;
      case Collective::kReduce:
        MPI_Reduce(in.data(), out.data(), count, type, op, c_.root, MPI_COMM_WORLD);
        break;
      default:
        MPI_Reduce_scatter_block(in.data(), out.data(), count, type, op, MPI_COMM_WORLD);
        break;
    }
  }

  // Braid's output on this rank (count elements), poisoned before the call.
  Bytes runBraidReduction(const Bytes& input, ncclRedOp_t op, bool inPlace) {
    std::size_t in = inputCount(), out = outputCount();
    Bytes recv(std::max(in, out) * size_ + 1, 0xff);
    const void* send = input.data();
    void* dest = recv.data();
    if (inPlace) {
      std::memcpy(recv.data(), input.data(), in * size_);
      send = recv.data();
      // NCCL's in-place reduce-scatter: recvbuff = sendbuff + rank * recvcount.
      if (c_.coll == Collective::kReduceScatter) dest = recv.data() + rank_ * c_.count * size_;
    }
    switch (c_.coll) {
      case Collective::kAllReduce:
        check(ncclAllReduce(send, dest, c_.count, s_.type, op, comm_, nullptr), "ncclAllReduce");
        break;
      case Collective::kReduce:
        check(ncclReduce(send, dest, c_.count, s_.type, op, c_.root, comm_, nullptr), "ncclReduce");
        break;
      default:
        check(ncclReduceScatter(send, dest, c_.count, s_.type, op, comm_, nullptr),
              "ncclReduceScatter");
        break;
    }
    const unsigned char* first = static_cast<unsigned char*>(dest);
    return Bytes(first, first + out * size_);
  }

  void compare(double braid, double reference, double allowed, std::size_t index, bool inPlace) {
    result_.compared++;
    bool bothNan = std::isnan(braid) && std::isnan(reference);
    double difference = std::fabs(braid - reference);
    bool ok = bothNan || (allowed == 0 ? braid == reference : difference <= allowed);
    if (allowed > 0 && !std::isnan(difference))
      result_.worstRatio = std::max(result_.worstRatio, difference / allowed);
    if (ok) return;
    if (result_.mismatches++ == 0) {
      char text[256];
      std::snprintf(text, sizeof text, "rank %d %s element %zu: Braid %.17g, MPI %.17g, allowed %g",
                    rank_, inPlace ? "in place" : "out of place", index, braid, reference, allowed);
      result_.firstMismatch = text;
    }
  }

  // ---- copying collectives: bit patterns, compared byte for byte ----------------------------

  void fillRandomBytes(Bytes& buffer, std::size_t elements, int source) const {
    for (std::size_t i = 0; i < elements * size_; ++i) {
      buffer[i] = static_cast<unsigned char>(verifiable::inputWord(s_.seed, source, i) >> 56);
    }
  }

  void runCopying() {
    std::size_t block = c_.count, total = block * n_;
    std::size_t sendElements = 0, recvElements = 0;
    switch (c_.coll) {
      case Collective::kBroadcast:
      case Collective::kSendRecv:
        sendElements = recvElements = block;
        break;
      case Collective::kAllGather:
      case Collective::kGather:
        sendElements = block;
        recvElements = total;
        break;
      case Collective::kAlltoAll:
        sendElements = recvElements = total;
        break;
      default:  // scatter
        sendElements = total;
        recvElements = block;
        break;
    }
    Bytes send(sendElements * size_ + 1);
    fillRandomBytes(send, sendElements, rank_);
    // Different poison on each side: an element neither library wrote still differs.
    Bytes braidOut(recvElements * size_ + 1, 0xa5), mpiOut(recvElements * size_ + 1, 0x5a);
    runBraidCopy(send, braidOut);
    runMpiCopy(send, mpiOut);
    if (c_.perturb) braidOut[0] ^= 1;
    bool written = (c_.coll != Collective::kGather) || rank_ == c_.root;
    if (!written) return;
    for (std::size_t i = 0; i < recvElements; ++i) {
      result_.compared++;
      if (std::memcmp(&braidOut[i * size_], &mpiOut[i * size_], size_) == 0) continue;
      if (result_.mismatches++ == 0) {
        char text[160];
        std::snprintf(text, sizeof text, "rank %d element %zu: the bytes differ", rank_, i);
        result_.firstMismatch = text;
      }
    }
  }

  void runBraidCopy(const Bytes& send, Bytes& recv) {
    ncclDataType_t t = s_.type;
    std::size_t count = c_.count;
    switch (c_.coll) {
      case Collective::kBroadcast:
        check(ncclBroadcast(send.data(), recv.data(), count, t, c_.root, comm_, nullptr),
              "ncclBroadcast");
        break;
      case Collective::kAllGather:
        check(ncclAllGather(send.data(), recv.data(), count, t, comm_, nullptr), "ncclAllGather");
        break;
      case Collective::kAlltoAll:
        check(ncclAlltoAll(send.data(), recv.data(), count, t, comm_, nullptr), "ncclAlltoAll");
        break;
      case Collective::kGather:
        check(ncclGather(send.data(), recv.data(), count, t, c_.root, comm_, nullptr),
              "ncclGather");
        break;
      case Collective::kScatter:
        check(ncclScatter(send.data(), recv.data(), count, t, c_.root, comm_, nullptr),
              "ncclScatter");
        break;
      default: {
        check(ncclGroupStart(), "ncclGroupStart");
        check(ncclSend(send.data(), count, t, (rank_ + 1) % n_, comm_, nullptr), "ncclSend");
        check(ncclRecv(recv.data(), count, t, (rank_ + n_ - 1) % n_, comm_, nullptr), "ncclRecv");
        check(ncclGroupEnd(), "ncclGroupEnd");
      }
    }
  }

  void runMpiCopy(const Bytes& send, Bytes& recv) {
    int bytes = static_cast<int>(c_.count * size_);
    MPI_Comm w = MPI_COMM_WORLD;
    unsigned char* out = recv.data();
    void* in = const_cast<unsigned char*>(send.data());
    switch (c_.coll) {
      case Collective::kBroadcast:
        // NCCL's broadcast reads the root's sendbuff and writes every recvbuff, root's too.
        if (rank_ == c_.root) std::memcpy(out, in, static_cast<std::size_t>(bytes));
        MPI_Bcast(out, bytes, MPI_BYTE, c_.root, w);
        break;
      case Collective::kAllGather:
        MPI_Allgather(in, bytes, MPI_BYTE, out, bytes, MPI_BYTE, w);
        break;
      case Collective::kAlltoAll:
        MPI_Alltoall(in, bytes, MPI_BYTE, out, bytes, MPI_BYTE, w);
        break;
      case Collective::kGather:
        MPI_Gather(in, bytes, MPI_BYTE, out, bytes, MPI_BYTE, c_.root, w);
        break;
      case Collective::kScatter:
        MPI_Scatter(in, bytes, MPI_BYTE, out, bytes, MPI_BYTE, c_.root, w);
        break;
      default:
        MPI_Sendrecv(in, bytes, MPI_BYTE, (rank_ + 1) % n_, 0, out, bytes, MPI_BYTE,
                     (rank_ + n_ - 1) % n_, 0, w, MPI_STATUS_IGNORE);
    }
  }

  const Case& c_;
  const ValueSpec& s_;
  ncclComm_t comm_;
  int rank_;
  int n_;
  std::size_t size_;
  CaseResult result_;
};

}  // namespace

const char* collectiveName(Collective coll) {
  static const char* const kNames[kNumCollectives] = {"allreduce", "reduce",    "reducescatter",
                                                      "broadcast", "allgather", "alltoall",
                                                      "gather",    "scatter",   "sendrecv"};
  return kNames[static_cast<int>(coll)];
}

bool isReducing(Collective coll) {
  return coll == Collective::kAllReduce || coll == Collective::kReduce ||
         coll == Collective::kReduceScatter;
}

bool isRooted(Collective coll) {
  return coll == Collective::kReduce || coll == Collective::kBroadcast ||
         coll == Collective::kGather || coll == Collective::kScatter;
}

CaseResult runCase(const Case& c, ncclComm_t comm, int rank) {
  return Runner(c, comm, rank).run();
}

}  // namespace braid::validate
