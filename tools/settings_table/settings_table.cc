// braid-settings-table [--check FILE | --write FILE]: prints the Markdown table of every
// environment variable in src/util/settings_table.h; with a file (the README), checks or
// rewrites the table between its two markers.
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "util/settings.h"

namespace {

constexpr const char* kBegin =
    "<!-- environment variables: generated from src/util/settings_table.h by "
    "build/bin/braid-settings-table --write README.md -->\n";
constexpr const char* kEnd = "<!-- end of the generated table -->\n";

std::string table() {
  std::ostringstream out;
  out << kBegin << "| variable | meaning | default |\n|---|---|---|\n";
  for (const braid::SettingSpec& spec : braid::settingSpecs())
    out << "| `" << spec.name << "` | " << spec.meaning << " | " << spec.readmeDefault << " |\n";
  out << kEnd;
  return out.str();
}

int usage() {
  std::fprintf(stderr, "usage: braid-settings-table [--check FILE | --write FILE]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 1) {
    std::cout << table();
    return 0;
  }
  if (argc != 3) return usage();
  const bool write = std::strcmp(argv[1], "--write") == 0;
  if (!write && std::strcmp(argv[1], "--check") != 0) return usage();
  std::ifstream in(argv[2]);
  if (!in) {
    std::fprintf(stderr, "braid-settings-table: cannot read %s\n", argv[2]);
    return 1;
  }
  std::stringstream whole;
  whole << in.rdbuf();
  const std::string text = whole.str();
  const std::size_t begin = text.find(kBegin);
  const std::size_t end = text.find(kEnd, begin == std::string::npos ? 0 : begin);
  if (begin == std::string::npos || end == std::string::npos) {
    std::fprintf(stderr, "braid-settings-table: %s has no generated table (markers:\n%s%s)\n",
                 argv[2], kBegin, kEnd);
    return 1;
  }
  const std::string current = text.substr(begin, end + std::strlen(kEnd) - begin);
  const std::string wanted = table();
  if (!write) {
    if (current == wanted) return 0;
    std::fprintf(stderr,
                 "braid-settings-table: the table in %s is not the settings table's; run "
                 "build/bin/braid-settings-table --write %s. It should read:\n%s",
                 argv[2], argv[2], wanted.c_str());
    return 1;
  }
  std::ofstream(argv[2]) << text.substr(0, begin) << wanted << text.substr(end + std::strlen(kEnd));
  return 0;
}
