// HotSpot's compressed ints (compressedStream.hpp), in which it keeps line number tables and
// compiled methods' debug info: UNSIGNED5, lg_H 6 and L 192, at most 5 bytes an int. From
// JDK 21 no byte of an int is 0 (each byte is 1 above JDK 17's).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace looptrace::loader::jvm {

class CompressedReader {
 public:
  CompressedReader(std::span<const uint8_t> bytes, bool exclude_zero, size_t at = 0)
      : bytes_(bytes), excluded_(exclude_zero ? 1u : 0u), at_(at), ok_(at <= bytes.size()) {}

  // False once a read ran past the end (what it returned then is 0 or a part).
  bool ok() const { return ok_; }

  uint8_t Byte() {
    if (at_ >= bytes_.size()) {
      ok_ = false;
      return 0;
    }
    return bytes_[at_++];
  }

  uint32_t Unsigned() {
    const uint32_t low = 192 - excluded_;  // a byte below it ends an int
    uint32_t b = Byte() - excluded_;
    if (b < low) return b;
    uint32_t sum = b;
    int shift = 6;
    for (int i = 1; i < 5 && ok_; ++i, shift += 6) {
      b = Byte() - excluded_;
      sum += b << shift;
      if (b < low) break;
    }
    return sum;
  }

  // An int as HotSpot's read_int gives it: its bits as they were written.
  int32_t Int() { return static_cast<int32_t>(Unsigned()); }

  // A signed int (read_signed_int: zigzag).
  int32_t Signed() {
    const uint32_t v = Unsigned();
    return static_cast<int32_t>((v >> 1) ^ -(v & 1));
  }

 private:
  std::span<const uint8_t> bytes_;
  uint32_t excluded_;
  size_t at_;
  bool ok_;
};

}  // namespace looptrace::loader::jvm
