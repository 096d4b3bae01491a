// The HTML report's stylesheet and script (report/assets/), compiled in at build time
// (cmake/EmbedAssets.cmake): the report reads no file at run time.
#pragma once

namespace looptrace::html_assets {

extern const char kReportCss[];
extern const char kReportJs[];

}  // namespace looptrace::html_assets
