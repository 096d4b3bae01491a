#include "looptrace/util/text_safety.h"

#include <cstdint>
#include <cstring>

namespace looptrace {
namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// Decodes the UTF-8 character at text[i]. Returns its length and sets *cp, or returns 0
// when the bytes there are not valid UTF-8; then *invalid is the length of the maximal
// subpart to replace (Unicode's "substitution of maximal subparts", at least 1).
size_t Decode(std::string_view text, size_t i, char32_t* cp, size_t* invalid) {
  const auto byte = [&](size_t k) { return static_cast<uint8_t>(text[k]); };
  const uint8_t b0 = byte(i);
  *invalid = 1;
  if (b0 < 0x80) {
    *cp = b0;
    return 1;
  }
  size_t length;
  uint8_t low = 0x80, high = 0xBF;  // allowed range of the second byte
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    length = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    length = 3;
    if (b0 == 0xE0) low = 0xA0;   // no overlong forms
    if (b0 == 0xED) high = 0x9F;  // no surrogates
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    length = 4;
    if (b0 == 0xF0) low = 0x90;   // no overlong forms
    if (b0 == 0xF4) high = 0x8F;  // nothing above U+10FFFF
  } else {
    return 0;
  }
  char32_t value = b0 & (0xFF >> (length + 1));
  for (size_t k = 1; k < length; ++k) {
    if (i + k >= text.size()) {
      *invalid = k;
      return 0;
    }
    const uint8_t b = byte(i + k);
    const uint8_t lo = k == 1 ? low : 0x80, hi = k == 1 ? high : 0xBF;
    if (b < lo || b > hi) {
      *invalid = k;
      return 0;
    }
    value = (value << 6) | (b & 0x3F);
  }
  *cp = value;
  return length;
}

bool IsDangerous(char32_t cp, bool keep_layout) {
  if (cp == '\n' || cp == '\t') return !keep_layout;
  if (cp < 0x20 || cp == 0x7F) return true;                       // C0 controls, DEL
  if (cp >= 0x80 && cp <= 0x9F) return true;                      // C1 controls (CSI is U+009B)
  if (cp == 0x2028 || cp == 0x2029) return true;                  // line / paragraph separator
  if (cp == 0x061C || cp == 0x200E || cp == 0x200F) return true;  // bidi marks
  if (cp >= 0x202A && cp <= 0x202E) return true;                  // bidi embeddings and overrides
  if (cp >= 0x2066 && cp <= 0x2069) return true;                  // bidi isolates
  return false;
}

void AppendHex(std::string* out, const char* prefix, uint32_t value, int digits) {
  static constexpr char kDigits[] = "0123456789abcdef";
  out->append(prefix);
  for (int shift = 4 * (digits - 1); shift >= 0; shift -= 4) out->push_back(kDigits[(value >> shift) & 0xF]);
}

void AppendEscaped(std::string* out, char32_t cp) {
  switch (cp) {
    case '\n':
      out->append("\\n");
      return;
    case '\t':
      out->append("\\t");
      return;
    case '\r':
      out->append("\\r");
      return;
    default:
      break;
  }
  if (cp < 0x80)
    AppendHex(out, "\\x", cp, 2);
  else
    AppendHex(out, "\\u", cp, 4);
}

std::string Escape(std::string_view text, size_t max_bytes, bool keep_layout) {
  std::string out;
  out.reserve(text.size() + 8);
  size_t i = 0;
  while (i < text.size()) {
    char32_t cp = 0;
    size_t invalid = 1;
    const size_t length = Decode(text, i, &cp, &invalid);
    const size_t step = length ? length : invalid;
    if (i + step > max_bytes) {
      out.append(kTruncatedMark);
      break;
    }
    if (length == 0) {
      for (size_t k = 0; k < invalid; ++k) AppendHex(&out, "\\x", static_cast<uint8_t>(text[i + k]), 2);
    } else if (IsDangerous(cp, keep_layout)) {
      AppendEscaped(&out, cp);
    } else {
      out.append(text.substr(i, length));
    }
    i += step;
  }
  return out;
}

}  // namespace

bool IsValidUtf8(std::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    // Fast path for ASCII runs, a word at a time: every frame name of every stack sample
    // passes here, and nearly all are ASCII.
    constexpr uint64_t kHighBits = 0x8080808080808080ull;
    for (uint64_t word; i + sizeof(word) <= text.size(); i += sizeof(word)) {
      std::memcpy(&word, text.data() + i, sizeof(word));
      if (word & kHighBits) break;
    }
    if (i == text.size()) break;
    if (static_cast<uint8_t>(text[i]) < 0x80) {
      ++i;
      continue;
    }
    char32_t cp;
    size_t invalid;
    const size_t length = Decode(text, i, &cp, &invalid);
    if (length == 0) return false;
    i += length;
  }
  return true;
}

bool IsSafeText(std::string_view text, size_t max_bytes) {
  // A text SafeText already cut (max_bytes + the mark) counts as safe: sanitizing is idempotent.
  return text.size() <= max_bytes + kTruncatedMark.size() && IsValidUtf8(text);
}

std::string SafeText(std::string_view text, size_t max_bytes) {
  std::string out;
  out.reserve(std::min(text.size(), max_bytes) + kTruncatedMark.size());
  size_t i = 0;
  while (i < text.size()) {
    char32_t cp = 0;
    size_t invalid = 1;
    const size_t length = Decode(text, i, &cp, &invalid);
    const std::string_view piece = length ? text.substr(i, length) : kReplacement;
    if (out.size() + piece.size() > max_bytes) {
      out.append(kTruncatedMark);
      break;
    }
    out.append(piece);
    i += length ? length : invalid;
  }
  return out;
}

bool MakeSafeText(std::string* text, size_t max_bytes) {
  if (IsSafeText(*text, max_bytes)) return false;
  *text = SafeText(*text, max_bytes);
  return true;
}

std::string EscapeForTerminal(std::string_view text, size_t max_bytes) {
  return Escape(text, max_bytes, /*keep_layout=*/false);
}

std::string EscapeForTerminalKeepLayout(std::string_view text) {
  return Escape(text, std::string_view::npos, /*keep_layout=*/true);
}

bool IsTerminalSafe(std::string_view text, bool keep_layout) {
  size_t i = 0;
  while (i < text.size()) {
    char32_t cp = 0;
    size_t invalid = 1;
    const size_t length = Decode(text, i, &cp, &invalid);
    if (length == 0 || IsDangerous(cp, keep_layout)) return false;
    i += length;
  }
  return true;
}

std::string EscapeJsonForTerminal(std::string json) {
  // JSON writers escape C0 controls but not DEL; everything dangerous above ASCII starts
  // with one of these lead bytes.
  const auto suspicious = [](char c) {
    const auto b = static_cast<uint8_t>(c);
    return b == 0x7F || b == 0xC2 || b == 0xD8 || b == 0xE2;
  };
  size_t i = 0;
  while (i < json.size() && !suspicious(json[i])) ++i;
  if (i == json.size()) return json;
  std::string out = json.substr(0, i);
  while (i < json.size()) {
    char32_t cp = 0;
    size_t invalid = 1;
    const size_t length = Decode(json, i, &cp, &invalid);
    if ((length > 1 || cp == 0x7F) && IsDangerous(cp, /*keep_layout=*/true)) {
      AppendHex(&out, "\\u", cp, 4);
    } else {
      const size_t step = length ? length : invalid;
      out.append(json, i, step);
      i += step;
      continue;
    }
    i += length;
  }
  return out;
}

}  // namespace looptrace
