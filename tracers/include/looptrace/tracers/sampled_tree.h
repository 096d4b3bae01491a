// The session's stack samples as folded stacks (report.session_stacks, for -f folded
// --folded-scope session) and, in a session without messages, each thread's profile
// (report.session_profile). The samples themselves are kept by the pipeline's SampleStore
// (sample_store.h), which the tracers reporting slow spans ask for their sampled trees; this
// tracer only contributes what is its own.
#pragma once

#include "looptrace/report/report.h"
#include "looptrace/tracers/tracer.h"

namespace looptrace {

struct SampledTreeOptions : TracerOptions {
  void Declare(OptionSet&) override {}
};

class SampledTreeTracer : public CopyableTracer<SampledTreeTracer> {
 public:
  SampledTreeTracer(const SampledTreeOptions&, const TracerContext& context) : CopyableTracer(context) {}

  // Nothing per event or span: the sample store is fed by the pipeline.
  uint32_t span_kinds() const override { return 0; }
  uint32_t event_types() const override { return 0; }
  uint64_t probe_roles() const override { return 0; }
  void Contribute(Report& report) override;
};

}  // namespace looptrace
