// The functions an ELF file imports from other objects (undefined .dynsym entries): what a
// program calls through the dynamic linker, e.g. whether anything in it waits in epoll_wait.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "looptrace/util/result.h"

namespace looptrace::symbols {

// The first of `names` that `path` imports (an undefined dynamic symbol, version suffix
// ignored), or "" if it imports none of them.
Result<std::string> FirstImported(const std::string& path, const std::vector<std::string>& names);

}  // namespace looptrace::symbols
