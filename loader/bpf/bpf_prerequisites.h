// Privileges and kernel features, checked before anything is loaded so the user gets one
// clear error instead of a libbpf trace.
#pragma once

#include <string>

#include "looptrace/util/result.h"

namespace looptrace::loader {

// Routes libbpf's messages to our log (-v, -vv), then checks CAP_BPF + CAP_PERFMON (or
// CAP_SYS_ADMIN), kernel BTF (or `btf_path`) and uprobe perf events.
Result<void> CheckBpfPrerequisites(const std::string& btf_path);

}  // namespace looptrace::loader
