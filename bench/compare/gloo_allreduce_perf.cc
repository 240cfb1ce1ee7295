// gloo_allreduce_perf: Gloo's allreduce measured and printed exactly as nccl-tests'
// all_reduce_perf measures and prints an allreduce (see mpi_allreduce_perf.c for the method).
//
// Gloo has no launcher: compare.py starts one process per rank with
//   GLOO_PERF_RANK, GLOO_PERF_SIZE  this rank and the number of ranks
//   GLOO_PERF_STORE                 a fresh, shared directory for the FileStore rendezvous
// Transport: Gloo's TCP transport bound to 127.0.0.1 (Gloo has no shared-memory transport).
// Algorithm: gloo::allreduce with the ring algorithm; it takes separate input and output
// buffers, so out-of-place and in-place are both measured. Options are built once per size and
// mode, outside the timing, like a persistent plan.
#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/config.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>
#include <gloo/types.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "perf_common.h"

namespace {

constexpr const char* kProgram = "gloo_allreduce_perf";
// Control traffic (barriers, time and error exchange) uses its own tags, apart from the
// measured operation's.
constexpr uint32_t kTagBench = 1, kTagControl = 100, kTagBarrier = 200;

using Clock = std::chrono::steady_clock;
using ReduceFn = void (*)(void*, const void*, const void*, size_t);

// The element-wise reduction Gloo calls, or null when Gloo has none for this type and op.
template <typename T>
ReduceFn reduce_function(perf_op op) {
  switch (op) {
    case PERF_SUM:
      return &gloo::sum<T>;
    case PERF_PROD:
      return &gloo::product<T>;
    case PERF_MAX:
      return &gloo::max<T>;
    case PERF_MIN:
      return &gloo::min<T>;
    default:
      return nullptr;
  }
}

ReduceFn reduce_function(perf_type type, perf_op op) {
  switch (type) {
    case PERF_INT8:
      return reduce_function<int8_t>(op);
    case PERF_UINT8:
      return reduce_function<uint8_t>(op);
    case PERF_INT32:
      return reduce_function<int32_t>(op);
    case PERF_UINT32:
      return reduce_function<uint32_t>(op);
    case PERF_INT64:
      return reduce_function<int64_t>(op);
    case PERF_UINT64:
      return reduce_function<uint64_t>(op);
    case PERF_HALF:
      return reduce_function<gloo::float16>(op);
    case PERF_FLOAT:
      return reduce_function<float>(op);
    case PERF_DOUBLE:
      return reduce_function<double>(op);
    default:
      return nullptr;  // no bfloat16 in Gloo
  }
}

class Bench {
 public:
  Bench(std::shared_ptr<gloo::Context> ctx, const perf_options& opts, ReduceFn fn)
      : ctx_(std::move(ctx)), opts_(opts), fn_(fn), elem_(perf_type_size(opts.type)) {
    size_t max_count = std::max<size_t>(opts_.max_bytes / elem_, 1);
    send_ = Allocate(max_count * elem_);
    recv_ = Allocate(max_count * elem_);
    perf_fill_input(send_.get(), max_count, opts_.type, opts_.op, rank(), nranks());
    std::memset(recv_.get(), 0, max_count * elem_);
  }

  int Run();

 private:
  struct FreeDeleter {
    void operator()(void* p) const { std::free(p); }
  };
  using Buffer = std::unique_ptr<void, FreeDeleter>;
  static Buffer Allocate(size_t bytes) {
    void* p = nullptr;
    if (posix_memalign(&p, 4096, bytes) != 0) throw std::bad_alloc();
    return Buffer(p);
  }

  int rank() const { return ctx_->rank; }
  int nranks() const { return ctx_->size; }

  // Gloo's typed setters only take the element size from the pointer type; the reduction
  // function carries the real element type, so an unsigned word of the same size stands in.
  std::unique_ptr<gloo::AllreduceOptions> MakeOptions(size_t count, bool in_place) {
    auto o = std::make_unique<gloo::AllreduceOptions>(ctx_);
    o->setAlgorithm(gloo::AllreduceOptions::Algorithm::RING);
    switch (elem_) {
      case 1:
        SetBuffers<uint8_t>(*o, count, in_place);
        break;
      case 2:
        SetBuffers<uint16_t>(*o, count, in_place);
        break;
      case 4:
        SetBuffers<uint32_t>(*o, count, in_place);
        break;
      default:
        SetBuffers<uint64_t>(*o, count, in_place);
        break;
    }
    o->setReduceFunction(fn_);
    o->setTag(kTagBench);
    return o;
  }
  template <typename Word>
  void SetBuffers(gloo::AllreduceOptions& o, size_t count, bool in_place) {
    if (!in_place) o.setInput(static_cast<Word*>(send_.get()), count);
    o.setOutput(static_cast<Word*>(recv_.get()), count);
  }

  void Barrier() {
    gloo::BarrierOptions o(ctx_);
    o.setTag(kTagBarrier);
    gloo::barrier(o);
  }

  template <typename T>
  std::vector<T> AllGather(T mine) {
    std::vector<T> all(nranks());
    gloo::AllgatherOptions o(ctx_);
    o.setInput(&mine, 1);
    o.setOutput(all.data(), all.size());
    o.setTag(kTagControl);
    gloo::allgather(o);
    return all;
  }

  void Fill(size_t count, bool in_place) {
    perf_fill_input(in_place ? recv_.get() : send_.get(), count, opts_.type, opts_.op, rank(),
                    nranks());
  }

  double TimeMode(size_t count, bool in_place);
  int64_t CheckMode(size_t count, bool in_place);
  void PrintPreamble();

