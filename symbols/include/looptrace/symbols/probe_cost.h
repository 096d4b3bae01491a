// What a uprobe at a given instruction costs on x86-64.
//
// The kernel (arch/x86/kernel/uprobes.c) emulates a few instructions when the probe
// fires: nops, push of a general register, call rel32, jmp and jcc. Everything else is
// single-stepped out of line, which costs about 15x more per hit (~15 us against
// ~1 us measured on our VMs). The first instruction at the probe address decides the price.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace looptrace::symbols {

enum class ProbeCost {
  kEmulated,    // handled in the kernel without leaving the trap
  kSingleStep,  // copied to the XOL area and single-stepped
  kUnknown,     // no bytes, or the instruction is truncated
};

struct InstructionInfo {
  ProbeCost cost = ProbeCost::kUnknown;
  // "nop", "nop5", "push %rbp", "push %r12", "call rel32", "jmp rel8", "je rel32",
  // "endbr64", "mov (single-step)", "unknown".
  std::string mnemonic;
  size_t length = 0;  // bytes of the instruction; 0 when not decoded
};

// Classifies the first instruction of `code` (64-bit mode).
InstructionInfo ClassifyProbeInstruction(std::span<const uint8_t> code);

// "emulated", "single-step", "unknown".
std::string_view ProbeCostName(ProbeCost cost);

}  // namespace looptrace::symbols
