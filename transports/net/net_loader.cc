#include "transports/net/net_loader.h"

#include <dlfcn.h>
#include <strings.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <memory>
#include <mutex>
#include <sstream>
#include <vector>

#include "util/settings.h"
#include "util/log.h"
#include "util/status.h"

namespace braid {
namespace {

constexpr int kNewestVersion = 11;
constexpr int kOldestVersion = 8;

struct Attempt {
  std::string name;                   ///< as NCCL_NET_PLUGIN (or the default) gave it
  std::string outcome;                ///< what happened, for reports
  std::unique_ptr<NetPlugin> plugin;  ///< set when loaded, initialised and with a device
};

struct Registry {
  std::mutex mutex;
  std::vector<Attempt> attempts;  ///< every plugin name tried in this process, once each
};

Registry& registry() {
  static auto* r = new Registry();  // plugins stay loaded until the process ends
  return *r;
}

// Plugins log through this: their lines land in Braid's log, NET subsystem.
void pluginLogger(ncclDebugLogLevel level, unsigned long, const char* file, int line,
                  const char* fmt, ...) {
  const int braidLevel = level == NCCL_LOG_WARN    ? kLogWarn
                         : level == NCCL_LOG_TRACE ? kLogTrace
                         : level == NCCL_LOG_NONE  ? kLogNone
                                                   : kLogInfo;
  if (braidLevel == kLogNone || !logEnabled(braidLevel, kSubsysNet)) return;
  char text[1024];
  va_list args;
  va_start(args, fmt);
  vsnprintf(text, sizeof(text), fmt, args);
  va_end(args);
  logMessage(braidLevel, kSubsysNet, file ? file : "net-plugin", line, "%s", text);
}

// The folder Braid's own library is in: an installed plugin sits beside it.
std::string ownFolder() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&selectNetwork), &info) == 0 || !info.dli_fname) return "";
  std::string path = info.dli_fname;
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash);
}

bool isLibraryName(const std::string& n) {
  return n.size() > 6 && n.compare(0, 3, "lib") == 0 && n.compare(n.size() - 3, 3, ".so") == 0;
}

// dlopen as NCCL does (RTLD_NOW | RTLD_LOCAL), then beside Braid's library for a bare file name.
// `tried` collects "path: why not" for every failure.
void* openLibrary(const std::string& file, std::string* opened, std::vector<std::string>* tried) {
  std::vector<std::string> paths = {file};
  if (file.find('/') == std::string::npos) {
    const std::string folder = ownFolder();
    if (!folder.empty()) paths.push_back(folder + "/" + file);
  }
  for (const std::string& path : paths) {
    if (void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL)) {
      *opened = path;
      return h;
    }
    const char* e = dlerror();
    std::string why = e ? e : "dlopen failed";
    // dlerror repeats the path: keep what follows it.
    if (const size_t colon = why.rfind(": "); colon != std::string::npos)
      why = why.substr(colon + 2);
    tried->push_back(path + " (" + why + ")");
  }
  return nullptr;
}

// The net functions Braid calls must all be there (names for the report).
template <class T>
const char* missingFunction(const T& t) {
  const std::pair<const void*, const char*> fns[] = {
      {reinterpret_cast<const void*>(t.init), "init"},
      {reinterpret_cast<const void*>(t.devices), "devices"},
      {reinterpret_cast<const void*>(t.getProperties), "getProperties"},
      {reinterpret_cast<const void*>(t.listen), "listen"},
      {reinterpret_cast<const void*>(t.connect), "connect"},
      {reinterpret_cast<const void*>(t.accept), "accept"},
      {reinterpret_cast<const void*>(t.regMr), "regMr"},
      {reinterpret_cast<const void*>(t.deregMr), "deregMr"},
      {reinterpret_cast<const void*>(t.isend), "isend"},
      {reinterpret_cast<const void*>(t.irecv), "irecv"},
      {reinterpret_cast<const void*>(t.test), "test"},
      {reinterpret_cast<const void*>(t.closeSend), "closeSend"},
      {reinterpret_cast<const void*>(t.closeRecv), "closeRecv"},
      {reinterpret_cast<const void*>(t.closeListen), "closeListen"}};
  for (const auto& [fn, name] : fns)
    if (!fn) return name;
  return nullptr;
}

const char* missingIn(int version, const void* table) {
  switch (version) {
    case 8:
      return missingFunction(*static_cast<const ncclNet_v8_t*>(table));
    case 9:
      return missingFunction(*static_cast<const ncclNet_v9_t*>(table));
    case 10:
      return missingFunction(*static_cast<const ncclNet_v10_t*>(table));
    default:
      return missingFunction(*static_cast<const ncclNet_v11_t*>(table));
  }
}

