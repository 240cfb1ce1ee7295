// Measurements of the NCCL ABI that work identically in any translation unit that has included
// some nccl.h: the NVIDIA dump program and the Braid equality test both use these, so a
// difference between their results can only come from the headers.
#pragma once

#include <cstddef>
#include <string_view>
#include <type_traits>

namespace abi_probe {

// The compiler's spelling of T (typedefs resolved). Two headers produce the same spelling for a
// type, a field or a function exactly when they declare the same type.
template <typename T>
constexpr std::string_view typeName() {
  std::string_view pretty = __PRETTY_FUNCTION__;
  const std::size_t begin = pretty.find("T = ") + 4;
  return pretty.substr(begin, pretty.find_first_of(";]", begin) - begin);
}

// Underlying integer type of an enum, so that a change of enum width or signedness shows up.
template <typename T>
constexpr std::string_view underlyingName() {
  if constexpr (std::is_enum_v<T>) {
    return typeName<std::underlying_type_t<T>>();
  } else {
    return "not an enum";
  }
}

// Converts to any field type; only ever named in unevaluated brace-initializers.
struct AnyField {
  template <typename T>
  operator T() const;
};

// Number of fields of an aggregate (0 for other types), found by growing a brace-initializer
// until it no longer compiles. Catches a field added in padding, which sizes cannot.
template <typename T, typename... Fields>
constexpr std::size_t fieldCount() {
  if constexpr (!std::is_aggregate_v<T>) {
    return 0;
  } else if constexpr (requires { T{Fields{}..., AnyField{}}; }) {
    return fieldCount<T, Fields..., AnyField>();
  } else {
    return sizeof...(Fields);
  }
}

// A field's value reduced to a number: arithmetic values as they are (all ABI values are exact
// in a double), pointers as 1 when set, arrays as 0.
template <typename T>
constexpr double numericValue(const T& value) {
  if constexpr (std::is_pointer_v<T>) {
    return value != nullptr ? 1.0 : 0.0;
  } else if constexpr (std::is_array_v<T>) {
    return 0.0;
  } else {
    return static_cast<double>(value);
  }
}

// Each struct as its initializer macro builds it; ncclUniqueId has no initializer.
template <typename S>
constexpr S initialized() {
  if constexpr (std::is_same_v<S, ncclConfig_t>) {
    return NCCL_CONFIG_INITIALIZER;
  } else if constexpr (std::is_same_v<S, ncclSimInfo_t>) {
    return NCCL_SIM_INFO_INITIALIZER;
  } else {
    return S{};
  }
}

}  // namespace abi_probe
