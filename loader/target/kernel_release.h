// The running kernel's release, for choices that depend on what it can do (uprobe_multi
// links, uretprobe return addresses put back in frame-pointer stacks).
#pragma once

namespace looptrace::loader {

// Whether the running kernel's release is at least major.minor (false if unreadable).
bool KernelAtLeast(int major, int minor);

}  // namespace looptrace::loader
