// The settings table (src/util/settings_table.h): every entry complete and consistent, and the
// readers and the creation-time check doing what the table says.
#include "util/settings.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <string_view>

#include "harness/harness_internal.h"

namespace braid {
namespace {

using test::internal::ScopedEnv;

bool isNumber(SettingType type) {
  return type == SettingType::kInt || type == SettingType::kDouble ||
         type == SettingType::kForeignInt;
}

TEST(Settings, EveryEntryIsComplete) {
  std::set<std::string_view> names;
  int index = 0;
  for (const SettingSpec& spec : settingSpecs()) {
    SCOPED_TRACE(spec.name);
    EXPECT_EQ(static_cast<int>(spec.id), index++);
    EXPECT_TRUE(names.insert(spec.name).second) << "declared twice";
    EXPECT_GT(std::strlen(spec.meaning), 0u);
    EXPECT_GT(std::strlen(spec.readmeDefault), 0u);
    if (isNumber(spec.type)) {
      EXPECT_LE(spec.min, spec.defaultNumber);
      EXPECT_LE(spec.defaultNumber, spec.max);
    }
    if (spec.type == SettingType::kChoice) {
      const std::string choices = std::string("|") + spec.choices + "|";
      EXPECT_NE(choices.find(std::string("|") + spec.defaultText + "|"), std::string::npos)
          << "the default is not one of the choices";
    }
  }
  EXPECT_GE(index, 40);
}

TEST(Settings, UnsetReadsTheDefault) {
  unsetenv("BRAID_RINGS");
  unsetenv("BRAID_CONNECT");
  unsetenv("BRAID_TIMEOUT_S");
  EXPECT_EQ(settingInt(Setting::kRings), 2);
  EXPECT_EQ(settingText(Setting::kConnect), "auto");
  EXPECT_EQ(settingDouble(Setting::kTimeoutS), 300.0);
  EXPECT_FALSE(settingIsSet(Setting::kRings));
  EXPECT_EQ(settingRaw(Setting::kRings), nullptr);
}

TEST(Settings, SetValuesAreReadAndChecked) {
  ScopedEnv rings({{std::string("BRAID_RINGS"), std::string("1")}});
  ScopedEnv timeout({{std::string("BRAID_TIMEOUT_S"), std::string("0.25")}});
  ScopedEnv connect({{std::string("BRAID_CONNECT"), std::string("neighbours")}});
  ScopedEnv slots({{std::string("BRAID_NSLOTS"), std::string("0x10")}});
  EXPECT_EQ(settingInt(Setting::kRings), 1);
  EXPECT_EQ(settingDouble(Setting::kTimeoutS), 0.25);
  EXPECT_EQ(settingText(Setting::kConnect), "neighbours");
  EXPECT_EQ(settingInt(Setting::kNslots), 16);
  EXPECT_EQ(checkSettings(), "");
}

TEST(Settings, BadValuesAreRefusedByName) {
  {
    ScopedEnv bad({{std::string("BRAID_RINGS"), std::string("3")}});
    EXPECT_EQ(checkSettings(), "BRAID_RINGS=3: must be an integer in [1, 2]");
    EXPECT_EQ(settingInt(Setting::kRings), 2);  // outside a creation: the default
  }
  {
    ScopedEnv bad({{std::string("BRAID_NSLOTS"), std::string("8 slots")}});
    EXPECT_EQ(checkSettings(), "BRAID_NSLOTS=8 slots: must be an integer in [2, 64]");
  }
  {
    ScopedEnv bad({{std::string("BRAID_TIMEOUT_S"), std::string("-1")}});
    EXPECT_EQ(checkSettings(), "BRAID_TIMEOUT_S=-1: must be a number in [0, 1000000000]");
  }
  {
    ScopedEnv bad({{std::string("BRAID_CONNECT"), std::string("everyone")}});
    EXPECT_EQ(checkSettings(), "BRAID_CONNECT=everyone: must be one of auto|all|neighbours");
    EXPECT_EQ(settingText(Setting::kConnect), "auto");
  }
  {
    ScopedEnv bad({{std::string("BRAID_KERNEL_ISA"), std::string("sse")}});
    EXPECT_EQ(checkSettings(), "BRAID_KERNEL_ISA=sse: must be one of avx512|avx2|scalar");
  }
  {
    ScopedEnv bad({{std::string("BRAID_RINGS"), std::string("1.5")}});
    EXPECT_NE(checkSettings(), "");
  }
  {
    ScopedEnv empty({{std::string("BRAID_RINGS"), std::string("")}});  // a launcher's NAME=: unset
    EXPECT_EQ(checkSettings(), "");
    EXPECT_EQ(settingInt(Setting::kRings), 2);
  }
}

TEST(Settings, AnotherToolsVariableIsClampedNotRefused) {
  ScopedEnv queues({{std::string("CUDA_DEVICE_MAX_CONNECTIONS"), std::string("64")}});
  EXPECT_EQ(checkSettings(), "");
  EXPECT_EQ(settingInt(Setting::kCudaDeviceMaxConnections), 32);
}

}  // namespace
}  // namespace braid
