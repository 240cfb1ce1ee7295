// The driver for compilers without libFuzzer (g++): runs a fuzz target over every file of the
// given corpus folders, then over inputs mutated from them (bit flips, byte changes, cuts,
// splices, random tails) until the time is up. Same targets, same checks as the clang build,
// without coverage guidance. A failing check aborts; the input is saved first, as with
// libFuzzer, to crash-<hash>.
//   target [--seconds S] [--seed N] [corpus folders or files...]
#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

std::string current;  // the input being run, for the crash report

void saveCrash(int sig) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : current) h = (h ^ c) * 1099511628211ull;
  char name[64];
  snprintf(name, sizeof(name), "crash-%016llx", static_cast<unsigned long long>(h));
  if (FILE* f = fopen(name, "wb")) {
    fwrite(current.data(), 1, current.size(), f);
    fclose(f);
  }
  fprintf(stderr, "fuzz driver: signal %d on a %zu-byte input, saved to %s\n", sig, current.size(),
          name);
  signal(sig, SIG_DFL);
  raise(sig);
}

void run(const std::string& input) {
  current = input;
  LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(input.data()), input.size());
}

void load(const std::string& path, std::vector<std::string>* corpus) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return;
  if (S_ISDIR(st.st_mode)) {
    DIR* dir = opendir(path.c_str());
    if (!dir) return;
    std::vector<std::string> names;
    while (dirent* e = readdir(dir))
      if (e->d_name[0] != '.') names.push_back(path + "/" + e->d_name);
    closedir(dir);
    std::sort(names.begin(), names.end());
    for (const std::string& n : names) load(n, corpus);
    return;
  }
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  corpus->push_back(ss.str());
}

std::string mutate(const std::vector<std::string>& corpus, std::mt19937_64& rng) {
  std::string s = corpus.empty() ? std::string() : corpus[rng() % corpus.size()];
  const int edits = 1 + static_cast<int>(rng() % 8);
  for (int e = 0; e < edits; e++) {
    switch (rng() % 6) {
      case 0:  // flip a bit
        if (!s.empty()) s[rng() % s.size()] ^= static_cast<char>(1u << (rng() % 8));
        break;
      case 1:  // an interesting byte
        if (!s.empty()) {
          const char values[] = {0, 1, 0x7f, static_cast<char>(0x80), static_cast<char>(0xff)};
          s[rng() % s.size()] = values[rng() % sizeof(values)];
        }
        break;
      case 2:  // cut
        if (!s.empty()) s.resize(rng() % s.size());
        break;
      case 3:  // random tail
        for (int i = static_cast<int>(rng() % 32); i > 0; i--)
          s.push_back(static_cast<char>(rng()));
        break;
      case 4:  // splice with another entry
        if (!corpus.empty()) {
          const std::string& o = corpus[rng() % corpus.size()];
          if (!o.empty()) s += o.substr(rng() % o.size());
        }
        break;
      default:  // overwrite 4 bytes with a random length-like value
        if (s.size() >= 4) {
          uint32_t v = static_cast<uint32_t>(rng() >> (rng() % 32));
          memcpy(&s[rng() % (s.size() - 3)], &v, 4);
        }
        break;
    }
  }
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  double seconds = 3;
  uint64_t seed = std::random_device{}();
  std::vector<std::string> corpus;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
      seconds = atof(argv[++i]);
    else if (!strcmp(argv[i], "--seed") && i + 1 < argc)
      seed = strtoull(argv[++i], nullptr, 10);
    else
      load(argv[i], &corpus);
  }
  for (int sig : {SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL}) signal(sig, saveCrash);
  for (const std::string& input : corpus) run(input);
  std::mt19937_64 rng(seed);
  size_t runs = corpus.size();
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < until) {
    run(mutate(corpus, rng));
    runs++;
  }
  printf("fuzz driver: %zu inputs (%zu from the corpus, seed %llu), no failure\n", runs,
         corpus.size(), static_cast<unsigned long long>(seed));
  return 0;
}
