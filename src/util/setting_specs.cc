// The settings table itself (util/settings_table.h) and raw access to it: its own object, with
// no dependency, so that the CPU kernels' objects (which read BRAID_KERNEL_ISA) link with it
// alone in the kernel tests and benchmarks.
#include <cstdlib>
#include <iterator>
#include <type_traits>

#include "util/settings.h"

namespace braid {
namespace {

// The table's default is a number or a text, by the setting's type.
template <typename T>
constexpr double numberOf(T value) {
  if constexpr (std::is_arithmetic_v<T>) {
    return static_cast<double>(value);
  } else {
    return 0;
  }
}
template <typename T>
constexpr const char* textOf(T value) {
  if constexpr (std::is_arithmetic_v<T>) {
    return "";
  } else {
    return value;
  }
}

constexpr SettingSpec kSpecs[] = {
#define BRAID_SETTING(id, name, type, fallback, min, max, choices, readmeDefault, meaning) \
  {Setting::id, name, SettingType::type, numberOf(fallback), textOf(fallback),             \
   min,         max,  choices,           readmeDefault,      meaning},
#include "util/settings_table.h"
#undef BRAID_SETTING
};

constexpr bool inTableOrder() {
  for (std::size_t i = 0; i < std::size(kSpecs); ++i)
    if (static_cast<std::size_t>(kSpecs[i].id) != i) return false;
  return true;
}
static_assert(inTableOrder());

}  // namespace

std::span<const SettingSpec> settingSpecs() {
  return kSpecs;
}

const SettingSpec& settingSpec(Setting setting) {
  return kSpecs[static_cast<int>(setting)];
}

const char* settingRaw(Setting setting) {
  return std::getenv(settingSpec(setting).name);
}

bool settingIsSet(Setting setting) {
  return settingRaw(setting) != nullptr;
}

}  // namespace braid
