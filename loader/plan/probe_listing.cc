#include "loader/plan/probe_listing.h"

#include <fmt/format.h>

#include <set>
#include <sstream>

#include "looptrace/util/text_safety.h"

namespace looptrace::loader {
namespace {

std::string CostText(const symbols::InstructionInfo& info) {
  std::string cost(symbols::ProbeCostName(info.cost));
  if (!info.mnemonic.empty()) cost += " (" + info.mnemonic + ")";
  return cost;
}

}  // namespace

// Symbols, paths and notes come from the target's files: every one is escaped for the
// terminal (one line each), and the whole table once more before it is written.
size_t PrintProbeList(const Profile& profile, const AttachPlan& plan, std::ostream& final_out) {
  const auto Esc = [](std::string_view text) { return EscapeForTerminal(text); };
  std::ostringstream out;
  out << fmt::format("profile {} ({}), messages {}\n", Esc(profile.name), Esc(profile.source),
                     profile.message_definition.empty() ? "from the roles" : Esc(profile.message_definition));
  out << fmt::format("{:>3}  {:<15} {:<9} {:<40} {:>10}  {:<12} {}\n", "id", "role", "kind", "point", "offset", "cost",
                     "binary");
  size_t slow = 0;  // distinct points: a uprobe and a uretprobe on one function trap once
  std::set<std::pair<std::string, uint64_t>> slow_points;
  for (const auto& p : plan.probes) {
    if (p.instruction.cost == symbols::ProbeCost::kSingleStep && slow_points.insert({p.binary_path, p.address}).second)
      ++slow;
    std::string point = p.symbol;
    if (p.usdt_sites > 1) point += fmt::format(" [{} sites]", p.usdt_sites);
    out << fmt::format("{:>3}  {:<15} {:<9} {:<40} {:>#10x}  {:<12} {}\n", p.probe_id, RoleName(p.spec.role),
                       ProbeKindName(p.spec.kind), Esc(point), p.file_offset, Esc(CostText(p.instruction)),
                       Esc(p.binary_path));
    if (p.placement_note.empty()) continue;
    if (p.placement == Placement::kEntry) {
      out << fmt::format("       {}\n", Esc(p.placement_note));
      continue;
    }
    out << fmt::format("       moved off the entry ({}): {}\n", Esc(p.entry_instruction.mnemonic),
                       Esc(p.placement_note));
    for (const ProbeLocation& l : p.locations)
      out << fmt::format("       -> {:<11} {:>#10x}  {:<28} {}\n", PlacementName(p.placement), l.file_offset,
                         Esc(l.where), Esc(CostText(l.instruction)));
  }
  for (const auto& note : plan.left_out) out << "  " << Esc(note) << "\n";
  final_out << EscapeForTerminalKeepLayout(std::move(out).str());
  return slow;
}

}  // namespace looptrace::loader
