#include "looptrace/symbols/demangle.h"

#include <cxxabi.h>

#include <cstdlib>
#include <cstring>

namespace looptrace::symbols {
namespace {

bool IsIdentifierChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

constexpr std::string_view kAnonymousNamespace = "(anonymous namespace)";
constexpr std::string_view kOperator = "operator";

}  // namespace

bool IsMangled(std::string_view name) { return name.size() > 2 && name.starts_with("_Z"); }

std::string Demangle(std::string_view mangled) {
  if (!IsMangled(mangled)) return std::string(mangled);
  std::string input(mangled);  // __cxa_demangle needs a terminated string
  int status = 0;
  char* out = abi::__cxa_demangle(input.c_str(), nullptr, nullptr, &status);
  if (status != 0 || out == nullptr) {
    std::free(out);
    return input;
  }
  std::string result(out);
  std::free(out);
  return result;
}

std::string_view StripParameters(std::string_view s) {
  size_t angle = 0;       // depth of <...>
  size_t brace = 0;       // depth of {...} ("{lambda(int)#1}")
  size_t name_start = 0;  // after the last top-level space (skips a return type)
  size_t i = 0;
  const size_t n = s.size();
  while (i < n) {
    if (s.compare(i, kOperator.size(), kOperator) == 0 && (i == 0 || !IsIdentifierChar(s[i - 1])) &&
        (i + kOperator.size() == n || !IsIdentifierChar(s[i + kOperator.size()]))) {
      i += kOperator.size();
      if (i + 1 < n && s[i] == '(' && s[i + 1] == ')') {
        i += 2;  // operator()
      } else if (i < n && s[i] == ' ') {
        ++i;  // operator new, operator delete[], conversion operators
        while (i < n && (IsIdentifierChar(s[i]) || s[i] == '[' || s[i] == ']')) ++i;
      } else {
        while (i < n && std::strchr("<>=!+-*/%^&|~,[]", s[i]) != nullptr) ++i;
      }
      continue;
    }
    const char c = s[i];
    if (c == '{') {
      ++brace;
    } else if (c == '}') {
      if (brace > 0) --brace;
    } else if (brace > 0) {
      // inside a lambda or unnamed-type marker
    } else if (c == '<') {
      ++angle;
    } else if (c == '>') {
      if (angle > 0) --angle;
    } else if (angle == 0 && c == ' ') {
      name_start = i + 1;
    } else if (angle == 0 && c == '(') {
      if (s.substr(i).starts_with(kAnonymousNamespace)) {
        i += kAnonymousNamespace.size();
        continue;
      }
      if (i == name_start) return s;  // nothing before the parenthesis: leave it alone
      return s.substr(name_start, i - name_start);
    }
    ++i;
  }
  return s;
}

}  // namespace looptrace::symbols
