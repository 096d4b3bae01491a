#include "looptrace/symbols/probe_cost.h"

#include <array>
#include <optional>

namespace looptrace::symbols {
namespace {

constexpr std::array<std::string_view, 8> kReg64 = {"%rax", "%rcx", "%rdx", "%rbx", "%rsp", "%rbp", "%rsi", "%rdi"};
constexpr std::array<std::string_view, 8> kRegExt = {"%r8", "%r9", "%r10", "%r11", "%r12", "%r13", "%r14", "%r15"};
constexpr std::array<std::string_view, 16> kConditions = {"jo", "jno", "jb", "jae", "je", "jne", "jbe", "ja",
                                                          "js", "jns", "jp", "jnp", "jl", "jge", "jle", "jg"};
constexpr std::array<std::string_view, 8> kAluNames = {"add", "or", "adc", "sbb", "and", "sub", "xor", "cmp"};
constexpr std::array<std::string_view, 8> kShiftNames = {"rol", "ror", "rcl", "rcr", "shl", "shr", "sal", "sar"};
constexpr std::array<std::string_view, 8> kGroup3Names = {"test", "test", "not", "neg", "mul", "imul", "div", "idiv"};
constexpr std::array<std::string_view, 8> kGroup5Names = {"inc", "dec", "call", "call",
                                                          "jmp", "jmp", "push", "unknown"};

bool IsLegacyPrefix(uint8_t b) {
  switch (b) {
    case 0x66:
    case 0x67:
    case 0xf0:
    case 0xf2:
    case 0xf3:
    case 0x2e:
    case 0x3e:
    case 0x26:
    case 0x36:
    case 0x64:
    case 0x65:
      return true;
    default:
      return false;
  }
}

// Bytes taken by a ModRM byte and its SIB/displacement, or nullopt if `rest` is too
// short to tell or to hold them.
std::optional<size_t> ModrmLength(std::span<const uint8_t> rest) {
  if (rest.empty()) return std::nullopt;
  const uint8_t modrm = rest[0];
  const uint8_t mod = modrm >> 6;
  const uint8_t rm = modrm & 7;
  size_t length = 1;
  if (mod != 3 && rm == 4) {
    if (rest.size() < 2) return std::nullopt;
    const uint8_t base = rest[1] & 7;
    length += 1;
    if (mod == 0 && base == 5) length += 4;
  }
  if (mod == 0 && rm == 5) length += 4;  // rip-relative
  if (mod == 1) length += 1;
  if (mod == 2) length += 4;
  if (length > rest.size()) return std::nullopt;
  return length;
}

InstructionInfo Unknown() { return {ProbeCost::kUnknown, "unknown", 0}; }

InstructionInfo Emulated(std::string mnemonic, size_t length) {
  return {ProbeCost::kEmulated, std::move(mnemonic), length};
}

InstructionInfo SingleStep(std::string_view name, size_t length) {
  if (name == "unknown") return {ProbeCost::kSingleStep, "unknown", length};
  std::string mnemonic(name);
  mnemonic += " (single-step)";
  return {ProbeCost::kSingleStep, std::move(mnemonic), length};
}

std::string NopName(size_t length) { return length == 1 ? std::string("nop") : "nop" + std::to_string(length); }

struct Decoded {
  size_t prefix_bytes = 0;  // legacy prefixes + REX
  bool operand16 = false;   // 0x66
  bool rep = false;         // 0xf3
  uint8_t rex = 0;
};

// Single-stepped instruction with a ModRM operand and `imm` immediate bytes.
InstructionInfo WithModrm(std::string_view name, std::span<const uint8_t> code, size_t modrm_at, size_t imm) {
  auto modrm = ModrmLength(code.subspan(modrm_at));
  if (!modrm) return Unknown();
  const size_t length = modrm_at + *modrm + imm;
  if (length > code.size()) return Unknown();
  return SingleStep(name, length);
}

InstructionInfo ClassifyTwoByte(std::span<const uint8_t> code, const Decoded& d, size_t at) {
  if (at + 1 >= code.size()) return Unknown();
  const uint8_t op2 = code[at + 1];
  const size_t modrm_at = at + 2;
  if (op2 == 0x1f) {
    // nopl/nopw r/m (0f 1f /0), with any prefixes ("66 2e 0f 1f 84 00 ..").
    auto modrm = ModrmLength(code.subspan(modrm_at));
    if (!modrm) return Unknown();
    if (((code[modrm_at] >> 3) & 7) != 0) return SingleStep("unknown", 0);
    return Emulated(NopName(modrm_at + *modrm), modrm_at + *modrm);
  }
  if (op2 >= 0x80 && op2 <= 0x8f) {
    const size_t length = at + 6;
    if (length > code.size()) return Unknown();
    std::string mnemonic(kConditions[op2 - 0x80]);
    // The kernel refuses to probe 16-bit branches (0x66 prefix).
    if (d.operand16) return {ProbeCost::kUnknown, mnemonic + " rel16 (not probeable)", length};
    return Emulated(mnemonic + " rel32", length);
  }
  if (op2 == 0x05) return SingleStep("syscall", at + 2);
  if (op2 == 0x0b) return SingleStep("ud2", at + 2);
  if (op2 == 0xa2) return SingleStep("cpuid", at + 2);
  if (op2 >= 0x40 && op2 <= 0x4f) return WithModrm("cmov", code, modrm_at, 0);
  if (op2 >= 0x90 && op2 <= 0x9f) return WithModrm("set", code, modrm_at, 0);
  if (op2 == 0xaf) return WithModrm("imul", code, modrm_at, 0);
  if (op2 == 0xb6 || op2 == 0xb7) return WithModrm("movzx", code, modrm_at, 0);
  if (op2 == 0xbe || op2 == 0xbf) return WithModrm("movsx", code, modrm_at, 0);
  if (op2 == 0x10 || op2 == 0x11 || op2 == 0x28 || op2 == 0x29 || op2 == 0x6f || op2 == 0x7f || op2 == 0xd6) {
    return WithModrm("mov", code, modrm_at, 0);  // SSE moves (movups, movaps, movdqa, movq)
  }
  if (op2 == 0xef || op2 == 0x57) return WithModrm("xor", code, modrm_at, 0);  // pxor, xorps
  return SingleStep("unknown", 0);
}

}  // namespace

std::string_view ProbeCostName(ProbeCost cost) {
  switch (cost) {
    case ProbeCost::kEmulated:
      return "emulated";
    case ProbeCost::kSingleStep:
      return "single-step";
    case ProbeCost::kUnknown:
      return "unknown";
  }
  return "unknown";
}

namespace {

InstructionInfo Classify(std::span<const uint8_t> code) {
  if (code.empty()) return Unknown();
  if (code.size() >= 4 && code[0] == 0xf3 && code[1] == 0x0f && code[2] == 0x1e && code[3] == 0xfa) {
    return {ProbeCost::kSingleStep, "endbr64", 4};
  }

  Decoded d;
  size_t at = 0;
  size_t legacy = 0;
  while (at < code.size() && IsLegacyPrefix(code[at]) && at < 14) {
    if (code[at] == 0x66) d.operand16 = true;
    if (code[at] == 0xf3) d.rep = true;
    ++at;
    ++legacy;
  }
  if (at < code.size() && (code[at] & 0xf0) == 0x40) {
    d.rex = code[at];
    ++at;
  }
  d.prefix_bytes = at;
  if (at >= code.size()) return Unknown();

  const uint8_t op = code[at];
  const bool rex_w = (d.rex & 0x08) != 0;
  const bool rex_b = (d.rex & 0x01) != 0;
  const size_t imm_z = d.operand16 ? 2 : 4;  // "Iz" immediates
  const size_t modrm_at = at + 1;

  auto sized = [&](size_t length) -> std::optional<size_t> {
    if (length > code.size()) return std::nullopt;
    return length;
  };

  if (op == 0x90) {
    if (rex_b) return SingleStep("xchg", at + 1);  // 41 90: xchg %eax,%r8d
    // "prefix* + nop": the kernel emulates it like a jmp +0 (f3 90 is pause).
    if (d.rep) return Emulated("pause", at + 1);
    return Emulated(NopName(at + 1), at + 1);
  }
  if (op == 0x0f) return ClassifyTwoByte(code, d, at);

  if (op >= 0x50 && op <= 0x57) {
    const size_t reg = op - 0x50;
    if (legacy == 0 && d.rex == 0) return Emulated("push " + std::string(kReg64[reg]), 1);
    if (legacy == 0 && d.rex == 0x41) return Emulated("push " + std::string(kRegExt[reg]), 2);
    return SingleStep("push", at + 1);
  }

  // Relative branches: emulated unless 16-bit (the kernel rejects a 0x66 prefix).
  auto branch = [&](std::string mnemonic, size_t imm) -> InstructionInfo {
    auto length = sized(at + 1 + imm);
    if (!length) return Unknown();
    if (d.operand16) return {ProbeCost::kUnknown, mnemonic + " (not probeable)", *length};
    return Emulated(std::move(mnemonic), *length);
  };
  if (op == 0xe8) return branch("call rel32", 4);
  if (op == 0xe9) return branch("jmp rel32", 4);
  if (op == 0xeb) return branch("jmp rel8", 1);
  if (op >= 0x70 && op <= 0x7f) return branch(std::string(kConditions[op - 0x70]) + " rel8", 1);

  // Everything else is single-stepped; name the common ones.
  if (op < 0x40 && (op & 7) <= 5) {
    const std::string_view name = kAluNames[op >> 3];
    switch (op & 7) {
      case 0:
      case 1:
      case 2:
      case 3:
        return WithModrm(name, code, modrm_at, 0);
      case 4:
        if (auto l = sized(at + 2)) return SingleStep(name, *l);
        return Unknown();
      case 5:
        if (auto l = sized(at + 1 + imm_z)) return SingleStep(name, *l);
        return Unknown();
    }
  }
  if (op >= 0x58 && op <= 0x5f) return SingleStep("pop", at + 1);
  if (op >= 0xb0 && op <= 0xb7) {
    if (auto l = sized(at + 2)) return SingleStep("mov", *l);
    return Unknown();
  }
  if (op >= 0xb8 && op <= 0xbf) {
    if (auto l = sized(at + 1 + (rex_w ? 8 : imm_z))) return SingleStep("mov", *l);
    return Unknown();
  }
  if (op >= 0x91 && op <= 0x97) return SingleStep("xchg", at + 1);

  const uint8_t reg_field = modrm_at < code.size() ? static_cast<uint8_t>((code[modrm_at] >> 3) & 7) : 0;
  switch (op) {
    case 0x63:
      return WithModrm("movslq", code, modrm_at, 0);
    case 0x68:
      if (auto l = sized(at + 1 + imm_z)) return SingleStep("push", *l);
      return Unknown();
    case 0x6a:
      if (auto l = sized(at + 2)) return SingleStep("push", *l);
      return Unknown();
    case 0x69:
      return WithModrm("imul", code, modrm_at, imm_z);
    case 0x6b:
      return WithModrm("imul", code, modrm_at, 1);
    case 0x80:
    case 0x82:
      return WithModrm(kAluNames[reg_field], code, modrm_at, 1);
    case 0x81:
      return WithModrm(kAluNames[reg_field], code, modrm_at, imm_z);
    case 0x83:
      return WithModrm(kAluNames[reg_field], code, modrm_at, 1);
    case 0x84:
    case 0x85:
      return WithModrm("test", code, modrm_at, 0);
    case 0x86:
    case 0x87:
      return WithModrm("xchg", code, modrm_at, 0);
    case 0x88:
    case 0x89:
    case 0x8a:
    case 0x8b:
    case 0x8c:
    case 0x8e:
      return WithModrm("mov", code, modrm_at, 0);
    case 0x8d:
      return WithModrm("lea", code, modrm_at, 0);
    case 0x8f:
      return WithModrm("pop", code, modrm_at, 0);
    case 0x98:
      return SingleStep(rex_w ? "cltq" : "cwtl", at + 1);
    case 0x99:
      return SingleStep(rex_w ? "cqto" : "cltd", at + 1);
    case 0xa8:
      if (auto l = sized(at + 2)) return SingleStep("test", *l);
      return Unknown();
    case 0xa9:
      if (auto l = sized(at + 1 + imm_z)) return SingleStep("test", *l);
      return Unknown();
    case 0xc0:
    case 0xc1:
      return WithModrm(kShiftNames[reg_field], code, modrm_at, 1);
    case 0xd0:
    case 0xd1:
    case 0xd2:
    case 0xd3:
      return WithModrm(kShiftNames[reg_field], code, modrm_at, 0);
    case 0xc2:
      if (auto l = sized(at + 3)) return SingleStep("ret", *l);
      return Unknown();
    case 0xc3:
      return SingleStep("ret", at + 1);
    case 0xc6:
      return WithModrm("mov", code, modrm_at, 1);
    case 0xc7:
      return WithModrm("mov", code, modrm_at, imm_z);
    case 0xc9:
      return SingleStep("leave", at + 1);
    case 0xcc:
      return SingleStep("int3", at + 1);
    case 0xf4:
      return SingleStep("hlt", at + 1);
    case 0xf6:
      return WithModrm(kGroup3Names[reg_field], code, modrm_at, reg_field < 2 ? 1 : 0);
    case 0xf7:
      return WithModrm(kGroup3Names[reg_field], code, modrm_at, reg_field < 2 ? imm_z : 0);
    case 0xfe:
      return WithModrm(reg_field == 0 ? "inc" : reg_field == 1 ? "dec" : "unknown", code, modrm_at, 0);
    case 0xff:
      return WithModrm(kGroup5Names[reg_field], code, modrm_at, 0);
    default:
      break;
  }
  return SingleStep("unknown", 0);
}

}  // namespace

InstructionInfo ClassifyProbeInstruction(std::span<const uint8_t> code) {
  // An instruction is at most 15 bytes (Intel SDM 2.3.11): longer prefix runs fault (#UD),
  // and the kernel's decoder refuses to place a uprobe on them.
  constexpr size_t kMaxInstructionLength = 15;
  InstructionInfo info = Classify(code);
  if (info.length > kMaxInstructionLength) return Unknown();
  return info;
}

}  // namespace looptrace::symbols
