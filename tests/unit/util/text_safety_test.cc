#include "looptrace/util/text_safety.h"

#include <gtest/gtest.h>

#include <string>

namespace looptrace {
namespace {

using namespace std::string_literals;

TEST(TextSafety, ValidUtf8IsRecognized) {
  EXPECT_TRUE(IsValidUtf8(""));
  EXPECT_TRUE(IsValidUtf8("plain ascii"));
  EXPECT_TRUE(IsValidUtf8("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"));  // é € 😀
  EXPECT_TRUE(IsValidUtf8("nul\0inside"s));
  EXPECT_FALSE(IsValidUtf8("\xFF"));
  EXPECT_FALSE(IsValidUtf8("\xC3"));              // truncated
  EXPECT_FALSE(IsValidUtf8("\xC0\xAF"));          // overlong '/'
  EXPECT_FALSE(IsValidUtf8("\xE0\x80\xAF"));      // overlong
  EXPECT_FALSE(IsValidUtf8("\xED\xA0\x80"));      // surrogate U+D800
  EXPECT_FALSE(IsValidUtf8("\xF4\x90\x80\x80"));  // above U+10FFFF
  EXPECT_FALSE(IsValidUtf8("\x80 stray continuation"));
}

// ASCII runs are checked a word at a time: a bad or multi-byte sequence is found at every
// position of a long text, across and at the ends of the words.
TEST(TextSafety, EveryPositionOfALongTextIsChecked) {
  for (size_t length = 1; length <= 40; ++length) {
    for (size_t at = 0; at < length; ++at) {
      std::string text(length, 'a');
      text[at] = '\xFF';
      EXPECT_FALSE(IsValidUtf8(text)) << length << " bytes, 0xFF at " << at;
      text.replace(at, 1, "\xC3\xA9");
      EXPECT_TRUE(IsValidUtf8(text)) << length << " bytes, U+00E9 at " << at;
      text.resize(at + 1);  // cut inside the sequence
      EXPECT_FALSE(IsValidUtf8(text)) << "cut at " << at + 1;
    }
  }
}

TEST(TextSafety, SafeTextReplacesEachInvalidSequenceWithOneReplacementCharacter) {
  const std::string fffd = "\xEF\xBF\xBD";
  EXPECT_EQ(SafeText("ok"), "ok");
  EXPECT_EQ(SafeText("a\xFF"
                     "b"),
            "a" + fffd + "b");
  // Maximal subparts (Unicode 3.9): a truncated 3-byte sequence is one U+FFFD.
  EXPECT_EQ(SafeText("a\xE2\x82"
                     "b"),
            "a" + fffd + "b");
  EXPECT_EQ(SafeText("\xC0\xAF"), fffd + fffd);
  EXPECT_EQ(SafeText("\xED\xA0\x80"), fffd + fffd + fffd);
  // Control characters and NULs are data: kept (JSON escapes them, terminals get escapes).
  EXPECT_EQ(SafeText("\x1b[2J\0x"s), "\x1b[2J\0x"s);
  EXPECT_TRUE(IsValidUtf8(SafeText("\xF0\x9F\x98")));
}

TEST(TextSafety, SafeTextCapsLengthAtACharacterBoundary) {
  std::string long_name(100'000, 'x');
  std::string safe = SafeText(long_name);
  EXPECT_EQ(safe.size(), kMaxNameBytes + kTruncatedMark.size());
  EXPECT_TRUE(safe.ends_with(kTruncatedMark));
  // "é" is 2 bytes: a cap of 5 keeps two of them, never half of the third.
  std::string cut = SafeText("\xC3\xA9\xC3\xA9\xC3\xA9", 5);
  EXPECT_EQ(cut, "\xC3\xA9\xC3\xA9" + std::string(kTruncatedMark));
  EXPECT_TRUE(IsValidUtf8(cut));
}

TEST(TextSafety, MakeSafeTextReportsWhetherItChanged) {
  std::string fine = "dispatch";
  EXPECT_FALSE(MakeSafeText(&fine));
  EXPECT_EQ(fine, "dispatch");
  std::string bad = "bad\xFE";
  EXPECT_TRUE(MakeSafeText(&bad));
  EXPECT_TRUE(IsValidUtf8(bad));
}

TEST(TextSafety, EscapeForTerminalMakesControlCharactersVisible) {
  EXPECT_EQ(EscapeForTerminal("plain"), "plain");
  EXPECT_EQ(EscapeForTerminal("\x1b]0;owned\x07"), "\\x1b]0;owned\\x07");
  EXPECT_EQ(EscapeForTerminal("a\nb\tc\rd"), "a\\nb\\tc\\rd");
  EXPECT_EQ(EscapeForTerminal("nul\0end"s), "nul\\x00end");
  EXPECT_EQ(EscapeForTerminal("del\x7f"), "del\\x7f");
  EXPECT_EQ(EscapeForTerminal("\xC2\x9B"
                              "31m"),
            "\\u009b31m");  // C1 CSI as UTF-8
  EXPECT_EQ(EscapeForTerminal("\xE2\x80\xAE"
                              "evil"),
            "\\u202eevil");  // right-to-left override
  EXPECT_EQ(EscapeForTerminal("\x9B"
                              "31m"),
            "\\x9b31m");                                       // raw 8-bit CSI
  EXPECT_EQ(EscapeForTerminal("caf\xC3\xA9"), "caf\xC3\xA9");  // printable UTF-8 kept
}

TEST(TextSafety, EscapeForTerminalCapsItsInput) {
  std::string escaped = EscapeForTerminal(std::string(1000, '\x1b'), 10);
  EXPECT_EQ(escaped, std::string("\\x1b\\x1b\\x1b\\x1b\\x1b\\x1b\\x1b\\x1b\\x1b\\x1b") + std::string(kTruncatedMark));
}

TEST(TextSafety, KeepLayoutLeavesNewlinesAndTabsAlone) {
  EXPECT_EQ(EscapeForTerminalKeepLayout("a\tb\nc\x1b[1m\r"), "a\tb\nc\\x1b[1m\\r");
  EXPECT_TRUE(IsTerminalSafe("table\trow\n", /*keep_layout=*/true));
  EXPECT_FALSE(IsTerminalSafe("table\trow\n", /*keep_layout=*/false));
  EXPECT_FALSE(IsTerminalSafe("\x1b", true));
  EXPECT_FALSE(IsTerminalSafe("\xFF", true));
}

// Whatever the input, the escaped text holds no byte a terminal acts on.
TEST(TextSafety, EscapedTextHasNoControlBytesForAnyByte) {
  std::string all;
  for (int b = 0; b < 256; ++b) all.push_back(static_cast<char>(b));
  all += "\xC2\x80\xC2\x9F\xE2\x80\xA8\xE2\x81\xA6";
  for (const std::string& escaped : {EscapeForTerminal(all), EscapeForTerminalKeepLayout(all)}) {
    EXPECT_TRUE(IsValidUtf8(escaped));
    for (unsigned char c : escaped) {
      if (c == '\n' || c == '\t') continue;
      EXPECT_FALSE(c < 0x20 || c == 0x7F) << "raw control byte " << int(c);
    }
    EXPECT_EQ(escaped.find("\xC2\x80"), std::string::npos);
    EXPECT_EQ(escaped.find("\xC2\x9F"), std::string::npos);
  }
  EXPECT_EQ(EscapeForTerminal(all).find('\n'), std::string::npos);
}

TEST(TextSafety, JsonForTerminalEscapesC1AndBidiAsJsonEscapes) {
  EXPECT_EQ(EscapeJsonForTerminal("{\"a\":\"plain caf\xC3\xA9\"}"), "{\"a\":\"plain caf\xC3\xA9\"}");
  EXPECT_EQ(EscapeJsonForTerminal("{\"a\":\"x\xC2\x9By\xE2\x80\xAEz\xE2\x80\xA8\xC2\xA0\"}"),
            "{\"a\":\"x\\u009by\\u202ez\\u2028\xC2\xA0\"}");  // NBSP (U+00A0) is printable
  EXPECT_EQ(EscapeJsonForTerminal("{\"del\":\"a\x7f\"}"), "{\"del\":\"a\\u007f\"}");
}

}  // namespace
}  // namespace looptrace
