// Writes the NCCL ABI as seen through NVIDIA's nccl.h into a C++ header of constants
// (namespace nvidia_abi), which abi_equality_test.cpp compares against Braid's nccl.h.
// NCCL_HEADER is the full path of NVIDIA's header, so no include path can substitute Braid's.
// It pulls in CUDA's runtime header for types only; nothing here calls into any library.
#include NCCL_HEADER

#ifndef CUDART_VERSION
#error "NCCL_HEADER must name NVIDIA's nccl.h (which includes cuda_runtime.h)"
#endif

#include <cstddef>
#include <cstdio>

#include "abi_probe.h"

#pragma GCC diagnostic ignored "-Wdeprecated-declarations"  // ncclResetDebugInit is listed too

namespace {

void printString(std::FILE* out, const char* name, std::string_view value) {
  std::fprintf(out, "inline constexpr std::string_view %s = \"", name);
  for (char c : value) {
    if (c == '"' || c == '\\') std::fputc('\\', out);
    std::fputc(c, out);
  }
  std::fprintf(out, "\";\n");
}

void printNumber(std::FILE* out, const char* name, double value) {
  // Hexadecimal floating point keeps every value exact.
  std::fprintf(out, "inline constexpr double %s = %a;\n", name, value);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <output header>\n", argv[0]);
    return 2;
  }
  std::FILE* out = std::fopen(argv[1], "w");
  if (out == nullptr) {
    std::perror(argv[1]);
    return 1;
  }
  std::fprintf(out, "// NCCL ABI of %s, measured by nvidia_abi_dump.\n#pragma once\n", NCCL_HEADER);
  std::fprintf(out, "#include <string_view>\nnamespace nvidia_abi {\n");

#define ABI_TYPE(T)                                                   \
  printNumber(out, "type_" #T "_size", sizeof(T));                    \
  printNumber(out, "type_" #T "_align", alignof(T));                  \
  printNumber(out, "type_" #T "_fields", abi_probe::fieldCount<T>()); \
  printString(out, "type_" #T "_name", abi_probe::typeName<T>());     \
  printString(out, "type_" #T "_underlying", abi_probe::underlyingName<T>());
#define ABI_FIELD(S, F)                                                                \
  printNumber(out, "field_" #S "_" #F "_offset", offsetof(S, F));                      \
  printNumber(out, "field_" #S "_" #F "_size", sizeof(S::F));                          \
  printString(out, "field_" #S "_" #F "_type", abi_probe::typeName<decltype(S::F)>()); \
  printNumber(out, "field_" #S "_" #F "_initial",                                      \
              abi_probe::numericValue(abi_probe::initialized<S>().F));
#define ABI_ENUMERATOR(E)                   \
  printNumber(out, "enum_" #E "_value", E); \
  printString(out, "enum_" #E "_type", abi_probe::typeName<decltype(E)>());
#define ABI_NUMERIC_MACRO(M)                 \
  printNumber(out, "macro_" #M "_value", M); \
  printString(out, "macro_" #M "_type", abi_probe::typeName<decltype(M)>());
#define ABI_VERSION_SAMPLE(X, Y, Z) \
  printNumber(out, "version_" #X "_" #Y "_" #Z, NCCL_VERSION(X, Y, Z));
#define ABI_FUNCTION(F)                                                 \
  printString(out, "function_" #F, abi_probe::typeName<decltype(F)>()); \
  printString(out, "function_p" #F, abi_probe::typeName<decltype(p##F)>());
#include "abi_list.def"

  printString(out, "macro_NCCL_SUFFIX", NCCL_SUFFIX);
  printNumber(out, "macro_NCCL_CONFIG_UNDEF_PTR_is_null", NCCL_CONFIG_UNDEF_PTR == nullptr);
  printNumber(out, "macro_NCCL_COMM_NULL_is_null", NCCL_COMM_NULL == nullptr);

  std::fprintf(out, "}  // namespace nvidia_abi\n");
  return std::fclose(out) == 0 ? 0 : 1;
}
