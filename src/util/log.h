// NCCL-style logging: NCCL_DEBUG=WARN|INFO|TRACE, NCCL_DEBUG_SUBSYS filters, NCCL_DEBUG_FILE with
// %h (host) and %p (pid). Lines look like "host:pid:tid [rank] BRAID INFO text".
#pragma once

namespace braid {

enum LogLevel {
  kLogNone = 0,
  kLogVersion = 1,
  kLogWarn = 2,
  kLogInfo = 3,
  kLogAbort = 4,
  kLogTrace = 5
};
enum LogSubsys : unsigned {
  kSubsysInit = 1u << 0,
  kSubsysColl = 1u << 1,
  kSubsysP2p = 1u << 2,
  kSubsysShm = 1u << 3,
  kSubsysNet = 1u << 4,
  kSubsysGraph = 1u << 5,
  kSubsysTune = 1u << 6,
  kSubsysEnv = 1u << 7,
  kSubsysAlloc = 1u << 8,
  kSubsysBootstrap = 1u << 9,
  kSubsysAll = ~0u,
};

/// Current level (parsed once from the environment).
int logLevel();
bool logEnabled(int level, unsigned subsys);
void logMessage(int level, unsigned subsys, const char* file, int line, const char* fmt, ...)
    __attribute__((format(printf, 5, 6)));
/// The rank printed in this thread's log lines (-1: none).
void setLogRank(int rank);

}  // namespace braid

#define BRAID_LOG(level, subsys, ...)                                      \
  do {                                                                     \
    if (::braid::logEnabled(level, subsys))                                \
      ::braid::logMessage(level, subsys, __FILE__, __LINE__, __VA_ARGS__); \
  } while (0)
#define BRAID_WARN(...) BRAID_LOG(::braid::kLogWarn, ::braid::kSubsysAll, __VA_ARGS__)
#define BRAID_INFO(subsys, ...) BRAID_LOG(::braid::kLogInfo, subsys, __VA_ARGS__)
#define BRAID_TRACE(subsys, ...) BRAID_LOG(::braid::kLogTrace, subsys, __VA_ARGS__)
