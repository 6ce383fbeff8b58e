//===- AtomicFileTest.cpp - Files replaced whole or not at all ------------===//

#include "heterps/Support/AtomicFile.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

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
