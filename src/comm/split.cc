#include "comm/split.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "core/unique_id.h"
#include "util/status.h"

namespace braid {
namespace {

struct Member {
  int32_t color;
  int32_t key;
};

}  // namespace

ncclResult_t commSplit(ncclComm* parent, int color, int key, ncclComm** out,
                       const ncclConfig_t* config) {
  *out = nullptr;
  Member me{color, key};
  std::vector<std::string> all;
  BRAID_TRY(parent->team.bootstrap->allGather(std::string(reinterpret_cast<char*>(&me), sizeof(me)),
                                              &all));
  std::vector<std::pair<Member, int>> members;  // same color, with old rank
  for (int r = 0; r < parent->nranks(); r++) {
    Member m;
    if (all[r].size() != sizeof(m))
      return fail(ncclInternalError, "split: malformed contribution from rank %d", r);
    memcpy(&m, all[r].data(), sizeof(m));
    if (color != NCCL_SPLIT_NOCOLOR && m.color == color) members.push_back({m, r});
  }
  std::stable_sort(members.begin(), members.end(), [](const auto& a, const auto& b) {
    return a.first.key != b.first.key ? a.first.key < b.first.key : a.second < b.second;
  });
  int newRank = -1;
  for (size_t i = 0; i < members.size(); i++)
    if (members[i].second == parent->rank()) newRank = static_cast<int>(i);
  // The first member of each color makes the new communicator's id; everyone publishes theirs.
  std::string myId;
  if (newRank == 0) {
    ncclUniqueId id;
    BRAID_TRY(newHostedUniqueId(&id));
    myId.assign(id.internal, sizeof(id.internal));
  }
  BRAID_TRY(parent->team.bootstrap->allGather(myId, &all));
  if (color == NCCL_SPLIT_NOCOLOR) return ncclSuccess;
  const std::string& leaderId = all[members[0].second];
  if (leaderId.size() != sizeof(ncclUniqueId))
    return fail(ncclInternalError, "split: rank %d published no id for color %d", members[0].second,
                color);
  ncclUniqueId id;
  memcpy(id.internal, leaderId.data(), sizeof(id.internal));
  ncclComm* comm = commAllocate();
  comm->device.cudaDevice =
      parent->device.cudaDevice;  // as NCCL: the child keeps the parent's device
  ncclConfig_t inherited = NCCL_CONFIG_INITIALIZER;
  if (!config) {
    inherited.blocking = parent->config.blocking;
    config = &inherited;
  }
  ncclResult_t r = commInit(comm, id, static_cast<int>(members.size()), newRank, config);
  if (r != ncclSuccess) {
    commFree(comm);
    return addContext(r, "split (color %d, key %d) of rank %d", color, key, parent->rank());
  }
  *out = comm;
  return ncclSuccess;
}

}  // namespace braid
