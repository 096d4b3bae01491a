#include "loader/plan/usdt_semaphores.h"

#include <fmt/format.h>
#include <sys/uio.h>

#include <map>
#include <optional>

#include "looptrace/symbols/elf_file.h"
#include "looptrace/symbols/proc_maps.h"
#include "looptrace/symbols/symbolizer.h"

namespace looptrace::loader {

std::vector<std::string> DisabledUsdtProbes(int pid, const AttachPlan& plan) {
  std::vector<std::string> out;
  auto maps = symbols::ReadProcMaps(pid);
  if (!maps) return out;
  std::map<std::string, std::optional<uint64_t>> bias;  // binary -> load bias in the process
  // A binary named by an absolute path need not be the one the process runs.
  std::map<std::string, size_t> unmapped;
  for (const ResolvedProbe& p : plan.probes) {
    bool mapped = p.binary_path.starts_with("/proc/");  // /proc/PID/exe, map_files: the process's own
    for (const auto& m : *maps) mapped |= m.path == p.binary_path;
    if (!mapped) ++unmapped[p.binary_path];
  }
  for (const auto& [binary, n] : unmapped)
    out.push_back(
        fmt::format("pid {} does not map {} (yet): its {} probe point{} fire only once it does (another "
                    "copy of the program?)",
                    pid, binary, n, n == 1 ? "" : "s"));
  for (const ResolvedProbe& p : plan.probes) {
    if (p.spec.kind != ProbeKind::kUsdt || !p.semaphore_address) continue;
    auto [it, fresh] = bias.try_emplace(p.binary_path);
    if (fresh) {
      auto elf = symbols::ModuleCache::Default()->Elf(p.binary_path);
      for (const auto& m : *maps) {
        if (!elf || m.path != p.binary_path) continue;
        if (auto vaddr = (*elf)->FileOffsetToAddress(m.offset)) {
          it->second = m.start - *vaddr;
          break;
        }
      }
    }
    if (!it->second) continue;  // not mapped (yet): nothing to say
    uint16_t counter = 0;
    iovec local{&counter, sizeof(counter)};
    iovec remote{reinterpret_cast<void*>(*it->second + p.semaphore_address), sizeof(counter)};
    if (process_vm_readv(pid, &local, 1, &remote, 1, 0) != sizeof(counter) || counter != 0) continue;
    out.push_back(
        fmt::format("usdt {} in {}: its semaphore is still 0 after attaching, so the probe is disabled "
                    "and will not fire (does pid {} run another copy of that file?)",
                    p.symbol, p.binary_path, pid));
  }
  return out;
}

}  // namespace looptrace::loader
