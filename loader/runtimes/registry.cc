// The runtimes looptrace knows: one line each, in detection order (a java launcher is
// recognised by the libjvm.so it loads, whatever its name, so HotSpot is asked first).
// Adding a runtime: its folder runtimes/NAME/ (a class implementing runtime.h), one line
// here, and its profile file(s) in loader/profiles/ (listed in loader/CMakeLists.txt).
#include "loader/runtimes/jvm/jvm.h"
#include "loader/runtimes/node/node.h"
#include "loader/runtimes/python/python.h"
#include "loader/runtimes/runtimes.h"

namespace looptrace::loader {

const std::vector<const Runtime*>& AllRuntimes() {
  static const std::vector<const Runtime*> runtimes = {
      &jvm::HotSpot(),
      &python::CPython(),
      &node::NodeJs(),
  };
  return runtimes;
}

}  // namespace looptrace::loader
