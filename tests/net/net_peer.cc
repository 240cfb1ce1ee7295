// The far end of a plugin connection in a process of its own, for tests that kill it:
//   net_peer PLUGIN VERSION HANDLE_HEX
// loads the plugin, connects to the handle (printed by the test's listen), sends one 64-byte
// message with tag 1, prints "sent" and waits to be killed. A separate program (not a fork of the
// test) so that UCX starts in a process that never ran it before.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "net/net_api.h"

using namespace braid::nettest;

namespace {

int fail(const char* what) {
  fprintf(stderr, "net_peer: %s\n", what);
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4 || strlen(argv[3]) != 2 * NCCL_NET_HANDLE_MAXSIZE) return fail("usage");
  std::string error;
  auto net = NetApi::load(argv[1], atoi(argv[2]), &error);
  if (!net) return fail(error.c_str());
  char handle[NCCL_NET_HANDLE_MAXSIZE];
  for (int i = 0; i < NCCL_NET_HANDLE_MAXSIZE; i++)
    handle[i] = static_cast<char>(std::stoi(std::string(argv[3] + 2 * i, 2), nullptr, 16));
  if (net->init() != ncclSuccess) return fail("init");
  void* comm = nullptr;
  for (int tries = 0; !comm; tries++) {
    if (net->connect(handle, &comm) != ncclSuccess || tries > 100000) return fail("connect");
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  char data[64] = "from the peer";
  void *mh = nullptr, *req = nullptr;
  if (net->regMr(comm, data, sizeof(data), NCCL_PTR_HOST, &mh) != ncclSuccess) return fail("regMr");
  while (!req)
    if (net->isend(comm, data, sizeof(data), 1, mh, &req) != ncclSuccess) return fail("isend");
  for (int done = 0; !done;)
    if (net->test(req, &done, nullptr) != ncclSuccess) return fail("test");
  printf("sent\n");
  fflush(stdout);
  for (;;) pause();
}
