// looptrace: external main-thread profiler. Commands come from the table below, each in its
// own file; errors become exit codes in the commands and nowhere else.
#include <fmt/format.h>
#include <malloc.h>

#include <algorithm>
#include <iostream>

#include "loader/cli/cli.h"
#include "loader/cli/suggest.h"
#include "looptrace/util/log.h"

namespace looptrace::cli {
namespace {

struct CommandEntry {
  const char* name;
  const char* help;
  std::unique_ptr<Command> (*make)();
};

const CommandEntry kCommands[] = {
    {"record", "attach to a running process and report its messages", MakeRecordCommand},
    {"run", "start COMMAND with probes attached before it runs", MakeRunCommand},
    {"report", "re-analyse a recording saved with --save", MakeReportCommand},
    {"probes", "resolve and list probe points without attaching", MakeProbesCommand},
    {"profiles", "list built-in profiles", MakeProfilesCommand},
    {"attach", "trace a running process in the background (returns once attached)", MakeAttachCommand},
    {"sessions", "list background sessions", MakeSessionsCommand},
    {"status", "live figures of a background session", MakeStatusCommand},
    {"snapshot", "every thread of a traced process now (like kill -3)", MakeSnapshotCommand},
    {"detach", "end a background session: final report, probes removed", MakeDetachCommand},
    {"top", "live view of a traced process", MakeTopCommand},
    {"clickhouse-schema", "print the ClickHouse tables report rows go to", MakeClickHouseSchemaCommand},
};

// `suggestion` ("did you mean ...?") comes first, on a line of its own.
int Usage(const std::string& message, const std::string& hint, const std::string& suggestion = "") {
  log::Usage(message);
  if (!suggestion.empty()) log::Hint(suggestion);
  log::Hint(hint);
  return static_cast<int>(ExitCode::kUsage);
}

// For `run`: the options end at "--" or at the first word that is not an option (or an
// option's value); from there on, everything is the command, passed through untouched.
// Unknown options before it are usage errors, never a command.
Result<size_t> CommandStart(CLI::App* app, CLI::App* sub, const std::vector<std::string>& args, size_t from) {
  for (size_t i = from; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--") return i;
    if (arg.size() < 2 || arg[0] != '-') return i;
    std::string name = arg.substr(0, arg.find('='));
    const CLI::Option* option = nullptr;
    for (CLI::App* scope : {sub, app}) {
      for (const CLI::Option* o : scope->get_options()) {
        if (o->check_name(name)) option = o;
        // "-d5": a short option with its value attached.
        if (!option && name.size() > 2 && name[1] != '-' && o->check_name(name.substr(0, 2))) option = o;
      }
      if (option) break;
    }
    if (!option)
      return MakeError(fmt::format("unknown option '{}' before the command", arg), ExitCode::kUsage,
                       "looptrace run --help lists the options; the command comes after them");
    const bool inline_value = arg.find('=') != std::string::npos || (arg[1] != '-' && arg.size() > 2);
    if (option->get_expected_min() > 0 && !inline_value) ++i;  // the option's value
  }
  return args.size();
}

}  // namespace
}  // namespace looptrace::cli

