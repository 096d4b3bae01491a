#include "looptrace/loader/probe_listing.h"

#include <fmt/format.h>

namespace looptrace::loader {
namespace {

std::string CostText(const symbols::InstructionInfo& info) {
  std::string cost(symbols::ProbeCostName(info.cost));
  if (!info.mnemonic.empty()) cost += " (" + info.mnemonic + ")";
  return cost;
}

}  // namespace

size_t PrintProbeList(const Profile& profile, const AttachPlan& plan, std::ostream& out) {
  out << fmt::format("profile {} ({})\n", profile.name, profile.source);
  out << fmt::format("{:>3}  {:<15} {:<9} {:<40} {:>10}  {:<12} {}\n", "id", "role", "kind", "point",
                     "offset", "cost", "binary");
  size_t slow = 0;
  for (const auto& p : plan.probes) {
    if (p.instruction.cost == symbols::ProbeCost::kSingleStep) ++slow;
    std::string point = p.symbol;
    if (p.usdt_sites > 1) point += fmt::format(" [{} sites]", p.usdt_sites);
    out << fmt::format("{:>3}  {:<15} {:<9} {:<40} {:>#10x}  {:<12} {}\n", p.probe_id, RoleName(p.spec.role),
                       ProbeKindName(p.spec.kind), point, p.file_offset, CostText(p.instruction),
                       p.binary_path);
    if (p.placement_note.empty()) continue;
    if (p.placement == Placement::kEntry) {
      out << fmt::format("       {}\n", p.placement_note);
      continue;
    }
    out << fmt::format("       moved off the entry ({}): {}\n", p.entry_instruction.mnemonic, p.placement_note);
    for (const ProbeLocation& l : p.locations)
      out << fmt::format("       -> {:<11} {:>#10x}  {:<28} {}\n", PlacementName(p.placement), l.file_offset,
                         l.where, CostText(l.instruction));
  }
  return slow;
}

}  // namespace looptrace::loader
