// The operation fingerprint (src/algorithms/fingerprint.h) and the flight recorder
// (src/core/flight_recorder.h) in isolation: every field a fingerprint holds changes it, the
// descriptions name every datatype and op as NCCL users write them, the mismatch sentence covers
// calls that differ only in algorithm or slot size, and the recorder keeps exactly its last N
// operations with their states.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "algorithms/algorithm.h"
#include "algorithms/fingerprint.h"
#include "core/flight_recorder.h"

namespace braid {
namespace {

CollArgs allReduce(size_t count, int dtype, kernels::BaseOp op) {
  CollArgs a;
  a.coll = CollType::kAllReduce;
  a.count = count;
  a.op.dtype = dtype;
  a.op.op = op;
  a.elemSize = kernels::typeSize(static_cast<ncclDataType_t>(dtype));
  return a;
}

TEST(Fingerprint, EveryFieldChangesIt) {
  const CollArgs base = allReduce(1024, ncclFloat32, kernels::BaseOp::kSum);
  const Fingerprint f = collectiveFingerprint(57, base, "Ring");
  std::set<std::string> seen;
  auto differs = [&](const Fingerprint& g, const char* what) {
    EXPECT_FALSE(g == f) << what;
    seen.insert(describeCall(g, false, -1, true));
  };
  differs(collectiveFingerprint(58, base, "Ring"), "seq");
  differs(collectiveFingerprint(57, base, "Tree"), "algorithm");
  CollArgs a = base;
  a.count = 1025;
  differs(collectiveFingerprint(57, a, "Ring"), "count");
  a = base;
  a.op.dtype = ncclInt32;
  differs(collectiveFingerprint(57, a, "Ring"), "dtype");
  a = base;
  a.op.op = kernels::BaseOp::kMax;
  differs(collectiveFingerprint(57, a, "Ring"), "op");
  a = base;
  a.op.postDiv = 4;
  differs(collectiveFingerprint(57, a, "Ring"), "avg");
  a = base;
  a.op.preMul = true;
  differs(collectiveFingerprint(57, a, "Ring"), "premulsum");
  // A floating ncclAvg resolves to a premulsum by 1/nranks: the caller's op keeps it apart from
  // a premulsum the user created (and from a sum), and it reads as avg.
  CollArgs floatAvg = base;
  floatAvg.op.preMul = true;
  floatAvg.userOp = ncclAvg;
  differs(collectiveFingerprint(57, floatAvg, "Ring"), "float avg");
  EXPECT_FALSE(collectiveFingerprint(57, floatAvg, "Ring") == collectiveFingerprint(57, a, "Ring"));
  a = base;
  a.op.postDiv = 4;  // an integer-style avg describes the same way
  EXPECT_EQ(describeCall(collectiveFingerprint(57, floatAvg, "Ring"), false, -1, true),
            describeCall(collectiveFingerprint(57, a, "Ring"), false, -1, true));
  a = base;
  a.coll = CollType::kReduce;
  a.root = 3;
  CollArgs b = a;
  b.root = 2;
  EXPECT_FALSE(collectiveFingerprint(57, a, "Ring") == collectiveFingerprint(57, b, "Ring"));
  EXPECT_EQ(seen.size(), 7u);  // seven different descriptions too
  EXPECT_TRUE(collectiveFingerprint(57, base, "Ring") == f);
  EXPECT_FALSE(sendFingerprint(3, 4096, 1) == sendFingerprint(3, 4096, 2));
  EXPECT_FALSE(sendFingerprint(3, 4096, 1) == sendFingerprint(4, 4096, 1));
  EXPECT_FALSE(sendFingerprint(3, 4096, 1) == sendFingerprint(3, 4097, 1));
}

TEST(Fingerprint, DescriptionsNameTypesOpsAndRoots) {
  const char* types[] = {"int8", "uint8", "int32",  "uint32",   "int64",  "uint64",
                         "half", "float", "double", "bfloat16", "f8e4m3", "f8e5m2"};
  for (int t = 0; t < 12; t++)
    EXPECT_EQ(
        describeCall(collectiveFingerprint(1, allReduce(7, t, kernels::BaseOp::kMin), "Ring")),
        std::string("AllReduce(count=7,") + types[t] + ",min) #1");
  CollArgs a = allReduce(9, ncclFloat64, kernels::BaseOp::kSum);
  a.op.postDiv = 3;
  EXPECT_EQ(describeCall(collectiveFingerprint(2, a, "Tree")), "AllReduce(count=9,double,avg) #2");
  a.op.postDiv = 1;
  a.op.preMul = true;
  EXPECT_EQ(describeCall(collectiveFingerprint(2, a, "Tree")),
            "AllReduce(count=9,double,premulsum) #2");
  a = allReduce(5, ncclInt8, kernels::BaseOp::kProd);
  a.coll = CollType::kReduce;
  a.root = 4;
  EXPECT_EQ(describeCall(collectiveFingerprint(8, a, "Ring")),
            "Reduce(count=5,int8,prod,root=4) #8");
  a.coll = CollType::kBroadcast;
  a.reduction = false;
  EXPECT_EQ(describeCall(collectiveFingerprint(8, a, "Ring")), "Broadcast(count=5,int8,root=4) #8");
  a.coll = CollType::kAllGather;
  a.root = 0;
  EXPECT_EQ(describeCall(collectiveFingerprint(8, a, "Ring")), "AllGather(count=5,int8) #8");
  a = allReduce(6, ncclUint64, kernels::BaseOp::kMax);
  a.coll = CollType::kReduceScatter;
  EXPECT_EQ(describeCall(collectiveFingerprint(1, a, "Ring")),
            "ReduceScatter(count=6,uint64,max) #1");
  EXPECT_EQ(describeCall(sendFingerprint(3, 4096, 1)), "Send(bytes=4096,peer=1) #3");
  EXPECT_EQ(describeCall(sendFingerprint(3, 4096, 1), true, 0), "Recv(bytes=4096,peer=0) #3");
}

TEST(Fingerprint, MismatchSentences) {
  const CollArgs mine = allReduce(1024, ncclFloat32, kernels::BaseOp::kSum);
  CollArgs theirs = mine;
  theirs.count = 2048;
  const Fingerprint f = collectiveFingerprint(57, mine, "Ring");
  EXPECT_EQ(
      describeMismatch(2, f, 4096, 3, slotInfo(4096, collectiveFingerprint(57, theirs, "Ring"))),
      "operation mismatch: rank 2 called AllReduce(count=1024,float,sum) #57 but rank 3 "
      "called AllReduce(count=2048,float,sum) #57");
  EXPECT_EQ(
      describeMismatch(2, f, 4096, 3, slotInfo(4096, collectiveFingerprint(57, mine, "Tree"))),
      "operation mismatch: rank 2 called AllReduce(count=1024,float,sum) #57 with Ring but "
      "rank 3 called AllReduce(count=1024,float,sum) #57 with Tree (the ranks chose different "
      "algorithms: NCCL_ALGO, NCCL_PROTO or BRAID_TUNER_ADAPT differs between them)");
  EXPECT_EQ(describeMismatch(2, f, 4096, 3, slotInfo(2048, f)),
            "operation mismatch: rank 2 called AllReduce(count=1024,float,sum) #57 but rank 3 "
            "called AllReduce(count=1024,float,sum) #57 in slots of a different size (rank 2 "
            "expects 4096 bytes, rank 3 sent 2048): NCCL_ALGO, BRAID_SLOT_BYTES or BRAID_NSLOTS "
            "differ between the ranks");
  // A receive that meets a collective: both named in their own terms.
  EXPECT_EQ(describeMismatch(1, sendFingerprint(1, 8, 1), 8, 0, slotInfo(8, f)),
            "operation mismatch: rank 1 called Recv(bytes=8,peer=0) #1 but rank 0 called "
            "AllReduce(count=1024,float,sum) #57");
}

TEST(FlightRecorder, KeepsTheLastNOperationsAndPeerProgress) {
  FlightRecorder r;
  r.configure(3, 1, 4, 0x1234, nullptr);
  for (uint64_t seq = 1; seq <= 5; seq++) {
    int64_t id = r.begin(seq, "AllReduce", seq * 8, "Ring");
    EXPECT_EQ(id, static_cast<int64_t>(seq));
    r.setState(id, seq == 5 ? OpState::kFailed : OpState::kDone);
  }
  r.notePeerSeq(0, 5);
  r.notePeerSeq(2, 4);
  r.notePeerSeq(9, 1);  // out of range: ignored
  EXPECT_EQ(r.peerSeq(0), 5u);
  EXPECT_EQ(r.peerSeq(2), 4u);
  EXPECT_EQ(r.peerSeq(3), 0u);
  EXPECT_EQ(r.peerSummary(), "rank 0 at #5, rank 2 at #4, rank 3 no data received yet");
  EXPECT_EQ(r.peerSummary(1), "rank 0 at #5, ...");
  r.setState(1, OpState::kRunning);  // overwritten by op 4: ignored, no crash
  FlightRecorder off;
  off.configure(0, 0, 2, 0, nullptr);
  EXPECT_EQ(off.begin(1, "AllReduce", 8, "Ring"), -1);
  off.setState(-1, OpState::kDone);
  off.notePeerSeq(1, 7);
  EXPECT_EQ(off.peerSummary(), "rank 1 at #7");
}

}  // namespace
}  // namespace braid
