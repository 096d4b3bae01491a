// The documentation checked against the tree, so it cannot drift unnoticed:
// - every sample output README.md marks as a golden equals that golden file: a block
//     <!-- golden: tests/golden/KIND/CASE/expected.txt -->   (or "... lines N" for its first N)
//     ```
//     ...
//     ```
//     <!-- /golden -->
//   is compared line by line with the file, a failure naming the first line that differs;
// - every relative link of README.md and docs/*.md reaches a file, and its #anchor a heading;
// - every repository path the pages name in backquotes exists (placeholders such as NAME or
//   <case> are not paths; a library header may be named by its short form, FOLDER/x.h for
//   FOLDER/include/looptrace/FOLDER/x.h);
// - no page shows a path of one machine (a home directory, a checkout's location).
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "../tracers/golden_compare.h"

namespace looptrace {
namespace {

namespace fs = std::filesystem;

const fs::path& SourceDir() {
  static const fs::path dir = LOOPTRACE_SOURCE_DIR;
  return dir;
}

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// README.md and every page of docs/, as paths relative to the source directory.
std::vector<fs::path> Pages() {
  std::vector<fs::path> pages = {"README.md"};
  for (const auto& entry : fs::directory_iterator(SourceDir() / "docs"))
    if (entry.path().extension() == ".md") pages.push_back(fs::relative(entry.path(), SourceDir()));
  std::sort(pages.begin(), pages.end());
  return pages;
}

// A page's lines outside fenced code blocks (a link or heading in a code block is none),
// each with its line number.
std::vector<std::pair<int, std::string>> ProseLines(const std::string& text) {
  std::vector<std::pair<int, std::string>> out;
  bool in_code = false;
  int number = 0;
  for (const std::string& line : Lines(text)) {
    ++number;
    if (line.rfind("```", 0) == 0) {
      in_code = !in_code;
      continue;
    }
    if (!in_code) out.emplace_back(number, line);
  }
  return out;
}

// A heading's anchor as GitHub makes it: lower case, punctuation dropped but '-' and '_',
// spaces as '-'.
std::string Anchor(std::string_view heading) {
  std::string anchor;
  for (unsigned char c : heading) {
    if (std::isalnum(c) || c == '-' || c == '_')
      anchor += static_cast<char>(std::tolower(c));
    else if (c == ' ')
      anchor += '-';
    else if (c >= 0x80)
      anchor += static_cast<char>(c);
  }
  return anchor;
}

std::set<std::string> Anchors(const std::string& text) {
  std::set<std::string> anchors;
  for (const auto& [number, line] : ProseLines(text)) {
    size_t level = 0;
    while (level < line.size() && line[level] == '#') ++level;
    if (level == 0 || level >= line.size() || line[level] != ' ') continue;
    std::string heading = line.substr(level + 1);
    heading.erase(std::remove(heading.begin(), heading.end(), '`'), heading.end());
    std::string anchor = Anchor(heading);
    // A repeated heading gets -1, -2, ... as on GitHub.
    std::string unique = anchor;
    for (int n = 1; anchors.contains(unique); ++n) unique = anchor + "-" + std::to_string(n);
    anchors.insert(unique);
  }
  return anchors;
}

struct GoldenBlock {
  int line = 0;                    // the marker's line in README.md
  std::string file;                // the golden file, relative to the source directory
  std::optional<size_t> lines;     // only its first N lines are shown
  std::vector<std::string> shown;  // the code block's lines
  std::string error;               // a malformed block
};

std::vector<GoldenBlock> GoldenBlocks(const std::string& readme) {
  static const std::regex kMarker(R"(^<!-- golden: (\S+)(?: lines (\d+))? -->$)");
  std::vector<GoldenBlock> blocks;
  const std::vector<std::string> lines = Lines(readme);
  for (size_t i = 0; i < lines.size(); ++i) {
    std::smatch match;
    if (!std::regex_match(lines[i], match, kMarker)) {
      if (lines[i].find("<!-- golden") != std::string::npos) {
        GoldenBlock bad;
        bad.line = static_cast<int>(i + 1);
        bad.error = "a golden marker not of the form <!-- golden: FILE [lines N] -->: " + lines[i];
        blocks.push_back(bad);
      }
      continue;
    }
    GoldenBlock block;
    block.line = static_cast<int>(i + 1);
    block.file = match[1];
    if (match[2].matched) block.lines = std::stoul(match[2]);
    size_t j = i + 1;
    if (j >= lines.size() || lines[j].rfind("```", 0) != 0) {
      block.error = "the marker is not followed by a code block";
    } else {
      for (++j; j < lines.size() && lines[j] != "```"; ++j) block.shown.push_back(lines[j]);
      if (j >= lines.size())
        block.error = "the code block has no end";
      else if (j + 1 >= lines.size() || lines[j + 1] != "<!-- /golden -->")
        block.error = "the code block is not followed by <!-- /golden -->";
    }
    blocks.push_back(block);
    i = j;
  }
  return blocks;
}

std::string Joined(const std::vector<std::string>& lines) {
  std::string text;
  for (const std::string& line : lines) text += line + "\n";
  return text;
}

TEST(ReadmeGolden, SampleOutputsEqualTheirGoldenFiles) {
  const std::vector<GoldenBlock> blocks = GoldenBlocks(ReadFile(SourceDir() / "README.md"));
  ASSERT_FALSE(blocks.empty()) << "README.md has no <!-- golden: FILE --> block";
  for (const GoldenBlock& block : blocks) {
    SCOPED_TRACE("README.md line " + std::to_string(block.line) + ": " + block.file);
    ASSERT_TRUE(block.error.empty()) << block.error;
    const fs::path golden = SourceDir() / block.file;
    ASSERT_TRUE(block.file.starts_with("tests/golden/") && fs::is_regular_file(golden))
        << "no golden file " << block.file;
    std::vector<std::string> want = Lines(ReadFile(golden));
    if (block.lines) {
      ASSERT_LE(*block.lines, want.size()) << block.file << " has only " << want.size() << " lines";
      want.resize(*block.lines);
    }
    const std::optional<std::string> difference = testing::CompareText(Joined(block.shown), Joined(want));
    if (difference) ADD_FAILURE() << "README.md's block and " << block.file << ": " << *difference;
  }
}

TEST(ReadmeGolden, ReadsMarkersAndFindsBrokenBlocks) {
  const std::vector<GoldenBlock> blocks = GoldenBlocks(
      "text\n<!-- golden: tests/golden/a/b/expected.txt lines 2 -->\n```\none\ntwo\n```\n<!-- /golden -->\n"
      "<!-- golden: x.txt -->\n```\none\n```\nno end marker\n<!-- golden x -->\n");
  ASSERT_EQ(blocks.size(), 3u);
  EXPECT_EQ(blocks[0].file, "tests/golden/a/b/expected.txt");
  EXPECT_EQ(blocks[0].lines, 2u);
  EXPECT_EQ(blocks[0].shown, (std::vector<std::string>{"one", "two"}));
  EXPECT_EQ(blocks[0].error, "");
  EXPECT_EQ(blocks[1].error, "the code block is not followed by <!-- /golden -->");
  EXPECT_NE(blocks[2].error, "");
}

TEST(DocsLinks, AnchorsAreGithubs) {
  EXPECT_EQ(Anchor("Background sessions, live view, Prometheus and ClickHouse"),
            "background-sessions-live-view-prometheus-and-clickhouse");
  EXPECT_EQ(Anchor("JSON output (-f json)"), "json-output--f-json");
  EXPECT_EQ(Anchors("# A\n```\n# not a heading\n```\n## A\n"), (std::set<std::string>{"a", "a-1"}));
}

TEST(DocsLinks, ReachFilesAndHeadings) {
  static const std::regex kLink(R"(\]\(([^)\s]+)\))");
  for (const fs::path& page : Pages()) {
    const std::string text = ReadFile(SourceDir() / page);
    for (const auto& [number, line] : ProseLines(text)) {
      for (std::sregex_iterator it(line.begin(), line.end(), kLink), end; it != end; ++it) {
        const std::string target = (*it)[1];
        if (target.find("://") != std::string::npos || target.starts_with("mailto:")) continue;
        const std::string where = page.string() + ":" + std::to_string(number) + ": " + target;
        const size_t hash = target.find('#');
        const std::string file = target.substr(0, hash);
        const fs::path resolved = file.empty() ? SourceDir() / page : SourceDir() / page.parent_path() / file;
        if (!fs::exists(resolved)) {
          ADD_FAILURE() << where << ": no such file";
          continue;
        }
        if (hash == std::string::npos) continue;
        const std::string anchor = target.substr(hash + 1);
        if (!Anchors(ReadFile(resolved)).contains(anchor)) ADD_FAILURE() << where << ": no heading #" << anchor;
      }
    }
  }
}

// A backquoted word that names a repository path: it begins with a top-level folder and
// holds no placeholder (<case>, NAME, *, %p, {a,b}, ...).
std::optional<std::string> RepositoryPath(std::string word) {
  static const std::vector<std::string> kFolders = {"bpf/",   "symbols/", "tracers/",  "loader/", "report/",
                                                    "util/",  "tests/",   "bench/",    "docs/",   "scripts/",
                                                    "cmake/", ".ci/",     "packaging/"};
  static const std::regex kPlaceholder(R"([<>*{}%]|\.\.\.|[A-Z]{3,})");
  while (!word.empty() && std::string_view("(),;.").find(word.back()) != std::string_view::npos) word.pop_back();
  if (const size_t colon = word.find(':'); colon != std::string::npos) word.resize(colon);  // FILE:LINE
  if (std::none_of(kFolders.begin(), kFolders.end(), [&](const std::string& f) { return word.starts_with(f); }))
    return std::nullopt;
  if (std::regex_search(word, kPlaceholder)) return std::nullopt;
  return word;
}

bool PathExists(const std::string& path) {
  if (fs::exists(SourceDir() / path)) return true;
  // FOLDER/x.h: a library's public header (FOLDER/include/looptrace/FOLDER/x.h).
  const size_t slash = path.find('/');
  const std::string folder = path.substr(0, slash);
  return fs::exists(SourceDir() / folder / "include/looptrace" / folder / path.substr(slash + 1));
}

TEST(DocsPaths, NamedRepositoryPathsExist) {
  EXPECT_EQ(RepositoryPath("tests/golden/looper/basic/expected.txt,"), "tests/golden/looper/basic/expected.txt");
  EXPECT_EQ(RepositoryPath("loader/profiles/NAME.profile"), std::nullopt);
  EXPECT_EQ(RepositoryPath("/proc/PID/maps"), std::nullopt);
  EXPECT_TRUE(PathExists("report/stats.h"));

  static const std::regex kQuoted("`([^`]+)`");
  for (const fs::path& page : Pages()) {
    // ARCHITECTURE.md names files by their room and module; it is kept by hand.
    if (page == "docs/ARCHITECTURE.md") continue;
    int number = 0;
    for (const std::string& line : Lines(ReadFile(SourceDir() / page))) {
      ++number;
      for (std::sregex_iterator it(line.begin(), line.end(), kQuoted), end; it != end; ++it) {
        std::istringstream words((*it)[1].str());
        for (std::string word; words >> word;) {
          const std::optional<std::string> path = RepositoryPath(word);
          if (path && !PathExists(*path))
            ADD_FAILURE() << page.string() << ":" << number << ": no such file or folder: " << *path;
        }
      }
    }
  }
}

TEST(DocsPaths, NoPathOfOneMachine) {
  for (const fs::path& page : Pages()) {
    int number = 0;
    for (const std::string& line : Lines(ReadFile(SourceDir() / page))) {
      ++number;
      for (const char* machine : {"/work/", "/root/", "/home/"})
        if (line.find(machine) != std::string::npos)
          ADD_FAILURE() << page.string() << ":" << number << ": a path of one machine (" << machine << "): " << line;
    }
  }
}

}  // namespace
}  // namespace looptrace
