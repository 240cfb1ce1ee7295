// The environment variables Braid reads, as typed identities: each is declared once, with its
// type, default, range and meaning, in util/settings_table.h, read through the functions below
// (never getenv), and checked all at once when a communicator is created (checkSettings), so a
// bad value is refused with ncclInvalidArgument naming the variable instead of being ignored.
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace braid {

enum class Setting : int {
#define BRAID_SETTING(id, ...) id,
#include "util/settings_table.h"
#undef BRAID_SETTING
};

enum class SettingType {
  kInt,
  kDouble,
  kChoice,
  kText,
  kForeignInt,  ///< another tool's variable: read as kInt, clamped to the range, never refused
  kForeignText,
};

struct SettingSpec {
  Setting id;
  const char* name;
  SettingType type;
  double defaultNumber;       ///< kInt, kDouble, kForeignInt
  const char* defaultText;    ///< kChoice, kText, kForeignText: the value when unset
  double min, max;            ///< numbers: the accepted range
  const char* choices;        ///< kChoice: the accepted values, "|"-separated
  const char* readmeDefault;  ///< the README's "default" column
  const char* meaning;        ///< the README's "meaning" column
};

/// Every setting, in the table's order (index = static_cast<int>(id)).
std::span<const SettingSpec> settingSpecs();
const SettingSpec& settingSpec(Setting setting);

/// The variable's text, or nullptr when unset: no parsing, no log line (the logger reads its own
/// settings with it).
const char* settingRaw(Setting setting);
bool settingIsSet(Setting setting);
/// The value, or the default when unset or (outside a communicator's creation, which refuses it
/// first) when invalid, with a warning. Set values are logged once per read at INFO (ENV).
int64_t settingInt(Setting setting);
double settingDouble(Setting setting);
std::string settingText(Setting setting);

/// "" when every variable that is set holds a value of its type within its range, else what is
/// wrong with the first one that does not ("BRAID_RINGS=3: must be an integer in [1, 2]").
std::string checkSettings();

}  // namespace braid
