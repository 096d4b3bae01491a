// JSON shapes shared by the recording format (event_json.cc) and the JSON report
// (json_renderer.cc), so a thread looks the same in both.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "looptrace/tracers/event.h"

namespace looptrace {

inline nlohmann::json ThreadSnapshotToJson(const ThreadSnapshot& t) {
  return nlohmann::json{{"tid", t.tid},
                        {"name", t.name},
                        {"state", std::string(1, t.state)},
                        {"state_since_ns", t.state_since_ns},
                        {"wchan", t.wchan},
                        {"futex_address", t.futex_address},
                        {"futex_owner_tid", t.futex_owner_tid},
                        {"kernel_stack", t.kernel_stack},
                        {"user_stack", t.user_stack},
                        {"user_stack_stop", t.user_stack_stop}};
}

}  // namespace looptrace
