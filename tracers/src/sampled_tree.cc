#include "looptrace/tracers/sampled_tree.h"

#include "looptrace/tracers/sample_store.h"

namespace looptrace {

void SampledTreeTracer::Contribute(Report& report) {
  if (context_.samples) report.session_stacks = context_.samples->SessionStacks(report.session.end_ns);
}

}  // namespace looptrace
