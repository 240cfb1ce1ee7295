#include "harness/netns_topology.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

namespace braid::test::internal {

int runCommand(const std::vector<std::string>& argv, std::string* output) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    *output = std::string("pipe: ") + strerror(errno);
    return -1;
  }
  pid_t pid = fork();
  if (pid < 0) {
    *output = std::string("fork: ") + strerror(errno);
    close(fds[0]);
    close(fds[1]);
    return -1;
  }
  if (pid == 0) {
    dup2(fds[1], 1);
    dup2(fds[1], 2);
    execvp(args[0], args.data());
    const char msg[] = "exec failed\n";
    (void)!write(2, msg, sizeof(msg) - 1);
    _exit(127);
  }
  close(fds[1]);
  output->clear();
  char buf[4096];
  for (ssize_t n; (n = read(fds[0], buf, sizeof(buf))) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    output->append(buf, static_cast<size_t>(n));
  }
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

bool NamespaceTopology::run(const std::vector<std::string>& argv, std::string* error) {
  std::string out;
  int rc = runCommand(argv, &out);
  if (rc == 0) return true;
  std::string cmd;
  for (const std::string& a : argv) cmd += (cmd.empty() ? "" : " ") + a;
  *error = "`" + cmd + "` failed (" + std::to_string(rc) + "): " + out;
  return false;
}

bool NamespaceTopology::create(int count, std::string* error, int interfaces) {
  static std::atomic<int> sequence{0};
  removeStaleNamespaces();
  const std::string base = std::string(kNamespacePrefix) + std::to_string(getpid()) + "-" +
                           std::to_string(sequence++) + "-";
  auto addNamespace = [&](const std::string& name) {
    if (!run({"ip", "netns", "add", name}, error)) return false;
    created_.push_back(name);
    return run({"ip", "-n", name, "link", "set", "lo", "up"}, error);
  };
  hub_ = base + "h";
  bool ok = addNamespace(hub_);
  // One bridge per interface: eth<k> of every host on bridge br<k>, subnet 10.213.<k>.0/24.
  for (int k = 0; ok && k < interfaces; k++) {
    const std::string bridge = "br" + std::to_string(k);
    ok = run({"ip", "-n", hub_, "link", "add", bridge, "type", "bridge"}, error) &&
         run({"ip", "-n", hub_, "link", "set", bridge, "up"}, error);
  }
  for (int i = 0; ok && i < count; i++) {
    const std::string host = base + std::to_string(i);
    ok = addNamespace(host);
    for (int k = 0; ok && k < interfaces; k++) {
      // Port k of host i: "port<i>" for the first interface (setConnected's name), "port<i>-<k>"
      // for the others.
      const std::string port = "port" + std::to_string(i) + (k ? "-" + std::to_string(k) : "");
      const std::string dev = "eth" + std::to_string(k);
      const std::string address = "10.213." + std::to_string(k) + "." + std::to_string(i + 1);
      // The veth is made inside the hub with its peer created straight in the host namespace:
      // no interface ever appears in the namespace the tests run in.
      ok = run({"ip", "-n", hub_, "link", "add", port, "type", "veth", "peer", "name", dev, "netns",
                host},
               error) &&
           run({"ip", "-n", hub_, "link", "set", port, "master", "br" + std::to_string(k), "up"},
               error) &&
           run({"ip", "-n", host, "addr", "add", address + "/24", "dev", dev}, error) &&
           run({"ip", "-n", host, "link", "set", dev, "up"}, error);
    }
    if (ok) hosts_.push_back(host);
  }
  if (!ok) destroy();
  return ok;
}

bool NamespaceTopology::setConnected(int host, bool connected, std::string* error) {
  if (host < 0 || host >= static_cast<int>(hosts_.size())) {
    *error = "no host namespace " + std::to_string(host);
    return false;
  }
  return run(
      {"ip", "-n", hub_, "link", "set", "port" + std::to_string(host), connected ? "up" : "down"},
      error);
}

void NamespaceTopology::destroy() {
  // Deleting a namespace removes its end of each veth pair, which removes the pair.
  for (auto it = created_.rbegin(); it != created_.rend(); ++it) {
    std::string out;
    runCommand({"ip", "netns", "del", *it}, &out);
  }
  created_.clear();
  hosts_.clear();
}

void removeStaleNamespaces() {
  DIR* dir = opendir("/var/run/netns");
  if (!dir) return;
  std::vector<std::string> stale;
  const size_t prefixLen = strlen(kNamespacePrefix);
  while (dirent* e = readdir(dir)) {
    std::string name = e->d_name;
    if (name.compare(0, prefixLen, kNamespacePrefix) != 0) continue;
    pid_t pid = static_cast<pid_t>(atol(name.c_str() + prefixLen));
    if (pid > 0 && kill(pid, 0) != 0 && errno == ESRCH) stale.push_back(name);
  }
  closedir(dir);
  for (const std::string& name : stale) {
    std::string out;
    runCommand({"ip", "netns", "del", name}, &out);
  }
}

}  // namespace braid::test::internal
