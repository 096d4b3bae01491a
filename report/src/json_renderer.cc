// -f json: the report's records (json_records.h), one JSON object a line.
#include "looptrace/report/json_records.h"
#include "looptrace/report/render.h"

namespace looptrace {
namespace {

class JsonRenderer : public Renderer {
 public:
  void Render(const Report& report, std::ostream& out) const override {
    ForEachRecord(report, [&](const nlohmann::json& record) { out << RecordLine(record) << '\n'; });
  }
  void RenderDump(const ThreadDump& dump, std::ostream& out) const override { out << RenderThreadDumpJson(dump); }
};

}  // namespace

std::unique_ptr<Renderer> MakeJsonRenderer(const RenderOptions&) { return std::make_unique<JsonRenderer>(); }

}  // namespace looptrace
