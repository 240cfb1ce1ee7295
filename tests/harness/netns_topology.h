// A throw-away set of network namespaces: a hub namespace holding a bridge, and 2-3 "host"
// namespaces, each with one veth (eth0, 10.213.0.(i+1)/24) plugged into the bridge; with two
// interfaces, a second bridge and a second veth each (eth1, 10.213.1.(i+1)/24). Nothing is
// created in the namespace the tests run in. Names carry the creating pid, so namespaces left by
// a test process that was killed are recognised and removed by the next one.
#pragma once

#include <string>
#include <vector>

namespace braid::test::internal {

/// Runs a program (no shell) and returns its exit status; stdout+stderr go to *output.
int runCommand(const std::vector<std::string>& argv, std::string* output);

class NamespaceTopology {
 public:
  static constexpr const char* kInterface = "eth0";
  static constexpr const char* kSubnet = "10.213.0.";

  NamespaceTopology() = default;
  ~NamespaceTopology() { destroy(); }
  NamespaceTopology(const NamespaceTopology&) = delete;
  NamespaceTopology& operator=(const NamespaceTopology&) = delete;

  /// Creates `count` host namespaces with `interfaces` (1 or 2) interfaces each; false (with
  /// *error set) if anything fails, in which case whatever was created has been removed again.
  bool create(int count, std::string* error, int interfaces = 1);
  /// Deletes every namespace this object created (idempotent).
  void destroy();

  const std::vector<std::string>& hosts() const { return hosts_; }
  /// Connects or disconnects a host namespace from the bridge (its port goes up or down).
  bool setConnected(int host, bool connected, std::string* error);
  static std::string addressOf(int host) { return kSubnet + std::to_string(host + 1); }
  /// NCCL_SOCKET_IFNAME for `interfaces` interfaces: "eth0", "eth0,eth1".
  static std::string interfaceList(int interfaces) {
    return interfaces > 1 ? "eth0,eth1" : kInterface;
  }

 private:
  bool run(const std::vector<std::string>& argv, std::string* error);

  std::string hub_;
  std::vector<std::string> hosts_;
  std::vector<std::string> created_;
};

/// Removes braid test namespaces whose creating process no longer exists.
void removeStaleNamespaces();

/// Prefix of every namespace name the harness creates.
constexpr const char* kNamespacePrefix = "braidt-";

}  // namespace braid::test::internal
