#include "exec/group.h"

#include <algorithm>
#include <exception>
#include <future>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "core/host_stream.h"
#include "exec/device_launch.h"
#include "exec/device_queue.h"
#include "exec/executor.h"
#include "util/status.h"

namespace braid {
namespace {

struct GroupState {
  int depth = 0;
  std::vector<Plan> plans;
  /// Index in `plans` of each communicator's send/receive batch in this group.
  std::map<ncclComm*, size_t> batches;
};

thread_local GroupState tls;

struct Outcome {
  ncclResult_t code = ncclSuccess;
  std::string text;
};

// Runs one communicator's plans in order, stopping at the first failure.
Outcome runInOrder(ncclComm* comm, std::vector<Plan>& plans) {
  Outcome out;
  for (Plan& plan : plans) {
    ncclResult_t r;
    try {
      r = runInTurn(comm, [&plan] { return execute(plan); });
    } catch (const std::exception& e) {
      r = fail(ncclInternalError, "exception: %s", e.what());
    }
    if (r != ncclSuccess) {
      out.code = r;
      out.text = lastError();
      return out;
    }
  }
  return out;
}

ncclResult_t runGroup(std::vector<Plan> plans) {
  // Device plans go to their streams in order; the rest split by communicator, in order. A
  // batch's buffers are known only now: it is placed here.
  std::vector<ncclComm*> order;
  std::map<ncclComm*, std::vector<Plan>> byComm;
  // Collective kernels of one communicator, stream, type and op share a launch (device_launch.h);
  // a communicator's other device work first launches what it has batched, keeping its order.
  std::vector<std::vector<Plan*>> batches;
  auto flush = [&](ncclComm* comm) -> ncclResult_t {
    for (auto it = batches.begin(); it != batches.end();) {
      if (comm && (*it)[0]->comm != comm) {
        ++it;
        continue;
      }
      BRAID_TRY(launchKernels(it->data(), static_cast<int>(it->size())));
      it = batches.erase(it);
    }
    return ncclSuccess;
  };
  for (Plan& plan : plans) {
    if (plan.kind == Plan::Kind::kSendRecv) BRAID_TRY(place(plan));
    if (plan.target == Target::kDeviceKernel && plan.kind == Plan::Kind::kSendRecv) {
      BRAID_TRY(flush(plan.comm));  // the communicator's collectives before, in order
      BRAID_TRY(launchSendRecv(plan));
      continue;
    }
    if (plan.target == Target::kDeviceKernel) {
      auto open = std::find_if(batches.begin(), batches.end(), [&](const std::vector<Plan*>& b) {
        return b[0]->comm == plan.comm;
      });
      if (open != batches.end() &&
          (!sameLaunch(*(*open)[0], plan) ||
           open->size() == static_cast<size_t>(kernels::device::kMaxLaunchItems))) {
        BRAID_TRY(flush(plan.comm));
        open = batches.end();
      }
      if (open == batches.end()) {
        batches.push_back({&plan});
      } else {
        open->push_back(&plan);
      }
      continue;
    }
    if (plan.target != Target::kHost) {
      BRAID_TRY(flush(plan.comm));
      BRAID_TRY(enqueueOnDevice(std::move(plan)));
      continue;
    }
    if (!byComm.count(plan.comm)) order.push_back(plan.comm);
    byComm[plan.comm].push_back(std::move(plan));
  }
  BRAID_TRY(flush(nullptr));
  if (order.empty()) return ncclSuccess;
  // Other communicators' shares go to their lanes; the calling thread takes the first itself.
  std::vector<Outcome> outcomes(order.size());
  std::vector<std::promise<Outcome>> done(order.size());
  for (size_t i = 1; i < order.size(); i++) {
    ncclComm* comm = order[i];
    auto* list = &byComm[comm];
    auto* promise = &done[i];
    comm->lane.submit([comm, list, promise] { promise->set_value(runInOrder(comm, *list)); });
  }
  outcomes[0] = runInOrder(order[0], byComm[order[0]]);
  for (size_t i = 1; i < order.size(); i++) outcomes[i] = done[i].get_future().get();
  for (const Outcome& o : outcomes) {
    if (o.code != ncclSuccess) {
      setLastError(o.text);
      return o.code;
    }
  }
  return ncclSuccess;
}

}  // namespace

bool groupActive() {
  return tls.depth > 0;
}

ncclResult_t groupStart() {
  tls.depth++;
  return ncclSuccess;
}

void groupDefer(Plan plan) {
  if (plan.kind == Plan::Kind::kSendRecv) {
    auto [it, isNew] = tls.batches.emplace(plan.comm, tls.plans.size());
    if (!isNew) {
      std::vector<Transfer>& batch = tls.plans[it->second].transfers;
      batch.insert(batch.end(), plan.transfers.begin(), plan.transfers.end());
      return;
    }
  }
  tls.plans.push_back(std::move(plan));
}

ncclResult_t groupEnd() {
  if (tls.depth == 0)
    return fail(ncclInvalidUsage, "ncclGroupEnd without a matching ncclGroupStart");
  if (--tls.depth > 0) return ncclSuccess;
  std::vector<Plan> plans = std::move(tls.plans);
  tls.plans.clear();
  tls.batches.clear();
  std::set<HostStream*> streams;
  std::vector<std::atomic<int>*> holds;
  for (const Plan& p : plans) {
    streams.insert(hostStreamFromHandle(p.stream));
    if (std::find(holds.begin(), holds.end(), &p.comm->streamWork) == holds.end())
      holds.push_back(&p.comm->streamWork);
  }
  if (streams.size() == 1 && *streams.begin()) {
    auto shared = std::make_shared<std::vector<Plan>>(std::move(plans));
    (*streams.begin())->submit(holds, [shared] { return runGroup(std::move(*shared)); });
    return ncclSuccess;
  }
  // Mixed streams: the group runs now, after the host streams it names have drained, which is
  // the order a CUDA group would give (every stream waits for the group).
  for (HostStream* s : streams)
    if (s) BRAID_TRY(s->synchronize());
  return runGroup(std::move(plans));
}

ncclResult_t groupSimulateEnd(double* estimatedUs) {
  if (tls.depth == 0)
    return fail(ncclInvalidUsage, "ncclGroupSimulateEnd without a matching ncclGroupStart");
  // Communicator management deferred to the group's end (creation, split, ...) cannot be
  // skipped (the caller holds the new handles): the group stays open for an ncclGroupEnd.
  std::map<ncclComm*, double> perComm;
  for (const Plan& p : tls.plans) {
    double us = 0;
    if (!estimateUs(p, &us))
      return fail(ncclInvalidUsage,
                  "ncclGroupSimulateEnd: the group creates or changes communicators, which cannot "
                  "be simulated; the group is still open: end it with ncclGroupEnd");
    perComm[p.comm] += us;
  }
  *estimatedUs = 0;
  for (const auto& [comm, us] : perComm) *estimatedUs = std::max(*estimatedUs, us);
  if (--tls.depth > 0) return ncclSuccess;
  // Nothing runs: the plans, and any send/receive batch among them, are dropped with the group.
  tls.plans.clear();
  tls.batches.clear();
  return ncclSuccess;
}

}  // namespace braid
