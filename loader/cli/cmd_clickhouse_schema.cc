// looptrace clickhouse-schema [--database NAME]: the CREATE TABLE statements of the tables
// `attach --clickhouse` inserts into (report/clickhouse_rows.h), to create them once.
#include <fmt/format.h>

#include <cctype>
#include <iostream>

#include "loader/cli/cli.h"
#include "looptrace/report/clickhouse_rows.h"

namespace looptrace::cli {
namespace {

class ClickHouseSchemaCommand : public Command {
 public:
  std::string_view name() const override { return "clickhouse-schema"; }
  void Setup(CLI::App* cmd) override {
    cmd->add_option("--database", database_, "database name")->capture_default_str();
    cmd->footer(Footer(R"(  looptrace clickhouse-schema | clickhouse-client --multiquery     create the tables once
  looptrace clickhouse-schema --database traces > schema.sql
)"));
  }
  int Run(std::vector<std::string>) override {
    for (char c : database_)
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_')
        return Fail(Error{fmt::format("--database '{}': letters, digits and _ only", database_), "", ExitCode::kUsage});
    std::cout << ClickHouseSchema(database_);
    return 0;
  }

 private:
  std::string database_ = "looptrace";
};

}  // namespace

std::unique_ptr<Command> MakeClickHouseSchemaCommand() { return std::make_unique<ClickHouseSchemaCommand>(); }

}  // namespace looptrace::cli
