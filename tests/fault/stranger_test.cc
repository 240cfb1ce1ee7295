// Uninvited connections to the bootstrap port while 4 ranks initialise (label fault): from the
// hosts of ranks 1-3, a stranger sends random bytes, another trickles a hello one byte at a time
// (slow-loris), another sends a well-formed hello with a replayed old communicator's secret and
// nonce. The root must close each of them and the real ranks must form the communicator and
// compute correct results as if nothing happened. (tests/unit/bootstrap_stranger_test.cc covers
// more kinds of stranger against a root in one process; this runs them across processes and
// hosts during a real rendezvous.)
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <random>
#include <thread>

#include "core/bootstrap.h"
#include "core/bootstrap_wire.h"
#include "core/unique_id.h"
#include "fault/fault_run.h"

namespace braid::fault {
namespace {

using test::RankContext;

// Connects to the root, retrying while rank 0 has not started listening yet.
int connectToRoot(const SockAddr& root, double withinS) {
  const double until = now() + withinS;
  while (now() < until) {
    int fd = socket(root.family(), SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    if (connect(fd, reinterpret_cast<const sockaddr*>(&root.storage), root.len) == 0) return fd;
    close(fd);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return -1;
}

// True once the peer has closed the connection (EOF or reset) within `seconds`.
bool closedWithin(int fd, double seconds) {
  const double until = now() + seconds;
  while (now() < until) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 20) <= 0) continue;
    char buf[256];
    ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) return true;
  }
  return false;
}

enum class Stranger { kGarbage, kSlowLoris, kReplayedId };
const char* strangerName(Stranger s) {
  return s == Stranger::kGarbage     ? "garbage"
         : s == Stranger::kSlowLoris ? "slow-loris"
                                     : "replayed id";
}

// One stranger's visit; returns "" when the root closed the connection as it should.
std::string visit(Stranger kind, const ncclUniqueId& id) {
  UniqueIdFields f;
  SockAddr root;
  if (unpackUniqueId(id, &f, &root) != ncclSuccess) return "bad id";
  int fd = connectToRoot(root, 5);
  if (fd < 0) return "could not reach the root";
  std::string problem;
  switch (kind) {
    case Stranger::kGarbage: {
      std::mt19937 rng(static_cast<unsigned>(getpid()));
      std::string junk(sizeof(AuthHello) + sizeof(RootHello) + 200, '\0');
      for (char& c : junk) c = static_cast<char>(rng());
      send(fd, junk.data(), junk.size(), MSG_NOSIGNAL);
      if (!closedWithin(fd, 6)) problem = "garbage connection not closed";
      break;
    }
    case Stranger::kSlowLoris: {
      // A proper opening, but one byte every 50 ms and never the last: a handshake that never
      // completes in time.
      AuthHello a{kHelloMagic, kBootstrapVersion, {}};
      const char* bytes = reinterpret_cast<const char*>(&a);
      bool closed = false;
      for (size_t i = 0; i + 1 < sizeof(a) && !closed; i++) {
        send(fd, bytes + i, 1, MSG_NOSIGNAL);
        closed = closedWithin(fd, 0.05);
      }
      if (!closed && !closedWithin(fd, 6)) problem = "slow-loris connection not closed";
      break;
    }
    case Stranger::kReplayedId: {
      // An earlier communicator's id: another secret, another nonce. The whole handshake is
      // played (without checking the root's proof, which this id cannot verify).
      UniqueIdFields old = f;
      for (size_t i = 0; i < sizeof(old.secret); i++) old.secret[i] ^= 0x5a;
      old.nonce = f.nonce + 1;
      SockAddr ring;  // well-formed, so the proof is what the root judges
      parseHostPort("127.0.0.1:9", &ring);
      if (bootstrapHandshake(fd, old, 4, 1, ring, Deadline::after(5), nullptr,
                             /*verifyRoot=*/false) == ncclSuccess &&
          !closedWithin(fd, 6))
        problem = "replayed id not refused";
      break;
    }
  }
  close(fd);
  return problem;
}

class Strangers : public ::testing::TestWithParam<Wire> {};

TEST_P(Strangers, RanksFormTheCommunicatorAnyway) {
  const Wire wire = GetParam();
  BRAID_FAULT_SKIP_UNLESS_AVAILABLE(wire);
  auto before = braidShmEntries();
  FaultOptions options;
  options.timeoutS = 20;
  test::RunReport report = runFaultRanks(
      wire, 4,
      [](RankContext& ctx) {
        std::string problem;
        std::thread stranger;
        if (ctx.rank() > 0) {
          Stranger kind = static_cast<Stranger>(ctx.rank() - 1);
          stranger = std::thread([&problem, kind, id = ctx.id()] { problem = visit(kind, id); });
          std::this_thread::sleep_for(std::chrono::milliseconds(30));  // arrives first
        }
        double start = now();
        ncclComm_t comm = ctx.initComm();
        ctx.report("init_s", std::to_string(now() - start));
        int done = 0;
        if (comm) {
          for (; done < 3; done++)
            if (checkedAllReduce(ctx, comm, 4099, done) != ncclSuccess) {
              ctx.fail(std::string("allreduce: ") + ncclGetLastError(comm));
              break;
            }
          ncclCommDestroy(comm);
        }
        ctx.report("completed", std::to_string(done));
        if (stranger.joinable()) stranger.join();
        if (!problem.empty()) ctx.fail(problem);
      },
      options);
  if (isRankChild()) return;
  Verdict v;
  v.ranks.assign(4, Expect::kSuccess);
  std::string who;
  for (Stranger s : {Stranger::kGarbage, Stranger::kSlowLoris, Stranger::kReplayedId})
    who += std::string(who.empty() ? "" : ", ") + strangerName(s);
  judge("strangers at the bootstrap port during init", wire, report, leftoverShm(before), v,
        who + " from ranks 1-3's hosts");
}

INSTANTIATE_TEST_SUITE_P(Fault, Strangers, ::testing::Values(Wire::kShm, Wire::kTcp),
                         [](const ::testing::TestParamInfo<Wire>& info) {
                           return std::string(wireTag(info.param));
                         });

}  // namespace
}  // namespace braid::fault
