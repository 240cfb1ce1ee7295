#include "core/host_stream.h"

#include <chrono>
#include <exception>
#include <memory>
#include <unordered_set>

#include "core/comm.h"
#include "util/status.h"

namespace braid {
namespace {

std::mutex registryMutex;
std::unordered_set<const void*>& registry() {
  static auto* live = new std::unordered_set<const void*>();  // never destroyed: used at exit
  return *live;
}

}  // namespace

HostStream::~HostStream() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void HostStream::submit(std::vector<ncclComm*> comms, std::function<ncclResult_t()> work) {
  for (ncclComm* c : comms) c->streamWork.fetch_add(1);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back({std::move(comms), std::move(work)});
    pending_++;
    if (!thread_.joinable()) thread_ = std::thread([this] { loop(); });
  }
  wake_.notify_one();
}

void HostStream::loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    wake_.wait(lock, [this] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) return;
    Item item = std::move(queue_.front());
    queue_.pop_front();
    bool skip = error_ != ncclSuccess;  // a failed stream runs nothing more, as CUDA's do
    lock.unlock();
    ncclResult_t r = ncclSuccess;
    std::string text;
    if (!skip) {
      clearLastError();
      try {
        r = item.work();
      } catch (const std::exception& e) {
        r = fail(ncclInternalError, "host stream work threw: %s", e.what());
      }
      if (r != ncclSuccess) text = lastError();
    }
    for (ncclComm* c : item.comms) c->streamWork.fetch_sub(1);
    lock.lock();
    if (r != ncclSuccess && error_ == ncclSuccess) {
      error_ = r;
      errorText_ = text.empty() ? "host stream work failed" : text;
    }
    if (--pending_ == 0) idle_.notify_all();
  }
}

ncclResult_t HostStream::query() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (error_ != ncclSuccess) {
    setLastError(errorText_);
    return error_;
  }
  return pending_ == 0 ? ncclSuccess : ncclInProgress;
}

ncclResult_t HostStream::synchronize() {
  std::unique_lock<std::mutex> lock(mutex_);
  idle_.wait(lock, [this] { return pending_ == 0; });
  if (error_ != ncclSuccess) setLastError(errorText_);
  return error_;
}

HostStream* hostStreamCreate() {
  auto* s = new HostStream();
  std::lock_guard<std::mutex> lock(registryMutex);
  registry().insert(s);
  return s;
}

HostStream* hostStreamFromHandle(const void* handle) {
  if (!handle) return nullptr;
  std::lock_guard<std::mutex> lock(registryMutex);
  return registry().count(handle) ? static_cast<HostStream*>(const_cast<void*>(handle)) : nullptr;
}

ncclResult_t hostStreamDestroy(HostStream* stream) {
  {
    std::lock_guard<std::mutex> lock(registryMutex);
    registry().erase(stream);
  }
  ncclResult_t r = stream->synchronize();
  delete stream;
  return r;
}

void commDrainStreamWork(ncclComm* comm) {
  while (comm->streamWork.load() > 0) std::this_thread::sleep_for(std::chrono::microseconds(200));
}

}  // namespace braid
