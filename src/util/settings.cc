#include "util/settings.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "util/log.h"

namespace braid {
namespace {

bool isInteger(SettingType type) {
  return type == SettingType::kInt || type == SettingType::kForeignInt;
}

// The number `text` holds (integers: base 10, or 0x hex), if it is one of the setting's type.
bool parseNumber(const SettingSpec& spec, const char* text, double* out) {
  if (*text == 0) return false;
  char* end = nullptr;
  errno = 0;
  if (isInteger(spec.type)) {
    const long long v = std::strtoll(text, &end, 0);
    *out = static_cast<double>(v);
  } else {
    *out = std::strtod(text, &end);
  }
  return errno == 0 && *end == 0 && std::isfinite(*out);
}

bool isChoice(const SettingSpec& spec, std::string_view value) {
  std::string_view choices = spec.choices;
  while (!choices.empty()) {
    const std::size_t bar = choices.find('|');
    if (choices.substr(0, bar) == value) return true;
    if (bar == std::string_view::npos) break;
    choices.remove_prefix(bar + 1);
  }
  return false;
}

// What is wrong with the set value `text` ("" when nothing is).
std::string problemWith(const SettingSpec& spec, const char* text) {
  char range[96];
  switch (spec.type) {
    case SettingType::kInt:
    case SettingType::kDouble: {
      double v = 0;
      if (parseNumber(spec, text, &v) && v >= spec.min && v <= spec.max) return "";
      std::snprintf(range, sizeof(range), "%s in [%.17g, %.17g]",
                    spec.type == SettingType::kInt ? "an integer" : "a number", spec.min, spec.max);
      return std::string(spec.name) + "=" + text + ": must be " + range;
    }
    case SettingType::kChoice:
      if (isChoice(spec, text)) return "";
      return std::string(spec.name) + "=" + text + ": must be one of " + spec.choices;
    default:
      return "";
  }
}

double numberOrDefault(Setting setting) {
  const SettingSpec& spec = settingSpec(setting);
  const char* text = settingRaw(setting);
  if (!text || !*text) return spec.defaultNumber;
  double v = 0;
  if (!parseNumber(spec, text, &v)) {
    BRAID_WARN("%s=%s is not a number; using the default %.17g", spec.name, text,
               spec.defaultNumber);
    return spec.defaultNumber;
  }
  if (v < spec.min || v > spec.max) {
    if (spec.type == SettingType::kForeignInt) {
      v = v < spec.min ? spec.min : spec.max;  // another tool's range: Braid uses what fits
    } else {
      BRAID_WARN("%s=%s is outside [%.17g, %.17g]; using the default %.17g", spec.name, text,
                 spec.min, spec.max, spec.defaultNumber);
      return spec.defaultNumber;
    }
  }
  BRAID_INFO(kSubsysEnv, "%s set by environment to %s", spec.name, text);
  return v;
}

}  // namespace

int64_t settingInt(Setting setting) {
  return static_cast<int64_t>(numberOrDefault(setting));
}

double settingDouble(Setting setting) {
  return numberOrDefault(setting);
}

std::string settingText(Setting setting) {
  const SettingSpec& spec = settingSpec(setting);
  const char* text = settingRaw(setting);
  if (!text) return spec.defaultText;
  if (spec.type == SettingType::kChoice && !isChoice(spec, text)) {
    BRAID_WARN("%s=%s is not one of %s; using the default %s", spec.name, text, spec.choices,
               spec.defaultText);
    return spec.defaultText;
  }
  BRAID_INFO(kSubsysEnv, "%s set by environment to %s", spec.name, text);
  return text;
}

std::string checkSettings() {
  for (const SettingSpec& spec : settingSpecs()) {
    const char* text = settingRaw(spec.id);
    if (!text) continue;
    // An empty number reads as unset, as it always has (a launcher may export NAME=).
    if ((spec.type == SettingType::kInt || spec.type == SettingType::kDouble) && !*text) continue;
    if (std::string problem = problemWith(spec, text); !problem.empty()) return problem;
  }
  return "";
}

}  // namespace braid