int main(int argc, char** argv) {
  using namespace looptrace;
  using namespace looptrace::cli;
  // Long sessions stay flat: a stall snapshot's method slice (up to the whole beat ring, tens
  // of MB) is mapped and unmapped on its own. With glibc's dynamic threshold, freeing the first
  // such buffer raises the mmap threshold to its size, and later ones stay in the heap for
  // good (a soak at 30,000 messages/s stepped up 57 MB at one snapshot and never came down).
  // A fixed threshold also fixes the trim threshold (128 KiB): freed heap tops go back too.
  mallopt(M_MMAP_THRESHOLD, 1 << 20);
  int verbose = 0;
  bool quiet = false;
  CLI::App app{"looptrace: external main-thread profiler (eBPF uprobes/USDT) for event loops", "looptrace"};
  app.set_version_flag("--version", LOOPTRACE_VERSION);
  app.require_subcommand(1);
  app.fallthrough();  // -v and -q anywhere, as in perf and bpftrace
  app.add_flag("-v,--verbose", verbose, "more diagnostics on stderr (-vv: libbpf debug)");
  app.add_flag("-q,--quiet", quiet, "only errors on stderr");
  app.footer(Footer(R"(  looptrace record -p 1234                    trace pid 1234 until Ctrl-C, text report
  looptrace run /usr/bin/python3.11 app.py     start a command under looptrace
  looptrace report rec.jsonl.gz --top 20       re-analyse a recording, no BPF needed
  looptrace probes -p 1234 --profile my.profile   resolve probe points, attach nothing
  looptrace profiles                           list built-in profiles
  looptrace attach -p 1234 -o app.json -f json  trace in the background; from any shell:
  looptrace status -p 1234 | top -p 1234 | snapshot -p 1234 | report -p 1234 | detach -p 1234
  looptrace sessions                           list background sessions
  looptrace COMMAND --help                     options and examples of a command
)"));
  std::vector<std::unique_ptr<Command>> commands;
  std::vector<CLI::App*> subs;
  for (const auto& entry : kCommands) {
    commands.push_back(entry.make());
    subs.push_back(app.add_subcommand(entry.name, entry.help));
    commands.back()->Setup(subs.back());
  }

  std::vector<std::string> args(argv + 1, argv + argc);
  // The command word: the first argument that is not a global option.
  size_t word = 0;
  while (word < args.size() && (args[word] == "-v" || args[word] == "-vv" || args[word] == "--verbose" ||
                                args[word] == "-q" || args[word] == "--quiet"))
    ++word;
  std::vector<std::string> trailing;
  if (word < args.size() && !args[word].starts_with("-")) {
    auto known = std::find_if(std::begin(kCommands), std::end(kCommands),
                              [&](const CommandEntry& e) { return args[word] == e.name; });
    if (known == std::end(kCommands)) {
      std::vector<std::string> names;
      for (const CommandEntry& e : kCommands) names.emplace_back(e.name);
      const std::string nearest = Nearest(args[word], names);
      return Usage(fmt::format("unknown command '{}'", args[word]),
                   "commands are record, run, report, probes, profiles, attach, sessions, status, snapshot, "
                   "detach, top, clickhouse-schema",
                   nearest.empty() ? "" : fmt::format("did you mean '{}'?", nearest));
    }
    const size_t index = static_cast<size_t>(known - std::begin(kCommands));
    if (commands[index]->TakesCommand()) {
      auto start = CommandStart(&app, subs[index], args, word + 1);
      if (!start) {
        const std::string unknown = FirstUnknownOption(*subs[index], args, word + 1);
        return Usage(start.error().message, start.error().hint,
                     unknown.empty() ? "" : DidYouMeanOption(*subs[index], unknown));
      }
      size_t from = *start;
      if (from < args.size() && args[from] == "--") ++from;
      trailing.assign(args.begin() + static_cast<std::ptrdiff_t>(from), args.end());
      args.erase(args.begin() + static_cast<std::ptrdiff_t>(*start), args.end());
    }
  }
  const std::vector<std::string> given = args;  // CLI11 consumes what it parses
  std::reverse(args.begin(), args.end());       // CLI11 takes a reversed vector
  try {
    app.parse(args);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::Success& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // A mistyped option of the command (or of looptrace itself): the nearest one first.
    std::string suggestion;
    const CLI::App* scope = &app;
    if (word < given.size())
      for (size_t i = 0; i < subs.size(); ++i)
        if (given[word] == kCommands[i].name) scope = subs[i];
    if (std::string unknown = FirstUnknownOption(*scope, given, scope == &app ? 0 : word + 1); !unknown.empty())
      suggestion = DidYouMeanOption(*scope, unknown);
    return Usage(e.what(), "looptrace --help, or looptrace COMMAND --help", suggestion);
  }
  // CLI11 has its copies: a password given on the command line stops showing in `ps` now.
  HideSecretsInArguments(argc, argv);
  if (quiet) log::Verbosity() = log::Level::kError;
  if (verbose == 1) log::Verbosity() = log::Level::kV1;
  if (verbose >= 2) log::Verbosity() = log::Level::kV2;
  for (size_t i = 0; i < subs.size(); ++i)
    if (subs[i]->parsed()) return commands[i]->Run(std::move(trailing));
  return Usage("no command", "looptrace --help");
}
