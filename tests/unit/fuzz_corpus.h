// Inputs of the fuzz corpora (tests/fuzz/corpus/TARGET/NAME), for the unit tests that
// replay inputs which once crashed or misled a parser.
#pragma once

#include <fstream>
#include <iterator>
#include <string>

namespace looptrace::test_util {

inline std::string FuzzCorpusPath(const std::string& target, const std::string& name) {
  return std::string(LOOPTRACE_SOURCE_DIR) + "/tests/fuzz/corpus/" + target + "/" + name;
}

// The bytes of the input ("" if missing: tests check the size they expect).
inline std::string FuzzInput(const std::string& target, const std::string& name) {
  std::ifstream in(FuzzCorpusPath(target, name), std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace looptrace::test_util
