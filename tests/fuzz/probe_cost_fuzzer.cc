// libFuzzer harness for the x86-64 first-instruction classifier (ClassifyProbeInstruction),
// which reads the bytes of target binaries at probe points.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

#include "looptrace/symbols/probe_cost.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace looptrace::symbols;
  const InstructionInfo info = ClassifyProbeInstruction(std::span<const uint8_t>(data, size));
  if (info.length > size || info.length > 15) std::abort();  // x86 instructions are <= 15 bytes
  // Emulation needs the length; single-stepped "unknown" instructions may have none (0).
  if (info.cost == ProbeCost::kEmulated && info.length == 0) std::abort();
  if (info.mnemonic.empty()) std::abort();
  (void)ProbeCostName(info.cost);
  return 0;
}
