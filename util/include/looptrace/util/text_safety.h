// Strings looptrace did not write itself (names from the target, /proc, profiles, mapping
// files, recordings) are bytes: they may be invalid UTF-8, carry terminal escape sequences
// or be huge. Two steps make them safe:
//   - where they enter, SafeText() turns them into valid UTF-8 of bounded length (data that
//     every renderer can print, JSON included);
//   - where they reach a terminal (text reports, log lines), EscapeForTerminal() makes
//     control characters visible ("\x1b", "\n") instead of letting them act.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace looptrace {

// Longest name kept in a report (message, thread, method, activity, command, path), in bytes.
inline constexpr size_t kMaxNameBytes = 4096;
// Longest piece of file content echoed in an error or warning, in bytes.
inline constexpr size_t kMaxQuotedBytes = 120;
// Longest log line, in bytes after escaping.
inline constexpr size_t kMaxLogLineBytes = 8192;
// Appended to text cut at a cap.
inline constexpr std::string_view kTruncatedMark = "[...]";

bool IsValidUtf8(std::string_view text);

// Valid UTF-8 of at most `max_bytes` (plus kTruncatedMark when cut): every invalid
// sequence becomes U+FFFD, and longer text is cut at a character boundary and marked.
// Control characters and NULs are kept (JSON escapes them; terminals get EscapeForTerminal).
std::string SafeText(std::string_view text, size_t max_bytes = kMaxNameBytes);
// Whether SafeText would leave `text` as it is (valid UTF-8, within the cap).
bool IsSafeText(std::string_view text, size_t max_bytes = kMaxNameBytes);
// The same in place; returns whether `text` changed. Cheap when it is already safe.
bool MakeSafeText(std::string* text, size_t max_bytes = kMaxNameBytes);

// Text for a terminal: C0 controls, DEL, C1 controls (U+0080-U+009F), line/paragraph
// separators and bidirectional overrides are written as visible escapes ("\n", "\t",
// "\r", "\x1b", "\u009b", "\u202e"), and bytes that are not UTF-8 as "\xff". Input longer
// than `max_bytes` is cut at a character boundary and ends with kTruncatedMark.
std::string EscapeForTerminal(std::string_view text, size_t max_bytes = std::string_view::npos);
// The same, but newlines and tabs stay as they are: for a whole report whose layout uses them.
std::string EscapeForTerminalKeepLayout(std::string_view text);
// Whether EscapeForTerminalKeepLayout would change `text`.
bool IsTerminalSafe(std::string_view text, bool keep_layout);

// JSON text (valid UTF-8, as nlohmann writes it) whose strings may hold code points that
// JSON allows raw but terminals act on (DEL, C1 controls such as U+009B CSI, bidi
// overrides, U+2028/9): those are rewritten as \uXXXX escapes, which decode to the same
// strings.
std::string EscapeJsonForTerminal(std::string json);

}  // namespace looptrace
