// The kernel's vDSO image: every process of a machine maps the same one, so looptrace's own
// copy (getauxval(AT_SYSINFO_EHDR)) names and unwinds a target's [vdso] frames (its
// .symtab / .dynsym and .eh_frame), at the target's [vdso] address.
#pragma once

#include <cstdint>
#include <string>

namespace looptrace::symbols {

// A path to a file holding this process's vDSO image (a memfd, written once), "" when the
// image cannot be found or saved.
const std::string& VdsoImagePath();
// Size of the image (the [vdso] mapping's length), 0 if unknown.
uint64_t VdsoImageSize();

}  // namespace looptrace::symbols
