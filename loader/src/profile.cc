#include "looptrace/loader/profile.h"

#include <fmt/format.h>

#include "looptrace/util/safe_file.h"

#include <algorithm>
#include <charconv>

namespace looptrace::loader {

std::string_view ProbeKindName(ProbeKind kind) {
  switch (kind) {
    case ProbeKind::kUprobe: return "uprobe";
    case ProbeKind::kUretprobe: return "uretprobe";
    case ProbeKind::kUsdt: return "usdt";
  }
  return "?";
}

std::string_view ArgTypeName(ArgType type) {
  switch (type) {
    case ArgType::kUint: return "uint";
    case ArgType::kInt: return "int";
    case ArgType::kPtr: return "ptr";
    case ArgType::kStr: return "str";
  }
  return "?";
}

bool Profile::HasRole(Role role) const {
  return std::any_of(probes.begin(), probes.end(), [&](const ProbeSpec& p) { return p.role == role; });
}

namespace {

std::vector<std::string_view> SplitWords(std::string_view line) {
  std::vector<std::string_view> words;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    size_t start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t') ++i;
    if (i > start) words.push_back(line.substr(start, i - start));
  }
  return words;
}

std::string Join(const std::vector<std::string_view>& items) {
  std::string out;
  for (auto item : items) {
    if (!out.empty()) out += ", ";
    out += item;
  }
  return out;
}

class Parser {
 public:
  explicit Parser(std::string_view source) : source_(source) {}

  std::unexpected<Error> Fail(int line, const std::string& message, std::string hint = {}) {
    return MakeError(fmt::format("{}:{}: {}", source_, line, message), ExitCode::kProfile,
                     std::move(hint));
  }

  Result<ArgSpec> ParseArg(int line, std::string_view word, const ProbeSpec& probe) {
    size_t eq = word.find('=');
    if (eq == std::string_view::npos || eq == 0)
      return Fail(line, fmt::format("argument '{}' is not NAME=SOURCE[:TYPE]", word),
                  "example: id=arg1 name=arg2:str");
    ArgSpec arg;
    arg.name = std::string(word.substr(0, eq));
    auto known = KnownArgNames(probe.role);
    if (std::find(known.begin(), known.end(), arg.name) == known.end())
      return Fail(line, fmt::format("role {} has no argument '{}' (known: {})",
                                    RoleName(probe.role), arg.name,
                                    known.empty() ? "none" : Join(known)));
    std::string_view rest = word.substr(eq + 1);
    std::string_view source = rest;
    std::string_view type = "uint";
    if (size_t colon = rest.find(':'); colon != std::string_view::npos) {
      source = rest.substr(0, colon);
      type = rest.substr(colon + 1);
    }
    if (source == "ret") {
      if (probe.kind != ProbeKind::kUretprobe)
        return Fail(line, fmt::format("argument '{}': 'ret' needs a uretprobe", arg.name));
      arg.source = LT_ARG_SOURCE_RETVAL;
    } else {
      int n = 0;
      auto [ptr, ec] = std::from_chars(source.data() + std::min<size_t>(3, source.size()),
                                       source.data() + source.size(), n);
      if (!source.starts_with("arg") || ec != std::errc() || ptr != source.data() + source.size() ||
          n < 1 || n > 6)
        return Fail(line, fmt::format("argument '{}': source '{}' must be arg1..arg6 or ret",
                                      arg.name, source));
      if (probe.kind == ProbeKind::kUretprobe)
        return Fail(line, fmt::format("argument '{}': a uretprobe can only read 'ret'", arg.name),
                    "read arguments with a uprobe on the same symbol");
      arg.source = static_cast<uint8_t>(n - 1);
    }
    if (type == "uint") arg.type = ArgType::kUint;
    else if (type == "int") arg.type = ArgType::kInt;
    else if (type == "ptr") arg.type = ArgType::kPtr;
    else if (type == "str") arg.type = ArgType::kStr;
    else
      return Fail(line, fmt::format("argument '{}': unknown type '{}' (known: uint, int, ptr, str)",
                                    arg.name, type));
    return arg;
  }

  // A method beat stores two identity words: the first argument (id, addr or name) and
  // the second (class). Other layouts cannot be stored, so they are refused here.
  Result<void> OrderMethodArgs(int line, ProbeSpec* probe) {
    auto rank = [](const std::string& name) {
      if (name == "id" || name == "addr") return 0;
      if (name == "name") return 1;
      return 2;  // class
    };
    std::stable_sort(probe->args.begin(), probe->args.end(),
                     [&](const ArgSpec& a, const ArgSpec& b) { return rank(a.name) < rank(b.name); });
    bool has_id = false, has_name = false, has_class = false;
    for (const auto& a : probe->args) {
      has_id |= a.name == "id" || a.name == "addr";
      has_name |= a.name == "name";
      has_class |= a.name == "class";
    }
    if ((has_id && (has_name || has_class)) || probe->args.size() > 2 ||
        (has_class && !has_name) || (probe->args.size() == 2 && !(has_name && has_class)))
      return Fail(line, "a method probe binds one of: id=, addr=, name= (optionally with class=)",
                  "examples: id=arg1 | addr=arg1 | name=arg2:str class=arg1:str");
    for (const auto& a : probe->args)
      if ((a.name == "name" || a.name == "class") && a.type != ArgType::kStr)
        return Fail(line, fmt::format("method argument '{}' must be :str", a.name));
    return {};
  }

