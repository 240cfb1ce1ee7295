#include "util/log.h"

#include "util/settings.h"

#include <pthread.h>
#include <strings.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

namespace braid {
namespace {

struct LogConfig {
  int level = kLogNone;
  unsigned subsys = kSubsysInit | kSubsysEnv;  // NCCL's default INFO subsystems, plus coll below
  FILE* file = stderr;
  char host[64] = "";
};

unsigned parseSubsys(const char* s) {
  static const struct {
    const char* name;
    unsigned bit;
  } kNames[] = {{"INIT", kSubsysInit},   {"COLL", kSubsysColl},
                {"P2P", kSubsysP2p},     {"SHM", kSubsysShm},
                {"NET", kSubsysNet},     {"GRAPH", kSubsysGraph},
                {"TUNING", kSubsysTune}, {"ENV", kSubsysEnv},
                {"ALLOC", kSubsysAlloc}, {"BOOTSTRAP", kSubsysBootstrap},
                {"ALL", kSubsysAll}};
  bool invert = (*s == '^');
  if (invert) s++;
  unsigned mask = 0;
  std::string list(s);
  size_t pos = 0;
  while (pos <= list.size()) {
    size_t comma = list.find(',', pos);
    std::string tok =
        list.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    for (auto& n : kNames)
      if (strcasecmp(tok.c_str(), n.name) == 0) mask |= n.bit;
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return invert ? ~mask : mask;
}

std::string expandFileName(const char* pattern, const char* host) {
  std::string out;
  for (const char* p = pattern; *p; p++) {
    if (p[0] == '%' && p[1] == 'h') {
      out += host;
      p++;
    } else if (p[0] == '%' && p[1] == 'p') {
      out += std::to_string(getpid());
      p++;
    } else if (p[0] == '%' && p[1] == '%') {
      out += '%';
      p++;
    } else
      out += *p;
  }
  return out;
}

void readConfig(LogConfig& cfg) {
  cfg = LogConfig();
  gethostname(cfg.host, sizeof(cfg.host) - 1);
  if (char* dot = strchr(cfg.host, '.')) *dot = 0;
  const char* lvl = settingRaw(Setting::kNcclDebug);
  if (lvl) {
    if (!strcasecmp(lvl, "VERSION"))
      cfg.level = kLogVersion;
    else if (!strcasecmp(lvl, "WARN"))
      cfg.level = kLogWarn;
    else if (!strcasecmp(lvl, "INFO"))
      cfg.level = kLogInfo;
    else if (!strcasecmp(lvl, "ABORT"))
      cfg.level = kLogAbort;
    else if (!strcasecmp(lvl, "TRACE"))
      cfg.level = kLogTrace;
  }
  cfg.subsys |= kSubsysColl;
  if (const char* sub = settingRaw(Setting::kNcclDebugSubsys)) cfg.subsys = parseSubsys(sub);
  if (const char* f = settingRaw(Setting::kNcclDebugFile); f && cfg.level > kLogNone) {
    std::string name = expandFileName(f, cfg.host);
    if (FILE* fp = fopen(name.c_str(), "w")) {
      setvbuf(fp, nullptr, _IOLBF, 0);
      cfg.file = fp;
    }
  }
}

// A forked child reads the environment again on its next log call: it may set NCCL_DEBUG* for
// itself, and NCCL_DEBUG_FILE's %p must name its own pid, not its parent's file.
std::atomic<bool> forkedSinceRead{false};

LogConfig& config() {
  static LogConfig cfg;
  static std::once_flag once;
  std::call_once(once, [] {
    readConfig(cfg);
    pthread_atfork(nullptr, nullptr, [] { forkedSinceRead.store(true); });
  });
  if (forkedSinceRead.load(std::memory_order_relaxed) && forkedSinceRead.exchange(false)) {
    // The child's first log call: it normally comes before the child starts threads of its own.
    if (cfg.file != stderr) fclose(cfg.file);
    readConfig(cfg);
  }
  return cfg;
}

thread_local int tlsRank = -1;
std::mutex logMutex;

}  // namespace

int logLevel() {
  return config().level;
}

bool logEnabled(int level, unsigned subsys) {
  const LogConfig& cfg = config();
  if (level > cfg.level) return false;
  if (level >= kLogInfo && !(cfg.subsys & subsys)) return false;
  return true;
}

void setLogRank(int rank) {
  tlsRank = rank;
}

void logMessage(int level, unsigned, const char* file, int line, const char* fmt, ...) {
  LogConfig& cfg = config();
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  const char* name = level == kLogWarn ? "WARN" : level == kLogTrace ? "TRACE" : "INFO";
  long tid = syscall(SYS_gettid);
  std::lock_guard<std::mutex> lock(logMutex);
  if (level == kLogTrace) {
    const char* base = strrchr(file, '/');
    fprintf(cfg.file, "%s:%d:%ld [%d] BRAID %s %s:%d %s\n", cfg.host, getpid(), tid, tlsRank, name,
            base ? base + 1 : file, line, msg);
  } else {
    fprintf(cfg.file, "%s:%d:%ld [%d] BRAID %s %s\n", cfg.host, getpid(), tid, tlsRank, name, msg);
  }
}

}  // namespace braid
