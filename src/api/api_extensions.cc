// Braid's own entry points (include/braid/braid.h).
#include "api/api.h"
#include "braid/braid.h"
#include "core/host_stream.h"
#include "core/unique_id.h"

#include <cstdio>

using namespace braid;

extern "C" BRAID_EXPORT ncclResult_t braidBarrier(ncclComm_t comm) {
  return apiGuard("braidBarrier", [&] {
    BRAID_TRY(checkComm(comm));
    uint8_t token = 0, sum = 0;
    return pncclAllReduce(&token, &sum, 1, ncclUint8, ncclSum, comm, nullptr);
  });
}

extern "C" BRAID_EXPORT ncclResult_t braidGetFreshUniqueId(ncclUniqueId* uniqueId) {
  return apiGuard("braidGetFreshUniqueId", [&] {
    if (!uniqueId) return fail(ncclInvalidArgument, "uniqueId is NULL");
    return newHostedUniqueId(uniqueId);
  });
}

namespace {

ncclResult_t checkStream(braidStream_t stream, HostStream** out) {
  *out = hostStreamFromHandle(stream);
  if (!*out)
    return fail(ncclInvalidArgument, "stream=%p is not a live braidStream_t",
                static_cast<void*>(stream));
  return ncclSuccess;
}

}  // namespace

extern "C" BRAID_EXPORT ncclResult_t braidStreamCreate(braidStream_t* stream) {
  return apiGuard("braidStreamCreate", [&] {
    if (!stream) return fail(ncclInvalidArgument, "stream (the output pointer) is NULL");
    *stream = reinterpret_cast<braidStream_t>(hostStreamCreate());
    return ncclSuccess;
  });
}

extern "C" BRAID_EXPORT ncclResult_t braidStreamDestroy(braidStream_t stream) {
  return apiGuard("braidStreamDestroy", [&] {
    HostStream* s;
    BRAID_TRY(checkStream(stream, &s));
    return hostStreamDestroy(s);
  });
}

extern "C" BRAID_EXPORT ncclResult_t braidStreamQuery(braidStream_t stream) {
  return apiGuard("braidStreamQuery", [&] {
    HostStream* s;
    BRAID_TRY(checkStream(stream, &s));
    return s->query();
  });
}

extern "C" BRAID_EXPORT ncclResult_t braidStreamSynchronize(braidStream_t stream) {
  return apiGuard("braidStreamSynchronize", [&] {
    HostStream* s;
    BRAID_TRY(checkStream(stream, &s));
    return s->synchronize();
  });
}

extern "C" BRAID_EXPORT ncclResult_t braidStreamLaunchHostFunc(braidStream_t stream,
                                                               int (*fn)(void* arg), void* arg) {
  return apiGuard("braidStreamLaunchHostFunc", [&] {
    HostStream* s;
    BRAID_TRY(checkStream(stream, &s));
    if (!fn) return fail(ncclInvalidArgument, "fn is NULL");
    s->submit({}, [fn, arg]() -> ncclResult_t {
      int rc = fn(arg);
      if (rc != 0)
        return fail(ncclInternalError, "host function %p returned %d", reinterpret_cast<void*>(fn),
                    rc);
      return ncclSuccess;
    });
    return ncclSuccess;
  });
}

extern "C" BRAID_EXPORT ncclResult_t braidCommLastAlgorithm(ncclComm_t comm, char* name,
                                                            size_t nameBytes) {
  return apiGuard("braidCommLastAlgorithm", [&] {
    BRAID_TRY(checkComm(comm, false));
    if (!name) return fail(ncclInvalidArgument, "name is NULL");
    if (nameBytes == 0) return fail(ncclInvalidArgument, "nameBytes=0 leaves no room for the name");
    const char* last = comm->tuner.lastAlgorithm();
    snprintf(name, nameBytes, "%s", last ? last : "");
    return ncclSuccess;
  });
}

extern "C" BRAID_EXPORT ncclResult_t braidCommGetTraffic(ncclComm_t comm, braidTraffic_t* traffic) {
  return apiGuard("braidCommGetTraffic", [&] {
    BRAID_TRY(checkComm(comm, false));
    if (!traffic) return fail(ncclInvalidArgument, "traffic is NULL");
    Team& team = comm->team;
    braidTraffic_t counted{0, 0};
    for (int peer = 0; peer < team.nranks; peer++) {
      if (peer == team.rank || peer >= static_cast<int>(team.sendTo.size()) || !team.sendTo[peer])
        continue;
      const uint64_t bytes = team.sendTo[peer]->fifo().bytesPosted();
      if (team.peers[peer].hostHash == team.peers[team.rank].hostHash)
        counted.bytesWithinHost += bytes;
      else
        counted.bytesToOtherHosts += bytes;
    }
    *traffic = counted;
    return ncclSuccess;
  });
}

extern "C" BRAID_EXPORT ncclResult_t braidCommProbe(ncclComm_t comm, int peer, int* arrived) {
  return apiGuard("braidCommProbe", [&] {
    BRAID_TRY(checkComm(comm, false));
    if (!arrived) return fail(ncclInvalidArgument, "arrived is NULL");
    const Team& team = comm->team;
    if (peer < 0 || peer >= team.nranks || peer == team.rank)
      return fail(ncclInvalidArgument, "peer=%d: must be another rank of the %d", peer,
                  team.nranks);
    const bool connected = peer < static_cast<int>(team.recvFrom.size()) && team.recvFrom[peer];
    *arrived = connected && team.recvFrom[peer]->fifo().hasData() ? 1 : 0;
    return ncclSuccess;
  });
}
