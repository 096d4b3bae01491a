#include "scenario.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace looptrace::sample {

ScenarioRegistry& ScenarioRegistry::Get() {
  static ScenarioRegistry* registry = new ScenarioRegistry();  // never destroyed
  return *registry;
}

void ScenarioRegistry::Register(const ScenarioInfo& info) {
  if (Find(info.name) != nullptr) {
    std::fprintf(stderr, "looptrace-sample-app: duplicate scenario %.*s\n", static_cast<int>(info.name.size()),
                 info.name.data());
    std::abort();
  }
  scenarios_.push_back(info);
}

const ScenarioInfo* ScenarioRegistry::Find(std::string_view name) const {
  for (const ScenarioInfo& info : scenarios_) {
    if (info.name == name) return &info;
  }
  return nullptr;
}

std::vector<const ScenarioInfo*> ScenarioRegistry::All() const {
  std::vector<const ScenarioInfo*> all;
  for (const ScenarioInfo& info : scenarios_) all.push_back(&info);
  std::sort(all.begin(), all.end(), [](const ScenarioInfo* a, const ScenarioInfo* b) { return a->name < b->name; });
  return all;
}

}  // namespace looptrace::sample
