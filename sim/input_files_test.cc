#include "sim/input_files.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "sim/errors.h"
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

}  // namespace
}  // namespace fleetsim