  std::shared_ptr<gloo::Context> ctx_;
  perf_options opts_;
  ReduceFn fn_;
  size_t elem_;
  Buffer send_, recv_;
};

// Average seconds per call, combined over ranks as -a asks.
double Bench::TimeMode(size_t count, bool in_place) {
  if (opts_.check) Fill(count, in_place);
  auto op = MakeOptions(count, in_place);
  gloo::allreduce(*op);
  Barrier();
  auto t0 = Clock::now();
  for (int i = 0; i < opts_.iters; i++) gloo::allreduce(*op);
  double mine = std::chrono::duration<double>(Clock::now() - t0).count() / opts_.iters;
  std::vector<double> all = AllGather(mine);
  return perf_reduce_times(all.data(), nranks(), opts_.time_reduce);
}

// Wrong elements summed over ranks, or -1 when checking is off.
int64_t Bench::CheckMode(size_t count, bool in_place) {
  if (!opts_.check) return -1;
  int64_t wrong = 0;
  auto op = MakeOptions(count, in_place);
  for (int c = 0; c < opts_.check && wrong == 0; c++) {
    Fill(count, in_place);
    if (!in_place) perf_poison_output(recv_.get(), count, opts_.type);
    gloo::allreduce(*op);
    int64_t mine = perf_count_wrong(recv_.get(), count, opts_.type, opts_.op, nranks());
    for (int64_t w : AllGather(mine)) wrong += w;
  }
  return wrong;
}

void Bench::PrintPreamble() {
  char host[64] = {0};
  gethostname(host, sizeof host - 1);
  std::vector<int> pids = AllGather(static_cast<int>(getpid()));
  if (rank() != 0) return;
  char library[96];
  std::snprintf(library, sizeof library, "Gloo %d.%d.%d, ring allreduce", GLOO_VERSION_MAJOR,
                GLOO_VERSION_MINOR, GLOO_VERSION_PATCH);
  perf_print_header(stdout, &opts_, kProgram, library, "tcp 127.0.0.1", nranks());
  // All ranks run on this host (loopback rendezvous).
  for (int r = 0; r < nranks(); r++) perf_print_rank_line(stdout, r, pids[r], host);
  perf_print_table_header(stdout);
}

int Bench::Run() {
  PrintPreamble();
  // Warm-up sweep over all sizes first, as all_reduce_perf does.
  for (size_t bytes = opts_.min_bytes; bytes && bytes <= opts_.max_bytes; bytes *= 2) {
    size_t count = bytes / elem_;
    if (count == 0 || opts_.warmup_iters == 0) continue;
    auto op = MakeOptions(count, false);
    for (int i = 0; i < opts_.warmup_iters; i++) gloo::allreduce(*op);
  }
  int64_t failed = 0;
  double busbw_sum = 0.0;
  int busbw_n = 0;
  for (size_t size = opts_.min_bytes; size; size = perf_next_size(&opts_, size)) {
    size_t count = size / elem_;
    if (count == 0) continue;
    size_t bytes = count * elem_;
    if (rank() == 0) perf_print_row_start(stdout, bytes, count, &opts_);
    for (int in_place = 0; in_place <= 1; in_place++) {
      double t = TimeMode(count, in_place);
      int64_t wrong = CheckMode(count, in_place);
      failed += wrong > 0;
      busbw_sum += perf_busbw(bytes, t, nranks());
      busbw_n++;
      if (rank() == 0) perf_print_row_mode(stdout, t, bytes, nranks(), wrong);
    }
    if (rank() == 0) perf_print_row_end(stdout);
  }
  if (rank() == 0) perf_print_footer(stdout, failed, busbw_n ? busbw_sum / busbw_n : 0.0);
  Barrier();
  return failed ? 1 : 0;
}

int EnvInt(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v ? std::atoi(v) : fallback;
}

}  // namespace

int main(int argc, char** argv) {
  const char* store_dir = std::getenv("GLOO_PERF_STORE");
  const int rank = EnvInt("GLOO_PERF_RANK", -1), nranks = EnvInt("GLOO_PERF_SIZE", -1);
  perf_options opts;
  int rc = perf_parse_options(argc, argv, &opts, kProgram, rank <= 0);
  if (rc != 0) return rc == 1 ? 0 : rc;
  if (!store_dir || rank < 0 || nranks < 1 || rank >= nranks) {
    std::fprintf(stderr,
                 "%s: set GLOO_PERF_RANK, GLOO_PERF_SIZE and GLOO_PERF_STORE (a fresh directory "
                 "shared by all ranks); compare.py does this\n",
                 kProgram);
    return 2;
  }
  ReduceFn fn = reduce_function(opts.type, opts.op);
  if (!fn) {
    if (rank == 0)
      std::fprintf(stderr, "%s: Gloo has no %s %s allreduce (unsupported by this peer)\n", kProgram,
                   perf_type_name(opts.type), perf_op_name(opts.op));
    return PERF_EXIT_UNSUPPORTED;
  }
  // No exception may escape main: a failed rendezvous or transport error becomes a message
  // and an exit status that compare.py reports.
  try {
    gloo::transport::tcp::attr attr;
    attr.hostname = "127.0.0.1";
    attr.ai_family = AF_INET;
    auto device = gloo::transport::tcp::CreateDevice(attr);
    gloo::rendezvous::FileStore file_store(store_dir);
    gloo::rendezvous::PrefixStore store("gloo_allreduce_perf", file_store);
    auto context = std::make_shared<gloo::rendezvous::Context>(rank, nranks);
    context->setTimeout(std::chrono::seconds(300));
    context->connectFullMesh(store, device);
    Bench bench(context, opts, fn);
    return bench.Run();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: rank %d: %s\n", kProgram, rank, e.what());
    return 1;
  }
}
