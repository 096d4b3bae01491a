// Names -finstrument-functions addresses of a live target from its ELF symbols.
#pragma once

#include "loader/decode/beat_slicer.h"
#include "looptrace/symbols/process_symbolizer.h"

namespace looptrace::loader {

class SymbolizingAddressNamer : public AddressNamer {
 public:
  explicit SymbolizingAddressNamer(int pid) : symbolizer_(pid) {}
  symbols::ProcessSymbolizer* symbolizer() { return &symbolizer_; }
  // Reads the target's mappings now, while it surely lives with its own image.
  void Prime() { symbolizer_.ReadMaps(); }
  std::optional<std::string> Name(uint32_t pid, uint64_t address) override;

 private:
  symbols::ProcessSymbolizer symbolizer_;
};

}  // namespace looptrace::loader
