// Helpers shared by the symbols tests: fixture paths, running binutils, opening ELF files.
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "looptrace/symbols/elf_file.h"

namespace looptrace::symbols::test_util {

inline std::string FixturePath(const std::string& name) { return std::string(LOOPTRACE_FIXTURE_DIR) + "/" + name; }

// stdout of a shell command ("" if it cannot run).
inline std::string RunCommand(const std::string& command) {
  std::string output;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return output;
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof(buffer), pipe)) > 0) output.append(buffer, n);
  pclose(pipe);
  return output;
}

inline std::vector<std::string> SplitLines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) lines.push_back(line);
  return lines;
}

inline std::vector<std::string> SplitWords(const std::string& line) {
  std::istringstream in(line);
  return {std::istream_iterator<std::string>(in), std::istream_iterator<std::string>()};
}

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline void WriteFile(const std::string& path, const std::string& data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
}

// A fresh directory under TMPDIR, removed by the destructor.
class TempDir {
 public:
  TempDir() {
    std::string pattern = "/tmp/looptrace_symbols_test.XXXXXX";
    if (mkdtemp(pattern.data()) != nullptr) path_ = pattern;
  }
  ~TempDir() {
    if (!path_.empty()) RunCommand("rm -rf '" + path_ + "'");
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string File(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

inline constexpr char kLibc[] = "/lib/x86_64-linux-gnu/libc.so.6";

inline ElfFile OpenOrDie(const std::string& path) {
  auto file = ElfFile::Open(path);
  if (!file) {
    ADD_FAILURE() << file.error().message;
    std::abort();
  }
  return std::move(*file);
}

}  // namespace looptrace::symbols::test_util
