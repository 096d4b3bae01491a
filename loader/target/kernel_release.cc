#include "loader/target/kernel_release.h"

#include <sys/utsname.h>

#include <cstdio>

namespace looptrace::loader {

bool KernelAtLeast(int major, int minor) {
  utsname u{};
  if (uname(&u) != 0) return false;
  int have_major = 0, have_minor = 0;
  if (std::sscanf(u.release, "%d.%d", &have_major, &have_minor) != 2) return false;
  return have_major > major || (have_major == major && have_minor >= minor);
}

}  // namespace looptrace::loader
