#include "core/group.h"

#include <algorithm>
#include <atomic>
#include <future>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/comm.h"
#include "core/host_stream.h"
#include "util/status.h"

namespace braid {
namespace {

struct Task {
  ncclComm* comm;
  std::function<ncclResult_t()> run;
  HostStream* stream;
  TaskEstimate estimate;
};

struct GroupState {
  int depth = 0;
  uint64_t serial = 0;
  std::vector<Task> tasks;
  ncclResult_t deferredError = ncclSuccess;
};

thread_local GroupState tls;
std::atomic<uint64_t> nextSerial{1};

struct Outcome {
  ncclResult_t code = ncclSuccess;
  std::string text;
};

// Runs one communicator's tasks in order, stopping at the first failure.
Outcome runTasks(const std::vector<std::function<ncclResult_t()>>& tasks) {
  Outcome out;
  for (const auto& task : tasks) {
    ncclResult_t r;
    try {
      r = task();
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

}  // namespace

bool groupActive() {
  return tls.depth > 0;
}

uint64_t groupSerial() {
  return tls.depth > 0 ? tls.serial : 0;
}

ncclResult_t groupStart() {
  if (tls.depth++ == 0) tls.serial = nextSerial.fetch_add(1);
  return ncclSuccess;
}

void groupAdd(ncclComm* comm, std::function<ncclResult_t()> task, HostStream* stream,
              TaskEstimate estimate) {
  tls.tasks.push_back({comm, std::move(task), stream, std::move(estimate)});
}

bool runsNow(ncclComm* comm, HostStream* stream) {
  return !stream && !groupActive() && !commIsNonblocking(comm);
}

ncclResult_t runOrDefer(ncclComm* comm, HostStream* stream, std::function<ncclResult_t()> task,
                        TaskEstimate estimate) {
  if (groupActive()) {
    groupAdd(comm, std::move(task), stream, std::move(estimate));
    return ncclSuccess;
  }
  if (stream) {
    stream->submit({comm}, std::move(task));
    return ncclSuccess;
  }
  if (commIsNonblocking(comm)) return asyncSubmit(comm, std::move(task));
  return task();
}

namespace {

ncclResult_t runGroup(std::vector<Task> tasks) {
  // Order-preserving split by communicator.
  std::vector<ncclComm*> order;
  std::map<ncclComm*, std::vector<std::function<ncclResult_t()>>> byComm;
  for (auto& t : tasks) {
    if (!byComm.count(t.comm)) order.push_back(t.comm);
    byComm[t.comm].push_back(std::move(t.run));
  }
  if (order.empty()) return ncclSuccess;  // nothing was queued (count-0 calls, empty groups)
  // Other communicators' shares go to their workers; the calling thread takes the first itself.
  std::vector<Outcome> outcomes(order.size());
  std::vector<std::promise<Outcome>> done(order.size());
  for (size_t i = 1; i < order.size(); i++) {
    auto* list = &byComm[order[i]];
    auto* promise = &done[i];
    order[i]->worker.submit([list, promise] { promise->set_value(runTasks(*list)); });
  }
  outcomes[0] = runTasks(byComm[order[0]]);
  for (size_t i = 1; i < order.size(); i++) outcomes[i] = done[i].get_future().get();
  for (size_t i = 0; i < order.size(); i++) {
    if (outcomes[i].code != ncclSuccess) {
      setLastError(outcomes[i].text);
      return outcomes[i].code;
    }
  }
  return ncclSuccess;
}

}  // namespace

ncclResult_t groupEnd() {
  if (tls.depth == 0)
    return fail(ncclInvalidUsage, "ncclGroupEnd without a matching ncclGroupStart");
  if (--tls.depth > 0) return ncclSuccess;
  std::vector<Task> tasks = std::move(tls.tasks);
  tls.tasks.clear();
  std::set<HostStream*> streams;
  std::vector<ncclComm*> comms;
  for (const Task& t : tasks) {
    streams.insert(t.stream);
    if (std::find(comms.begin(), comms.end(), t.comm) == comms.end()) comms.push_back(t.comm);
  }
  if (streams.size() == 1 && *streams.begin()) {
    HostStream* stream = *streams.begin();
    auto shared = std::make_shared<std::vector<Task>>(std::move(tasks));
    stream->submit(comms, [shared] { return runGroup(std::move(*shared)); });
    return ncclSuccess;
  }
  // Mixed streams: the group runs now, after the host streams it names have drained, which is
  // the order a CUDA group would give (every stream waits for the group).
  for (HostStream* s : streams)
    if (s) BRAID_TRY(s->synchronize());
  return runGroup(std::move(tasks));
}

ncclResult_t groupSimulateEnd(double* estimatedUs) {
  if (tls.depth == 0)
    return fail(ncclInvalidUsage, "ncclGroupSimulateEnd without a matching ncclGroupStart");
  // Communicator management deferred to the group's end (creation, split, ...) cannot be
  // skipped (the caller holds the new handles): the group stays open for an ncclGroupEnd.
  for (const Task& t : tls.tasks)
    if (!t.estimate)
      return fail(ncclInvalidUsage,
                  "ncclGroupSimulateEnd: the group creates or changes communicators, which cannot "
                  "be simulated; the group is still open: end it with ncclGroupEnd");
  std::map<ncclComm*, double> perComm;
  for (const Task& t : tls.tasks) perComm[t.comm] += t.estimate();
  *estimatedUs = 0;
  for (const auto& [comm, us] : perComm) *estimatedUs = std::max(*estimatedUs, us);
  if (--tls.depth > 0) return ncclSuccess;
  // Nothing runs: the work and any point-to-point batch it holds are dropped with the group.
  tls.tasks.clear();
  return ncclSuccess;
}

}  // namespace braid
