#include "oracle/oracle_grid.h"

#include <algorithm>
#include <cstdlib>

namespace braid::oracle {
namespace {

constexpr int kMaxNamespaces = 3;

}  // namespace

void runGridPoint(test::RankShape shape, const GridPoint& p, const std::vector<OracleCase>& cases,
                  size_t slotBytes, double timeoutS, const Env& extraEnv) {
  const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
  OracleRun run;
  run.cases = cases;
  run.seed = seedFrom(std::string(info->test_suite_name()) + "." + info->name());
  // BRAID_ORACLE_SEED explores other data (soak sweeps); the default keeps runs reproducible.
  if (const char* extra = getenv("BRAID_ORACLE_SEED")) run.seed ^= seedFrom(extra);
  run.transports = {p.transport};
  run.registration = p.registration;
  // More ranks than namespaces: ranks sharing a namespace talk over shared memory.
  const bool mixed = shape == test::RankShape::kNamespaces && p.nranks > kMaxNamespaces;
  if (mixed) run.transports = {"shm", std::string(p.transport)};
  if (p.hosts > 0) run.transports = {std::string(p.transport), "tcp"};
  auto rankFn = [&](test::RankContext& ctx) {
    if (p.hosts > 0)
      setenv("NCCL_HOSTID", ("emulated-host-" + std::to_string(ctx.rank() % p.hosts)).c_str(), 1);
    runOracleRank(ctx, run);
  };
  test::RunReport report;
  if (shape == test::RankShape::kNamespaces) {
    // Namespaces are separate hosts: every connection is TCP whatever BRAID_TRANSPORTS says.
    test::NamespaceOptions options;
    options.env = oracleEnv(p.algo, "", slotBytes);
    options.env.insert(options.env.end(), extraEnv.begin(), extraEnv.end());
    if (p.registration != Registration::kNone)
      options.env.push_back({"BRAID_ZERO_COPY_MIN_BYTES", "1"});
    options.timeoutS = timeoutS;
    options.namespaces = std::min(p.nranks, kMaxNamespaces);
    // Contiguous blocks put ring neighbours in one namespace, so both transports are used.
    options.placement = mixed ? test::Placement::kBlocks : test::Placement::kRoundRobin;
    report = test::runInNamespaces(p.nranks, rankFn, options);
  } else {
    EXPECT_TRUE(p.hosts == 0 || shape == test::RankShape::kProcesses)
        << "threads of one process are on one host";
    test::RunOptions options;
    options.env =
        oracleEnv(p.algo, p.hosts > 0 ? std::string(p.transport) + ",tcp" : p.transport, slotBytes);
    options.env.insert(options.env.end(), extraEnv.begin(), extraEnv.end());
    if (p.registration != Registration::kNone)
      options.env.push_back({"BRAID_ZERO_COPY_MIN_BYTES", "1"});
    options.timeoutS = timeoutS;
    report = shape == test::RankShape::kThreads ? test::runThreads(p.nranks, rankFn, options)
                                                : test::runProcesses(p.nranks, rankFn, options);
  }
  std::string problems = verifyOracleReport(report, run);
  EXPECT_TRUE(problems.empty()) << problems;
  if (mixed && !test::isNamespaceChild()) {
    std::string all;
    for (const std::string& used : report.valuesOf("transports")) all += used + ",";
    EXPECT_NE(all.find("shm"), std::string::npos) << all;
    EXPECT_NE(all.find(p.transport), std::string::npos) << all;
  }
}

}  // namespace braid::oracle
