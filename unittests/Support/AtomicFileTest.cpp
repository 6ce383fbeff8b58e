//===- AtomicFileTest.cpp - Files replaced whole or not at all ------------===//

#include "heterps/Support/AtomicFile.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <sys/stat.h>

using namespace heterps;
namespace fs = std::filesystem;

namespace {

fs::path freshDirectory(const char *name) {
  fs::path dir = fs::path(::testing::TempDir()) / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::string contents(const fs::path &file) {
  std::ifstream in(file, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

size_t entries(const fs::path &dir) {
  size_t count = 0;
  for (auto it = fs::directory_iterator(dir); it != fs::directory_iterator();
       ++it)
    ++count;
  return count;
}

} // namespace

TEST(AtomicFile, ReplacesTheFileWholeAndLeavesNoTemporary) {
  fs::path dir = freshDirectory("atomic-replace");
  std::string path = (dir / "plan").string();
  EXPECT_EQ(writeFileAtomically(path, std::string(100000, 'a')), "");
  EXPECT_EQ(contents(path), std::string(100000, 'a'));
  EXPECT_EQ(writeFileAtomically(path, "short"), "");
  EXPECT_EQ(contents(path), "short");
  EXPECT_EQ(entries(dir), 1u);
}

TEST(AtomicFile, AFailedWriterLeavesTheOldFileAndNoTemporary) {
  fs::path dir = freshDirectory("atomic-fail");
  std::string path = (dir / "checkpoint").string();
  ASSERT_EQ(writeFileAtomically(path, "old"), "");
  std::string error = writeFileAtomically(path, [](int fd) {
    writeAll(fd, "half", 4);
    errno = ENOSPC;
    return false;
  });
  EXPECT_NE(error.find("cannot write '" + path + ".tmp."), std::string::npos)
      << error;
  EXPECT_NE(error.find(std::strerror(ENOSPC)), std::string::npos) << error;
  EXPECT_EQ(contents(path), "old");
  EXPECT_EQ(entries(dir), 1u);
}

TEST(AtomicFile, NamesWhatFailedWhenTheDirectoryIsMissing) {
  fs::path dir = freshDirectory("atomic-missing");
  std::string path = (dir / "no" / "such" / "file").string();
  std::string error = writeFileAtomically(path, "x");
  EXPECT_NE(error.find("cannot create '" + path + ".tmp."), std::string::npos)
      << error;
  EXPECT_NE(error.find(std::strerror(ENOENT)), std::string::npos) << error;
}

TEST(AtomicFile, KnowsItsTemporaryNames) {
  EXPECT_TRUE(isAtomicFileTemporary("MANIFEST.0-of-2.tmp.4242"));
  EXPECT_FALSE(isAtomicFileTemporary("MANIFEST.0-of-2"));
  EXPECT_FALSE(isAtomicFileTemporary("rows.tmp."));
  EXPECT_FALSE(isAtomicFileTemporary("rows.tmp.x1"));
}

TEST(SmallFile, ReadsARegularFileWithinItsLimit) {
  fs::path dir = freshDirectory("small-file");
  std::string text(5000, 'x');
  ASSERT_EQ(writeFileAtomically((dir / "f").string(), text), "");
  std::string data;
  EXPECT_EQ(readSmallFile((dir / "f").string(), 5000, data), "");
  EXPECT_EQ(data, text);
  std::string error = readSmallFile((dir / "f").string(), 4999, data);
  EXPECT_NE(error.find("is larger than 4999 bytes"), std::string::npos)
      << error;
}

/// A FIFO is refused without waiting for a writer; so are devices,
/// directories and missing files, each named.
TEST(SmallFile, RefusesWhatIsNotARegularFile) {
  fs::path dir = freshDirectory("small-file-kinds");
  std::string fifo = (dir / "fifo").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0) << std::strerror(errno);
  std::string data;
  for (const std::string &path :
       {fifo, std::string("/dev/zero"), dir.string()}) {
    std::string error = readSmallFile(path, 1 << 20, data);
    EXPECT_NE(error.find("'" + path + "' is not a regular file"),
              std::string::npos)
        << error;
  }
  std::string error = readSmallFile((dir / "missing").string(), 10, data);
  EXPECT_NE(error.find("cannot open '" + (dir / "missing").string() +
                       "': No such file or directory"),
            std::string::npos)
      << error;
}
