// The kernel's vDSO image. Every process of a machine usually maps the same one, so
// looptrace's own copy (getauxval(AT_SYSINFO_EHDR)) names a target's [vdso] frames (its
// .symtab / .dynsym) at the target's [vdso] address. The unwind rows come from the target's
// own image (TargetVdsoImagePath), which can differ: a process restored from a checkpoint
// made under another kernel, or one that patched its vDSO.
#pragma once

#include <cstdint>
#include <string>

namespace looptrace::symbols {

// A path to a file holding this process's vDSO image (a memfd, written once), "" when the
// image cannot be found or saved.
const std::string& VdsoImagePath();
// Size of the image (the [vdso] mapping's length), 0 if unknown.
uint64_t VdsoImageSize();

// The largest [vdso] mapping read from a target (a few pages on x86-64 kernels).
inline constexpr uint64_t kMaxVdsoBytes = 1u << 20;

// A path to a file holding the ELF image mapped at [start, end) of `pid`'s [vdso], read from
// /proc/PID/mem: VdsoImagePath() when the bytes are this process's own image, else a memfd
// written once per distinct image (at most a few kept). "" when the mapping is larger than
// kMaxVdsoBytes, cannot be read, or does not start with an ELF header. The bytes are the
// target's (untrusted, like any file it maps): only parsed as ELF, never executed.
std::string TargetVdsoImagePath(int pid, uint64_t start, uint64_t end);

}  // namespace looptrace::symbols
