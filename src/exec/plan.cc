#include "exec/plan.h"

#include "comm/communicator.h"

namespace braid {

std::vector<CallBuffer> Plan::buffers() const {
  std::vector<CallBuffer> out;
  switch (kind) {
    case Kind::kCollective: {
      const CollectiveInfo& info = collectiveInfo(coll.coll);
      const bool isRoot = comm->rank() == coll.root;
      const size_t bytes = coll.bytes();
      out.push_back({"sendbuff", coll.sendbuff,
                     extentBytes(info.send, bytes, comm->nranks(), isRoot), true, false});
      out.push_back({"recvbuff", coll.recvbuff,
                     extentBytes(info.recv, bytes, comm->nranks(), isRoot), false, true});
      break;
    }
    case Kind::kSendRecv:
      for (const Transfer& t : transfers) {
        if (t.isSend)
          out.push_back({"sendbuff", t.src, t.bytes, true, false});
        else
          out.push_back({"recvbuff", t.dst, t.bytes, false, true});
      }
      break;
    case Kind::kManagement:
      break;
  }
  return out;
}

Plan Plan::withBuffers(const std::vector<void*>& staged) const {
  Plan p = *this;
  if (kind == Kind::kCollective) {
    p.coll.sendbuff = staged[0];
    p.coll.recvbuff = staged[1];
  } else if (kind == Kind::kSendRecv) {
    for (size_t i = 0; i < p.transfers.size(); i++) {
      if (p.transfers[i].isSend)
        p.transfers[i].src = static_cast<const char*>(staged[i]);
      else
        p.transfers[i].dst = static_cast<char*>(staged[i]);
    }
  }
  return p;
}

}  // namespace braid
