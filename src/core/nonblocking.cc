#include "core/nonblocking.h"

#include <algorithm>
#include <cstring>
#include <exception>
#include <utility>

#include "core/comm.h"
#include "util/status.h"

namespace braid {

std::shared_ptr<OwnedConfig> ownConfig(const ncclConfig_t* config) {
  auto owned = std::make_shared<OwnedConfig>();
  owned->config = NCCL_CONFIG_INITIALIZER;
  if (!config) return owned;
  owned->present = true;
  // An older caller's struct may be shorter: copy what it has, the rest stays at the defaults.
  memcpy(&owned->config, config, std::min(config->size, sizeof(ncclConfig_t)));
  if (config->commName) {
    owned->commName = config->commName;
    owned->config.commName = owned->commName.c_str();
  }
  return owned;
}

bool commIsNonblocking(const ncclComm* comm) {
  return comm->config.blocking == 0;
}

ncclResult_t asyncSubmit(ncclComm* comm, std::function<ncclResult_t()> task) {
  {
    std::lock_guard<std::mutex> lock(comm->asyncWork.mutex);
    comm->asyncWork.pending++;
    // An earlier error stays visible; otherwise the communicator is busy until the queue drains.
    int idle = ncclSuccess;
    comm->asyncError.compare_exchange_strong(idle, ncclInProgress);
  }
  comm->worker.submit([comm, task = std::move(task)] {
    ncclResult_t r;
    try {
      r = task();
    } catch (const std::exception& e) {
      r = fail(ncclInternalError, "unexpected exception: %s", e.what());
    } catch (...) {
      r = fail(ncclInternalError, "unexpected exception");
    }
    if (r != ncclSuccess) commSetError(comm, r, lastError());
    std::lock_guard<std::mutex> lock(comm->asyncWork.mutex);
    if (--comm->asyncWork.pending == 0) {
      int busy = ncclInProgress;
      comm->asyncError.compare_exchange_strong(busy, ncclSuccess);
      comm->asyncWork.idle.notify_all();
    }
  });
  return ncclInProgress;
}

void asyncDrain(ncclComm* comm) {
  std::unique_lock<std::mutex> lock(comm->asyncWork.mutex);
  comm->asyncWork.idle.wait(lock, [comm] { return comm->asyncWork.pending == 0; });
}

}  // namespace braid
