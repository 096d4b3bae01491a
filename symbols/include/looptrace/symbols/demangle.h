// C++ symbol demangling.
#pragma once

#include <string>
#include <string_view>

namespace looptrace::symbols {

// Demangles an Itanium C++ ABI name ("_ZN2ns3fooEi" -> "ns::foo(int)") with
// abi::__cxa_demangle. Returns the input unchanged when it is not a mangled name
// or cannot be demangled.
std::string Demangle(std::string_view mangled);

// True if `name` looks like an Itanium-mangled name ("_Z...").
bool IsMangled(std::string_view name);

// The qualified function name of a demangled name, without its parameter list,
// qualifiers and return type: "int ns::Foo<int>::bar(int) const" -> "ns::Foo<int>::bar".
// Returns a prefix/substring view of `demangled`; names without a parameter list are
// returned unchanged.
std::string_view StripParameters(std::string_view demangled);

}  // namespace looptrace::symbols