  Result<ProbeSpec> ParseProbe(int line, const std::vector<std::string_view>& words) {
    if (words.size() < 5)
      return Fail(line, "probe needs: probe ROLE KIND BINARY POINT [ARGS...]",
                  "example: probe dispatch.begin uprobe exe my_dispatch id=arg1");
    ProbeSpec probe;
    probe.line = line;
    auto role = RoleFromName(words[1]);
    if (!role)
      return Fail(line, fmt::format("unknown role '{}'", words[1]),
                  "known roles: " + Join(AllRoleNames()));
    probe.role = *role;
    if (words[2] == "uprobe") probe.kind = ProbeKind::kUprobe;
    else if (words[2] == "uretprobe") probe.kind = ProbeKind::kUretprobe;
    else if (words[2] == "usdt") probe.kind = ProbeKind::kUsdt;
    else
      return Fail(line, fmt::format("unknown probe kind '{}' (known: uprobe, uretprobe, usdt)",
                                    words[2]));
    probe.binary = std::string(words[3]);
    probe.point = std::string(words[4]);
    if (probe.kind == ProbeKind::kUsdt) {
      size_t colon = probe.point.find(':');
      if (colon == std::string::npos || colon == 0 || colon + 1 == probe.point.size())
        return Fail(line, fmt::format("usdt point '{}' must be provider:name", probe.point));
    }
    for (size_t i = 5; i < words.size(); ++i) {
      ASSIGN_OR_RETURN(ArgSpec arg, ParseArg(line, words[i], probe));
      for (const auto& other : probe.args)
        if (other.name == arg.name)
          return Fail(line, fmt::format("argument '{}' is bound twice", arg.name));
      probe.args.push_back(std::move(arg));
    }
    if (probe.args.size() > LT_MAX_ARGS)
      return Fail(line, fmt::format("at most {} arguments per probe", LT_MAX_ARGS));
    if (probe.role == Role::kMethodEnter || probe.role == Role::kMethodExit) {
      RETURN_IF_ERROR(OrderMethodArgs(line, &probe));
    }
    return probe;
  }

  Result<Profile> Parse(std::string_view text) {
    Profile profile;
    profile.source = std::string(source_);
    int line_no = 0;
    size_t pos = 0;
    while (pos <= text.size()) {
      size_t nl = text.find('\n', pos);
      std::string_view line = text.substr(pos, nl == std::string_view::npos ? text.npos : nl - pos);
      pos = nl == std::string_view::npos ? text.size() + 1 : nl + 1;
      ++line_no;
      if (size_t hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
      auto words = SplitWords(line);
      if (words.empty()) continue;
      if (words[0] == "profile") {
        if (words.size() != 2) return Fail(line_no, "'profile' takes one name");
        profile.name = std::string(words[1]);
      } else if (words[0] == "description") {
        size_t start = line.find("description") + 11;
        auto desc = line.substr(start);
        while (!desc.empty() && (desc.front() == ' ' || desc.front() == '\t')) desc.remove_prefix(1);
        while (!desc.empty() && (desc.back() == ' ' || desc.back() == '\t' || desc.back() == '\r'))
          desc.remove_suffix(1);
        profile.description = std::string(desc);
      } else if (words[0] == "probe") {
        ASSIGN_OR_RETURN(ProbeSpec probe, ParseProbe(line_no, words));
        profile.probes.push_back(std::move(probe));
      } else {
        return Fail(line_no, fmt::format("unknown directive '{}' (known: profile, description, probe)",
                                         words[0]));
      }
    }
    if (profile.probes.empty()) return Fail(line_no, "profile defines no probe");
    if (profile.name.empty()) profile.name = std::string(source_);
    // Pairs are required so the tracers never see half a role.
    const std::pair<Role, Role> pairs[] = {{Role::kDispatchBegin, Role::kDispatchEnd},
                                           {Role::kFrameBegin, Role::kFrameEnd},
                                           {Role::kPhaseBegin, Role::kPhaseEnd},
                                           {Role::kMethodEnter, Role::kMethodExit},
                                           {Role::kIdleBegin, Role::kIdleEnd},
                                           {Role::kPollBegin, Role::kPollEnd}};
    for (auto [a, b] : pairs) {
      if (profile.HasRole(a) != profile.HasRole(b))
        return Fail(line_no, fmt::format("maps {} but not {}",
                                         RoleName(profile.HasRole(a) ? a : b),
                                         RoleName(profile.HasRole(a) ? b : a)));
    }
    return profile;
  }

 private:
  std::string_view source_;
};

}  // namespace

Result<Profile> ParseProfile(std::string_view text, std::string_view source) {
  return Parser(source).Parse(text);
}

Result<Profile> LoadProfile(std::string_view name_or_path) {
  for (const auto& builtin : BuiltinProfiles())
    if (builtin.name == name_or_path)
      return ParseProfile(builtin.text, "builtin:" + std::string(builtin.name));
  if (name_or_path.find('/') == std::string_view::npos &&
      name_or_path.find('.') == std::string_view::npos) {
    std::vector<std::string_view> names;
    for (const auto& builtin : BuiltinProfiles()) names.push_back(builtin.name);
    return MakeError(fmt::format("no built-in profile named '{}'", name_or_path),
                     ExitCode::kProfile, "built-in profiles: " + Join(names) +
                                             "; or pass a profile file path");
  }
  // A regular file of at most kMaxProfileBytes, opened so that a FIFO or device cannot block.
  ASSIGN_OR_RETURN(std::string text,
                   ReadRegularFile(std::string(name_or_path), "profile", kMaxProfileBytes, ExitCode::kProfile));
  return ParseProfile(text, name_or_path);
}

}  // namespace looptrace::loader