// Opens one NCCL_NET_PLUGIN entry; fills attempt.plugin or says why not.
void loadOne(Attempt* attempt) {
  const std::string& name = attempt->name;
  std::vector<std::string> files = {name};
  if (name.find('/') == std::string::npos && !isLibraryName(name))
    files = {"libnccl-net-" + name + ".so", name};
  std::string path;
  std::vector<std::string> tried;
  void* lib = nullptr;
  for (const std::string& f : files)
    if ((lib = openLibrary(f, &path, &tried))) break;
  if (!lib) {
    attempt->outcome = "cannot open";
    for (size_t i = 0; i < tried.size(); i++) attempt->outcome += (i ? ", " : " ") + tried[i];
    return;
  }
  int version = 0;
  const void* table = nullptr;
  for (int v = kNewestVersion; v >= kOldestVersion && !table; v--) {
    const std::string symbol = "ncclNetPlugin_v" + std::to_string(v);
    if ((table = dlsym(lib, symbol.c_str()))) version = v;
  }
  if (!table) {
    std::string older;
    for (int v = kOldestVersion - 1; v >= 2 && older.empty(); v--)
      if (dlsym(lib, ("ncclNetPlugin_v" + std::to_string(v)).c_str()))
        older = "ncclNetPlugin_v" + std::to_string(v);
    attempt->outcome = path + ": " +
                       (older.empty() ? "exports no ncclNetPlugin_v8 .. ncclNetPlugin_v11 symbol"
                                      : "exports only " + older +
                                            ", an interface older than Braid loads (v8 to "
                                            "v11)");
    return;
  }
  const std::string symbol = "ncclNetPlugin_v" + std::to_string(version);
  if (const char* fn = missingIn(version, table)) {
    attempt->outcome = path + ": " + symbol + "." + fn + " is NULL";
    return;
  }
  auto plugin = std::make_unique<NetPlugin>(version, table, path);
  if (ncclResult_t r = plugin->init(pluginLogger); r != ncclSuccess) {
    attempt->outcome = path + ": " + symbol + ".init returned " + ncclGetErrorString(r);
    return;
  }
  int ndev = 0;
  if (ncclResult_t r = plugin->devices(&ndev); r != ncclSuccess || ndev < 1) {
    attempt->outcome =
        path + ": " + plugin->name() + " has no device" +
        (r == ncclSuccess ? "" : std::string(" (devices returned ") + ncclGetErrorString(r) + ")");
    return;
  }
  attempt->outcome = path + ": network " + plugin->name() + ", " + symbol + ", " +
                     std::to_string(ndev) + " device" + (ndev > 1 ? "s" : "");
  attempt->plugin = std::move(plugin);
}

void tryLoad(Registry& reg, const std::string& name, bool quietIfMissing) {
  for (const Attempt& a : reg.attempts)
    if (a.name == name) return;
  reg.attempts.push_back(Attempt{name, "", nullptr});
  Attempt& a = reg.attempts.back();
  loadOne(&a);
  if (a.plugin)
    BRAID_INFO(kSubsysInit | kSubsysNet, "NET/Plugin: loaded %s", a.outcome.c_str());
  else if (quietIfMissing)
    BRAID_INFO(kSubsysNet, "NET/Plugin: %s: %s", name.c_str(), a.outcome.c_str());
  else
    BRAID_WARN("NET/Plugin: %s: %s; using the next network", name.c_str(), a.outcome.c_str());
}

// The plugin names NCCL_NET_PLUGIN gives now, each loaded on first sight (a process that changes
// it between communicators gets the new plugin; NCCL reads it once).
std::vector<std::string> configuredNames(Registry& reg) {
  std::vector<std::string> names;
  const char* env = settingRaw(Setting::kNcclNetPlugin);
  if (!env) {
    names = {"libnccl-net.so"};
  } else if (strcasecmp(env, "none") != 0) {
    std::stringstream list(env);
    for (std::string name; std::getline(list, name, ',');)
      if (!name.empty()) names.push_back(name);
  }
  for (const std::string& name : names) tryLoad(reg, name, /*quietIfMissing=*/!env);
  return names;
}

NetPlugin* findByName(Registry& reg, const std::string& network) {
  for (Attempt& a : reg.attempts)
    if (a.plugin && strcasecmp(a.plugin->name(), network.c_str()) == 0) return a.plugin.get();
  return nullptr;
}

std::string reportLocked(const Registry& reg) {
  std::string out;
  for (const Attempt& a : reg.attempts)
    out += (out.empty() ? "" : "; ") + a.name + " -> " + a.outcome;
  return out.empty() ? "no plugin tried (NCCL_NET_PLUGIN=none)" : out;
}

}  // namespace

ncclResult_t selectNetwork(const std::string& requested, NetPlugin** plugin) {
  *plugin = nullptr;
  Registry& reg = registry();
  std::lock_guard<std::mutex> lock(reg.mutex);
  const std::vector<std::string> names = configuredNames(reg);
  if (requested.empty()) {
    for (const std::string& name : names)
      for (Attempt& a : reg.attempts)
        if (a.name == name && a.plugin) {
          *plugin = a.plugin.get();
          return ncclSuccess;
        }
    return ncclSuccess;  // Braid's own TCP
  }
  if (strcasecmp(requested.c_str(), kInternalNetworkName) == 0) return ncclSuccess;
  if (NetPlugin* p = findByName(reg, requested)) {
    *plugin = p;
    return ncclSuccess;
  }
  std::string lower = requested;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(tolower(c)); });
  if (lower.find('/') == std::string::npos) tryLoad(reg, lower, /*quietIfMissing=*/true);
  if (NetPlugin* p = findByName(reg, requested)) {
    *plugin = p;
    return ncclSuccess;
  }
  return fail(ncclInvalidArgument,
              "network \"%s\" (NCCL_NET or ncclConfig_t.netName): not found (Braid's own: %s; "
              "plugins: %s)%s",
              requested.c_str(), kInternalNetworkName, reportLocked(reg).c_str(),
              strcasecmp(requested.c_str(), "IB") == 0
                  ? "; Braid has no InfiniBand transport of its own: NCCL_NET=UCX runs over "
                    "verbs through UCX"
                  : "");
}

std::string netPluginReport() {
  Registry& reg = registry();
  std::lock_guard<std::mutex> lock(reg.mutex);
  return reportLocked(reg);
}

}  // namespace braid
