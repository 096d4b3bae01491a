#include "looptrace/tracers/startup.h"

#include <algorithm>

#include "looptrace/tracers/sample_store.h"

namespace looptrace {

void StartupOptions::Declare(OptionSet& options) {
  options.Milliseconds("startup-threshold", &cold_threshold_ns,
                       "cold startups this long get a call tree (Matrix: 10000)");
  options.Milliseconds("warm-startup-threshold", &warm_threshold_ns,
                       "warm startups this long get a call tree (Matrix: 4000)");
  options.List("splash", &splash, "A,B", "splash activities: the cold start ends at the next one");
}

StartupTracer::StartupTracer(const StartupOptions& options, const TracerContext& context)
    : CopyableTracer(context), options_(options) {}

void StartupTracer::OnEvent(const Event& event) {
  if (const auto* probe = std::get_if<ProbeEvent>(&event))
    OnProbe(*probe);
  else if (const auto* exec = std::get_if<ProcessExec>(&event)) {
    r_.exec_ns = exec->ts_ns;
    Add("exec", exec->ts_ns, "", false);
  }
}

void StartupTracer::OnSpanBegin(const Span& span) {
  if (span.kind == SpanKind::kAppCreate && !app_create_) app_create_ = span;
}

// The focus that ends a launch decides which startup slice is wanted: a warm start's (the
// launch itself) or the cold start's (from application create to the care scene's focus).
std::optional<SliceRequest> StartupTracer::WantSlice(const Span& span) {
  if (span.kind != SpanKind::kLaunch || !span.end_event) return std::nullopt;
  if (warm_) {
    if (span.cost_ns() >= options_.warm_threshold_ns) return SliceRequest::Of(span, "warm_startup");
    return std::nullopt;
  }
  const EventArg* name = span.end_event->Arg("name");
  const std::string activity = name && name->text ? *name->text : "";
  if (r_.cold_complete || IsSplash(activity) || !app_create_) return std::nullopt;
  if (span.end_ns - app_create_->begin_ns < options_.cold_threshold_ns) return std::nullopt;
  SliceRequest r = SliceRequest::Of(span, "startup");
  r.begin_ns = app_create_->begin_ns;
  r.begin_beat_index = app_create_->begin_beat_index;
  return r;
}

void StartupTracer::OnSpanEnd(const Span& span) {
  if (span.kind != SpanKind::kLaunch) return;
  if (warm_ && span.close == SpanClose::kEnded && span.cost_ns() >= options_.warm_threshold_ns && context_.samples)
    warm_sampled_[span.begin_ns] = context_.samples->TreeOf(span);
  if (!span.beats) return;
  if (span.beats->span == "warm_startup") warm_beats_ = *span.beats;
  if (span.beats->span == "startup") cold_beats_ = *span.beats;
}

bool StartupTracer::IsSplash(const std::string& activity) const {
  return std::find(options_.splash.begin(), options_.splash.end(), activity) != options_.splash.end();
}

std::vector<NamedCallNode> StartupTracer::Tree(const MethodBeats& beats) {
  return BuildNamedCallTree(beats, context_.common->max_nodes, 0, context_.namer, context_.stats, options_.tree).nodes;
}

void StartupTracer::Add(std::string name, uint64_t ts, std::string activity, bool warm) {
  r_.milestones.push_back({std::move(name), ts, std::move(activity), warm});
}

void StartupTracer::OnProbe(const ProbeEvent& e) {
  auto text = [&](std::string_view name) -> std::string {
    const EventArg* a = e.Arg(name);
    return a && a->text ? *a->text : "";
  };
  switch (e.role) {
    case Role::kAppCreateBegin:
      r_.seen = true;
      if (!r_.app_create_begin_ns) r_.app_create_begin_ns = e.ts_ns;
      if (!cold_held_ && !r_.cold_complete && context_.samples) {
        cold_held_ = {e.tid, e.ts_ns};
        context_.samples->Hold(e.tid, e.ts_ns);
      }
      Add("app.create.begin", e.ts_ns, "", false);
      break;
    case Role::kAppCreateEnd:
      r_.seen = true;
      if (!r_.app_create_end_ns) r_.app_create_end_ns = e.ts_ns;
      Add("app.create.end", e.ts_ns, "", false);
      break;
    case Role::kActivityLaunch: {
      r_.seen = true;
      std::string activity = text("name");
      bool warm = r_.cold_complete;
      if (r_.app_create_scene.empty() && !warm) r_.app_create_scene = activity;
      if (warm) {
        warm_phase_ = true;
        // An activity launched again in a living process after the cold start: a warm start.
        WarmStart w;
        w.activity = activity;
        w.launch_ns = e.ts_ns;
        warm_ = w;
      }
      last_launched_ = activity;
      frame_wanted_ = true;
      Add("activity.launch", e.ts_ns, activity, warm);
      break;
    }
    case Role::kFrameEnd:
      if (frame_wanted_) {
        frame_wanted_ = false;
        if (warm_) {
          warm_->first_frame_ns = e.ts_ns;
        } else if (!r_.first_frame_ns) {
          r_.first_frame_ns = e.ts_ns;
        }
        Add("first.frame", e.ts_ns, last_launched_, warm_phase_);
      }
      if (fully_drawn_frame_wanted_) {
        fully_drawn_frame_wanted_ = false;
        r_.fully_drawn_frame_ns = e.ts_ns;
        Add("fully.drawn.frame", e.ts_ns, last_launched_, warm_phase_);
      }
      break;
    case Role::kActivityFocus: {
      std::string activity = text("name");
      Add("activity.focus", e.ts_ns, activity, warm_phase_);
      if (warm_) {
        warm_->focus_ns = e.ts_ns;
        warm_->over_threshold = warm_->cost_ns() >= options_.warm_threshold_ns;
        warm_->excessive = warm_->cost_ns() >= options_.vitals_warm_ns;
        if (warm_beats_ && warm_beats_->begin_ns == warm_->launch_ns && warm_->over_threshold)
          warm_->tree = Tree(*warm_beats_);
        warm_beats_.reset();
        r_.warm_starts.push_back(*warm_);
        warm_.reset();
        break;
      }
      if (r_.cold_complete) break;
      if (!r_.first_focus_ns) r_.first_focus_ns = e.ts_ns;
      if (IsSplash(activity)) break;  // the care scene comes after the splash screens
      r_.care_focus_ns = e.ts_ns;
      r_.care_scene = activity;
      r_.cold_complete = true;
      if (cold_beats_ && r_.app_create_begin_ns && cold_beats_->begin_ns == *r_.app_create_begin_ns &&
          cold_beats_->end_ns == e.ts_ns)
        r_.tree = Tree(*cold_beats_);
      if (cold_held_) {
        const auto [tid, begin] = *cold_held_;
        cold_sampled_ = {{begin, e.ts_ns, context_.samples->Tree(tid, begin, e.ts_ns)}};
        context_.samples->Release();
        cold_held_.reset();
      }
      break;
    }
    case Role::kFullyDrawn:
      if (!r_.fully_drawn_ns) {
        r_.fully_drawn_ns = e.ts_ns;
        fully_drawn_frame_wanted_ = true;
      }
      Add("fully.drawn", e.ts_ns, last_launched_, warm_phase_);
      break;
    default:
      break;
  }
}

void StartupTracer::Contribute(Report& report) {
  if (warm_) r_.warm_starts.push_back(*warm_);  // launched, never focused
  warm_.reset();
  // Only application create or an activity launch make a startup; a focus or an exec
  // alone (a frames session, a plain program) do not.
  auto since = [](std::optional<uint64_t> from, std::optional<uint64_t> to) -> uint64_t {
    return from && to && *to >= *from ? *to - *from : 0;
  };
  const auto origin = r_.exec_ns ? r_.exec_ns : r_.app_create_begin_ns;
  r_.exec_to_app_create_ns = since(r_.exec_ns, r_.app_create_begin_ns);
  r_.application_create_ns = since(r_.app_create_begin_ns, r_.app_create_end_ns);
  r_.first_screen_ns = since(r_.app_create_begin_ns, r_.first_focus_ns);
  r_.cold_ns = since(r_.app_create_begin_ns, r_.care_focus_ns);
  r_.cold_from_exec_ns = since(r_.exec_ns, r_.care_focus_ns);
  r_.ttid_ns = since(origin, r_.first_frame_ns);
  r_.ttfd_ns = since(origin, r_.fully_drawn_frame_ns);
  r_.over_threshold = r_.cold_ns >= options_.cold_threshold_ns;
  if (cold_sampled_ && r_.over_threshold && r_.app_create_begin_ns == std::get<0>(*cold_sampled_) &&
      r_.care_focus_ns == std::get<1>(*cold_sampled_))
    r_.sampled = std::move(std::get<2>(*cold_sampled_));
  for (WarmStart& w : r_.warm_starts)
    if (auto it = warm_sampled_.find(w.launch_ns); it != warm_sampled_.end() && w.over_threshold)
      w.sampled = std::move(it->second);
  r_.excessive = std::max(r_.cold_ns, r_.cold_from_exec_ns) >= options_.vitals_cold_ns;
  std::stable_sort(r_.milestones.begin(), r_.milestones.end(),
                   [](const Milestone& a, const Milestone& b) { return a.ts_ns < b.ts_ns; });
  if (r_.seen) {
    auto need = [&](bool reached, const char* name) {
      if (!reached) r_.missing.push_back(name);
    };
    need(r_.app_create_begin_ns.has_value(), "app.create.begin");
    need(r_.app_create_end_ns.has_value(), "app.create.end");
    need(!r_.app_create_scene.empty(), "activity.launch");
    need(r_.first_frame_ns.has_value(), "first.frame");
    need(r_.first_focus_ns.has_value(), "activity.focus");
    need(r_.cold_complete, "care scene focus");
  }
  report.startup = std::move(r_);
}

}  // namespace looptrace
