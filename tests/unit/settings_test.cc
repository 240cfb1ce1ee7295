// The settings table (src/util/settings_table.h): every entry complete and consistent, and the
// readers and the creation-time check doing what the table says.
#include "util/settings.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <string_view>

namespace braid {
namespace {

// Sets a variable for one test and restores what was there.
class VariableForTest {
 public:
  VariableForTest(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old, had_ = true;
    setenv(name, value, 1);
  }
  ~VariableForTest() {
    if (had_)
      setenv(name_, old_.c_str(), 1);
    else
      unsetenv(name_);
  }

 private:
  const char* name_;
  std::string old_;
  bool had_ = false;
};

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
  VariableForTest rings("BRAID_RINGS", "1");
  VariableForTest timeout("BRAID_TIMEOUT_S", "0.25");
  VariableForTest connect("BRAID_CONNECT", "neighbours");
  VariableForTest slots("BRAID_NSLOTS", "0x10");
  EXPECT_EQ(settingInt(Setting::kRings), 1);
  EXPECT_EQ(settingDouble(Setting::kTimeoutS), 0.25);
  EXPECT_EQ(settingText(Setting::kConnect), "neighbours");
  EXPECT_EQ(settingInt(Setting::kNslots), 16);
  EXPECT_EQ(checkSettings(), "");
}

TEST(Settings, BadValuesAreRefusedByName) {
  {
    VariableForTest bad("BRAID_RINGS", "3");
    EXPECT_EQ(checkSettings(), "BRAID_RINGS=3: must be an integer in [1, 2]");
    EXPECT_EQ(settingInt(Setting::kRings), 2);  // outside a creation: the default
  }
  {
    VariableForTest bad("BRAID_NSLOTS", "8 slots");
    EXPECT_EQ(checkSettings(), "BRAID_NSLOTS=8 slots: must be an integer in [2, 64]");
  }
  {
    VariableForTest bad("BRAID_TIMEOUT_S", "-1");
    EXPECT_EQ(checkSettings(), "BRAID_TIMEOUT_S=-1: must be a number in [0, 1000000000]");
  }
  {
    VariableForTest bad("BRAID_CONNECT", "everyone");
    EXPECT_EQ(checkSettings(), "BRAID_CONNECT=everyone: must be one of auto|all|neighbours");
    EXPECT_EQ(settingText(Setting::kConnect), "auto");
  }
  {
    VariableForTest bad("BRAID_KERNEL_ISA", "sse");
    EXPECT_EQ(checkSettings(), "BRAID_KERNEL_ISA=sse: must be one of avx512|avx2|scalar");
  }
  {
    VariableForTest bad("BRAID_RINGS", "1.5");
    EXPECT_NE(checkSettings(), "");
  }
  {
    VariableForTest empty("BRAID_RINGS", "");  // a launcher's NAME=: unset
    EXPECT_EQ(checkSettings(), "");
    EXPECT_EQ(settingInt(Setting::kRings), 2);
  }
}

TEST(Settings, AnotherToolsVariableIsClampedNotRefused) {
  VariableForTest queues("CUDA_DEVICE_MAX_CONNECTIONS", "64");
  EXPECT_EQ(checkSettings(), "");
  EXPECT_EQ(settingInt(Setting::kCudaDeviceMaxConnections), 32);
}

}  // namespace
}  // namespace braid
