#include "sim/input_files.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <yaml-cpp/yaml.h>

#include "sim/errors.h"
#include "sim/params.h"
#include "sim/scratch_dir_test_util.h"

namespace fleetsim {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Optional;
using ::testing::ThrowsMessage;
using std::string_literals::operator""s;

class InputFilesTest : public testing::ScratchDirTest {
 protected:
  std::string write(const std::string& name, const std::string& bytes) {
    const fs::path p = dir_ / name;
    std::ofstream(p, std::ios::binary) << bytes;
    return p.string();
  }
};

TEST_F(InputFilesTest, AFifoIsRefusedWithoutOpeningIt) {
  const std::string fifo = (dir_ / "f.yaml").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_THAT(input_file_problem(fifo, 1024), Optional(HasSubstr("is not a regular file")));
}

TEST_F(InputFilesTest, DevicesAndFoldersAreRefused) {
  EXPECT_THAT(input_file_problem("/dev/zero", 1024), Optional(HasSubstr("not a regular file")));
  EXPECT_THAT(input_file_problem(dir_.string(), 1024), Optional(HasSubstr("is a directory")));
}

TEST_F(InputFilesTest, AFileOverTheLimitIsRefusedBeforeItIsRead) {
  const std::string big = write("big.yaml", std::string(3u << 20, 'x'));
  EXPECT_THAT(input_file_problem(big, 1u << 20),
              Optional(HasSubstr("is 3 MiB, over the limit of 1 MiB")));
  EXPECT_EQ(input_file_problem(big, 4u << 20), std::nullopt);
}

TEST_F(InputFilesTest, AGzipFileIsToldToBeDecompressed) {
  const std::string gz = write("t.jsonl", std::string("\x1f\x8b\x08\x00", 4));
  EXPECT_THAT(input_file_problem(gz, 1024), Optional(HasSubstr("gzip-compressed")));
}

TEST_F(InputFilesTest, AMissingFileIsLeftToTheCallersOpen) {
  EXPECT_EQ(input_file_problem((dir_ / "none").string(), 1024), std::nullopt);
  EXPECT_THAT([&] { read_input_file<ScenarioError>((dir_ / "none").string(), "cannot open"); },
              ThrowsMessage<ScenarioError>(HasSubstr("none: cannot open")));
}

TEST_F(InputFilesTest, ControlBytesAreRefusedWithTheirLine) {
  EXPECT_THAT(control_byte_problem("a: 1\nb: 2\n,\0"s),
              Optional(HasSubstr("3: a control byte (0x0)")));
  EXPECT_THAT(control_byte_problem("x\x7f"), Optional(HasSubstr("0x7f")));
  EXPECT_EQ(control_byte_problem("tab\tand crlf\r\n"), std::nullopt);
  const std::string nul = write("nul.yaml", ",\0"s);
  EXPECT_THAT([&] { read_input_file<ScenarioError>(nul, "cannot open"); },
              ThrowsMessage<ScenarioError>(HasSubstr("nul.yaml:1: a control byte")));
}

TEST_F(InputFilesTest, GetlineBoundedStopsALongLine) {
  std::istringstream in("short\n" + std::string(100, 'x') + "\nlast");
  std::string line;
  bool too_long = false;
  ASSERT_TRUE(getline_bounded(in, line, 10, too_long));
  EXPECT_EQ(line, "short");
  EXPECT_FALSE(too_long);
  ASSERT_TRUE(getline_bounded(in, line, 10, too_long));
  EXPECT_TRUE(too_long);
  std::istringstream tail("a\nlast");
  ASSERT_TRUE(getline_bounded(tail, line, 10, too_long));
  ASSERT_TRUE(getline_bounded(tail, line, 10, too_long));
  EXPECT_EQ(line, "last");
  EXPECT_TRUE(tail.eof());  // an unterminated last line
  EXPECT_FALSE(getline_bounded(tail, line, 10, too_long));
}

// Paths inside a file: beside it, then the data folder; a --set value from the current directory.
class InputPathTest : public InputFilesTest {
 protected:
  void SetUp() override {
    InputFilesTest::SetUp();
    fs::create_directories(dir_ / "scenarios" / "data");
    fs::create_directories(dir_ / "shared");
    write("scenarios/data/t.jsonl", "{}\n");
    write("shared/lengths.csv", "a\n1\n");
    ::setenv("FLEETSIM_DATA_DIR", (dir_ / "shared").c_str(), 1);
  }
  void TearDown() override {
    ::unsetenv("FLEETSIM_DATA_DIR");
    InputFilesTest::TearDown();
  }
  // The path `value`, written at line 1 of scenarios/s.yaml (or given with --set), resolves to.
  std::string resolved(const std::string& value, bool with_set = false) const {
    const YAML::Node node = with_set ? YAML::Node(value) : YAML::Load("'" + value + "'");
    auto sets = std::make_shared<std::vector<std::string>>();
    if (with_set) sets->push_back("workload.file");
    const YamlWhere where{(dir_ / "scenarios" / "s.yaml").string(), "workload.file", "", sets};
    return input_file_path(value, where, node, "trace file", "see docs/traces.md");
  }
};

TEST_F(InputPathTest, ARelativePathResolvesBesideTheFileThatNamesIt) {
  EXPECT_EQ(resolved("data/t.jsonl"), (dir_ / "scenarios/data/t.jsonl").string());
}

TEST_F(InputPathTest, ThenInTheDataFolder) {
  EXPECT_EQ(resolved("lengths.csv"), (dir_ / "shared/lengths.csv").string());
}

TEST_F(InputPathTest, AnAbsolutePathIsTakenAsItIs) {
  const std::string abs = (dir_ / "shared/lengths.csv").string();
  EXPECT_EQ(resolved(abs), abs);
}

TEST_F(InputPathTest, APathGivenWithSetResolvesFromTheCurrentDirectory) {
  const fs::path before = fs::current_path();
  fs::current_path(dir_ / "scenarios");
  const std::string got = resolved("data/t.jsonl", true);
  fs::current_path(before);
  EXPECT_EQ(got, "data/t.jsonl");
  EXPECT_THAT([&] { resolved("lengths.csv", true); },
              ThrowsMessage<ScenarioError>(HasSubstr("(looked in the current directory); ")));
}

TEST_F(InputPathTest, AMissingFileNamesTheFieldAndEveryPlaceLooked) {
  EXPECT_THAT([&] { resolved("none.jsonl"); },
              ThrowsMessage<ScenarioError>(HasSubstr(
                  "s.yaml:1: workload.file: cannot open the trace file 'none.jsonl' (looked in " +
                  (dir_ / "scenarios").string() + "/, then the data folder " +
                  (dir_ / "shared").string() + "/); see docs/traces.md")));
}

TEST_F(InputPathTest, APathFromTheCurrentDirectoryIsToldHowToBeWritten) {
  const fs::path before = fs::current_path();
  fs::current_path(dir_);
  std::string message;
  try {
    resolved("shared/lengths.csv");
  } catch (const ScenarioError& e) {
    message = e.what();
  }
  fs::current_path(before);
  EXPECT_THAT(message, HasSubstr("it exists from the current directory, but a path inside a file "
                                 "resolves against that file's folder: write "
                                 "'../shared/lengths.csv'"));
}

}  // namespace
}  // namespace fleetsim
