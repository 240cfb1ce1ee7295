// The digits reader of the training example (examples/mlp/dataset.h): values, scaling, the
// held-out split, and errors that name the file, line and column.
#include "dataset.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <set>
#include <string>

namespace {

using braid::examples::Dataset;

std::string digitsLine(int base, int label) {
  std::string line;
  for (int p = 0; p < 64; ++p) line += std::to_string((base + p) % 17) + ",";
  return line + std::to_string(label);
}

class TempFile {
 public:
  explicit TempFile(const std::string& text) {
    char name[] = "/tmp/braid_digits_XXXXXX";
    const int fd = mkstemp(name);
    path_ = name;
    ::close(fd);
    std::ofstream(path_) << text;
  }
  ~TempFile() { std::remove(path_.c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

TEST(Digits, ReadsScalesAndLabels) {
  TempFile file(digitsLine(0, 3) + "\n" + digitsLine(5, 9) + "\r\n\n" + digitsLine(16, 0));
  Dataset d;
  std::string error;
  ASSERT_TRUE(braid::examples::loadDigitsCsv(file.path(), &d, &error)) << error;
  ASSERT_EQ(d.size(), 3u);
  EXPECT_EQ(d.features, 64);
  EXPECT_EQ(d.labels, (std::vector<int>{3, 9, 0}));
  for (size_t s = 0; s < 3; ++s) {
    const int base = s == 0 ? 0 : s == 1 ? 5 : 16;
    for (int p = 0; p < 64; ++p) {
      EXPECT_EQ(d.sample(s)[p], static_cast<float>((base + p) % 17) / 16.0f) << s << " " << p;
    }
  }
}

TEST(Digits, BadInputNamesTheLineAndColumn) {
  struct Case {
    std::string text, expected;
  };
  std::string shortLine = digitsLine(0, 1);
  shortLine = shortLine.substr(0, shortLine.rfind(','));  // 64 values: the label is missing
  const Case cases[] = {
      {digitsLine(0, 1) + "\n" + digitsLine(0, 10), ":2: column 65 is not a digit 0-9"},
      {"17," + digitsLine(0, 1).substr(2), ":1: column 1 is not a pixel value 0-16"},
      {"x" + digitsLine(0, 1), ":1: column 1"},
      {shortLine, ":1: column 64"},
      {digitsLine(0, 1) + ",5", ":1: column 65"},
      {"", "no samples"},
  };
  for (const Case& c : cases) {
    TempFile file(c.text);
    Dataset d;
    std::string error;
    EXPECT_FALSE(braid::examples::loadDigitsCsv(file.path(), &d, &error)) << c.expected;
    EXPECT_NE(error.find(c.expected), std::string::npos) << error;
    EXPECT_NE(error.find(file.path()), std::string::npos) << error;
  }
  Dataset d;
  std::string error;
  EXPECT_FALSE(braid::examples::loadDigitsCsv("/nonexistent/digits.csv", &d, &error));
  EXPECT_NE(error.find("cannot open /nonexistent/digits.csv"), std::string::npos) << error;
}

TEST(Digits, SplitIsADeterministicPartition) {
  Dataset all;
  all.features = 1;
  for (int i = 0; i < 101; ++i) {
    all.samples.push_back(static_cast<float>(i));
    all.labels.push_back(i % 10);
  }
  Dataset train, heldOut, train2, heldOut2;
  braid::examples::splitDataset(all, 0.2, 5, &train, &heldOut);
  braid::examples::splitDataset(all, 0.2, 5, &train2, &heldOut2);
  EXPECT_EQ(heldOut.size(), 20u);
  EXPECT_EQ(train.size(), 81u);
  EXPECT_EQ(train.samples, train2.samples);
  EXPECT_EQ(heldOut.samples, heldOut2.samples);
  std::set<float> seen(train.samples.begin(), train.samples.end());
  seen.insert(heldOut.samples.begin(), heldOut.samples.end());
  EXPECT_EQ(seen.size(), 101u);
  for (size_t i = 0; i < train.size(); ++i) {
    EXPECT_EQ(train.labels[i], static_cast<int>(train.samples[i]) % 10) << "labels follow rows";
  }
}

}  // namespace
