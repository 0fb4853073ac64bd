#include "sim/output_files.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "sim/scratch_dir_test_util.h"

namespace fleetsim {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

class OutputFilesTest : public testing::ScratchDirTest {
 protected:
  static std::string read(const fs::path& p) {
    std::ifstream f(p);
    std::ostringstream text;
    text << f.rdbuf();
    return text.str();
  }
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(dir_)) out.push_back(e.path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
  }
};

TEST_F(OutputFilesTest, WritesAFileAndReplacesAnOldOneWhole) {
  write_output_file(dir_ / "a.json", "old\n");
  write_output_file(dir_ / "a.json", "new\n");
  EXPECT_EQ(read(dir_ / "a.json"), "new\n");
  EXPECT_THAT(names(), ElementsAre("a.json"));  // no temporary left beside it
}

TEST_F(OutputFilesTest, CreatesTheFolder) {
  write_output_file(dir_ / "x" / "y" / "a.csv", "1\n");
  EXPECT_EQ(read(dir_ / "x" / "y" / "a.csv"), "1\n");
}

TEST_F(OutputFilesTest, AFolderThatIsAFileIsAnErrorNamingThePath) {
  write_output_file(dir_ / "file", "x");
  EXPECT_THAT([&] { write_output_file(dir_ / "file" / "a.csv", "1"); },
              ThrowsMessage<fs::filesystem_error>(HasSubstr("file/a.csv")));
}

TEST_F(OutputFilesTest, ASetReplacesNothingUnlessEveryFileIsWritten) {
  write_output_file(dir_ / "result.json", "old result");
  fs::create_directories(dir_ / "blocked");
  write_output_file(dir_ / "blocked" / "keep", "k");
  {
    OutputFiles files;
    files.stage(dir_ / "result.json", "new result");
    EXPECT_THROW(files.stage(dir_ / "blocked" / "keep" / "requests.csv", "rows"),
                 fs::filesystem_error);
  }  // never committed
  EXPECT_EQ(read(dir_ / "result.json"), "old result");
  EXPECT_THAT(names(), ElementsAre("blocked", "result.json"));
}

TEST_F(OutputFilesTest, ACommitOverAFolderReplacesNoFileOfTheSet) {
  write_output_file(dir_ / "result.json", "old result");
  fs::create_directories(dir_ / "requests.csv");
  OutputFiles files;
  files.stage(dir_ / "result.json", "new result");
  files.stage(dir_ / "requests.csv", "rows");
  EXPECT_THAT([&] { files.commit(); },
              ThrowsMessage<fs::filesystem_error>(HasSubstr("requests.csv")));
  EXPECT_EQ(read(dir_ / "result.json"), "old result");
}

}  // namespace
}  // namespace fleetsim
