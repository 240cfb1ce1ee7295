// Proves that Braid's include/nccl.h declares the same ABI as NVIDIA's NCCL 2.28 header.
// nvidia_abi.h holds NVIDIA's measurements; every one is checked twice: by static_assert (so a
// mismatch breaks the build) and by a GoogleTest expectation (so ctest reports what differs).
#include <nccl.h>

#include <gtest/gtest.h>

#include <cstddef>
#include <string_view>
#include <type_traits>

#include "abi_probe.h"
#include "nvidia_abi.h"

#pragma GCC diagnostic ignored "-Wdeprecated-declarations"  // ncclResetDebugInit is listed too

namespace {

// The header must not drag CUDA in: Braid builds where CUDA is absent.
#ifdef CUDART_VERSION
#error "Braid's nccl.h must not include CUDA headers"
#endif

// Struct tags and handle types, by name, as code may refer to them.
static_assert(std::is_same_v<ncclConfig_t, struct ncclConfig_v22800>);
static_assert(std::is_same_v<ncclSimInfo_t, struct ncclSimInfo_v22200>);
static_assert(std::is_same_v<ncclComm_t, struct ncclComm*>);
static_assert(std::is_same_v<ncclWindow_t, struct ncclWindow_vidmem*>);
static_assert(std::is_same_v<cudaStream_t, struct CUstream_st*>);
static_assert(std::string_view(NCCL_SUFFIX) == nvidia_abi::macro_NCCL_SUFFIX);
static_assert((NCCL_CONFIG_UNDEF_PTR == nullptr) ==
              (nvidia_abi::macro_NCCL_CONFIG_UNDEF_PTR_is_null != 0));
static_assert((NCCL_COMM_NULL == nullptr) == (nvidia_abi::macro_NCCL_COMM_NULL_is_null != 0));

#define ABI_TYPE(T)                                                                            \
  static_assert(sizeof(T) == nvidia_abi::type_##T##_size, "size of " #T);                      \
  static_assert(alignof(T) == nvidia_abi::type_##T##_align, "alignment of " #T);               \
  static_assert(abi_probe::fieldCount<T>() == nvidia_abi::type_##T##_fields, "fields of " #T); \
  static_assert(abi_probe::typeName<T>() == nvidia_abi::type_##T##_name, "type " #T);          \
  static_assert(abi_probe::underlyingName<T>() == nvidia_abi::type_##T##_underlying,           \
                "underlying type of " #T);
#define ABI_FIELD(S, F)                                                                       \
  static_assert(offsetof(S, F) == nvidia_abi::field_##S##_##F##_offset, "offset " #S "." #F); \
  static_assert(sizeof(S::F) == nvidia_abi::field_##S##_##F##_size, "size " #S "." #F);       \
  static_assert(abi_probe::typeName<decltype(S::F)>() == nvidia_abi::field_##S##_##F##_type,  \
                "type " #S "." #F);                                                           \
  static_assert(abi_probe::numericValue(abi_probe::initialized<S>().F) ==                     \
                    nvidia_abi::field_##S##_##F##_initial,                                    \
                "initializer " #S "." #F);
#define ABI_ENUMERATOR(E)                                                                \
  static_assert(static_cast<double>(E) == nvidia_abi::enum_##E##_value, "value of " #E); \
  static_assert(abi_probe::typeName<decltype(E)>() == nvidia_abi::enum_##E##_type,       \
                "enum type of " #E);
#define ABI_NUMERIC_MACRO(M)                                                                \
  static_assert(static_cast<double>(M) == nvidia_abi::macro_##M##_value, "value of " #M);   \
  static_assert(abi_probe::typeName<decltype(M)>() == nvidia_abi::macro_##M##_type, "type " \
                                                                                    "of " #M);
#define ABI_VERSION_SAMPLE(X, Y, Z)                                           \
  static_assert(NCCL_VERSION(X, Y, Z) == nvidia_abi::version_##X##_##Y##_##Z, \
                "NCCL_VERSION(" #X "," #Y "," #Z ")");
#define ABI_FUNCTION(F)                                                             \
  static_assert(abi_probe::typeName<decltype(F)>() == nvidia_abi::function_##F,     \
                "signature of " #F);                                                \
  static_assert(abi_probe::typeName<decltype(p##F)>() == nvidia_abi::function_p##F, \
                "signature of p" #F);
#include "abi_list.def"

TEST(AbiMatchesNvidia, Types) {
#define ABI_TYPE(T)                                                           \
  EXPECT_EQ(sizeof(T), nvidia_abi::type_##T##_size) << #T;                    \
  EXPECT_EQ(alignof(T), nvidia_abi::type_##T##_align) << #T;                  \
  EXPECT_EQ(abi_probe::fieldCount<T>(), nvidia_abi::type_##T##_fields) << #T; \
  EXPECT_EQ(abi_probe::typeName<T>(), nvidia_abi::type_##T##_name) << #T;     \
  EXPECT_EQ(abi_probe::underlyingName<T>(), nvidia_abi::type_##T##_underlying) << #T;
#include "abi_list.def"
}

TEST(AbiMatchesNvidia, StructFieldsAndInitializers) {
#define ABI_FIELD(S, F)                                                                \
  EXPECT_EQ(offsetof(S, F), nvidia_abi::field_##S##_##F##_offset) << #S "." #F;        \
  EXPECT_EQ(sizeof(S::F), nvidia_abi::field_##S##_##F##_size) << #S "." #F;            \
  EXPECT_EQ(abi_probe::typeName<decltype(S::F)>(), nvidia_abi::field_##S##_##F##_type) \
      << #S "." #F;                                                                    \
  EXPECT_EQ(abi_probe::numericValue(abi_probe::initialized<S>().F),                    \
            nvidia_abi::field_##S##_##F##_initial)                                     \
      << #S "." #F;
#include "abi_list.def"
  EXPECT_EQ(sizeof(ncclUniqueId), 128u);
  EXPECT_EQ(abi_probe::initialized<ncclConfig_t>().magic, 0xcafebeefu);
}

TEST(AbiMatchesNvidia, Enumerators) {
#define ABI_ENUMERATOR(E)                                                \
  EXPECT_EQ(static_cast<double>(E), nvidia_abi::enum_##E##_value) << #E; \
  EXPECT_EQ(abi_probe::typeName<decltype(E)>(), nvidia_abi::enum_##E##_type) << #E;
#include "abi_list.def"
}

TEST(AbiMatchesNvidia, Macros) {
#define ABI_NUMERIC_MACRO(M)                                              \
  EXPECT_EQ(static_cast<double>(M), nvidia_abi::macro_##M##_value) << #M; \
  EXPECT_EQ(abi_probe::typeName<decltype(M)>(), nvidia_abi::macro_##M##_type) << #M;
#define ABI_VERSION_SAMPLE(X, Y, Z) \
  EXPECT_EQ(NCCL_VERSION(X, Y, Z), nvidia_abi::version_##X##_##Y##_##Z) << #X "." #Y "." #Z;
#include "abi_list.def"
  EXPECT_EQ(std::string_view(NCCL_SUFFIX), nvidia_abi::macro_NCCL_SUFFIX);
  EXPECT_EQ(NCCL_VERSION_CODE, NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH));
}

TEST(AbiMatchesNvidia, FunctionSignatures) {
#define ABI_FUNCTION(F)                                                          \
  EXPECT_EQ(abi_probe::typeName<decltype(F)>(), nvidia_abi::function_##F) << #F; \
  EXPECT_EQ(abi_probe::typeName<decltype(p##F)>(), nvidia_abi::function_p##F) << "p" #F;
#include "abi_list.def"
}

}  // namespace
