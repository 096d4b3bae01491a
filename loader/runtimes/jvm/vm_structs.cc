#include "loader/runtimes/jvm/vm_structs.h"

#include <fmt/format.h>

#include <vector>

namespace looptrace::loader::jvm {
namespace {

constexpr int kMaxEntries = 20000;  // JDK 17 has about 2,500 fields and 1,000 types

template <typename Map, typename Value = typename Map::mapped_type>
std::optional<Value> Find(const Map& map, std::string_view key) {
  auto it = map.find(key);
  if (it == map.end()) return std::nullopt;
  return it->second;
}

class TableReader {
 public:
  TableReader(const symbols::ElfFile& elf, uint64_t bias, Memory& memory) : elf_(elf), bias_(bias), memory_(memory) {}

  // An exported 8-byte variable of libjvm.so, from the process.
  Result<uint64_t> Variable(std::string_view name) {
    auto at = elf_.FindObject(name);
    if (!at) return MakeError(fmt::format("{}: no {} symbol", elf_.path(), name));
    uint64_t value = 0;
    if (!memory_.Read(*at + bias_, &value, sizeof(value)))
      return MakeError(fmt::format("{}: cannot read {}", elf_.path(), name));
    return value;
  }

  std::string String(uint64_t address) {
    std::string out;
    char chunk[64];
    while (address && out.size() < 512) {
      if (!memory_.Read(address, chunk, sizeof(chunk))) {
        // The string may end within the last page: byte by byte.
        char c = 0;
        while (memory_.Read(address++, &c, 1) && c && out.size() < 512) out.push_back(c);
        return out;
      }
      for (char c : chunk) {
        if (!c) return out;
        out.push_back(c);
      }
      address += sizeof(chunk);
    }
    return out;
  }

  // The array's entries as raw bytes, ended by one whose first string field is null.
  Result<std::vector<std::vector<uint8_t>>> Entries(std::string_view array, std::string_view stride_name,
                                                    uint64_t first_string_offset) {
    ASSIGN_OR_RETURN(uint64_t base, Variable(array));
    ASSIGN_OR_RETURN(uint64_t stride, Variable(stride_name));
    if (!base) return MakeError(fmt::format("{} is not set yet", array));
    if (stride == 0 || stride > 256) return MakeError(fmt::format("{}: stride {}", array, stride));
    std::vector<std::vector<uint8_t>> entries;
    for (int i = 0; i < kMaxEntries; ++i) {
      std::vector<uint8_t> entry(stride);
      if (!memory_.Read(base + i * stride, entry.data(), stride))
        return MakeError(fmt::format("cannot read {}[{}]", array, i));
      if (Word(entry, first_string_offset) == 0) return entries;
      entries.push_back(std::move(entry));
    }
    return MakeError(fmt::format("{} has no end", array));
  }

  static uint64_t Word(const std::vector<uint8_t>& entry, uint64_t offset) {
    uint64_t value = 0;
    if (offset + 8 <= entry.size()) std::memcpy(&value, entry.data() + offset, 8);
    return value;
  }
  static uint32_t Int(const std::vector<uint8_t>& entry, uint64_t offset) {
    uint32_t value = 0;
    if (offset + 4 <= entry.size()) std::memcpy(&value, entry.data() + offset, 4);
    return value;
  }

 private:
  const symbols::ElfFile& elf_;
  uint64_t bias_;
  Memory& memory_;
};

}  // namespace

std::optional<uint64_t> VmStructs::Offset(std::string_view field) const { return Find(offsets, field); }
std::optional<uint64_t> VmStructs::Address(std::string_view field) const { return Find(addresses, field); }
std::optional<uint64_t> VmStructs::Size(std::string_view type) const { return Find(sizes, type); }
std::optional<int64_t> VmStructs::Constant(std::string_view name) const { return Find(constants, name); }

Result<VmStructs> ReadVmStructs(const symbols::ElfFile& elf, uint64_t bias, Memory& memory) {
  TableReader reader(elf, bias, memory);
  VmStructs out;

  ASSIGN_OR_RETURN(uint64_t type_name, reader.Variable("gHotSpotVMStructEntryTypeNameOffset"));
  ASSIGN_OR_RETURN(uint64_t field_name, reader.Variable("gHotSpotVMStructEntryFieldNameOffset"));
  ASSIGN_OR_RETURN(uint64_t is_static, reader.Variable("gHotSpotVMStructEntryIsStaticOffset"));
  ASSIGN_OR_RETURN(uint64_t offset, reader.Variable("gHotSpotVMStructEntryOffsetOffset"));
  ASSIGN_OR_RETURN(uint64_t address, reader.Variable("gHotSpotVMStructEntryAddressOffset"));
  ASSIGN_OR_RETURN(auto fields, reader.Entries("gHotSpotVMStructs", "gHotSpotVMStructEntryArrayStride", type_name));
  for (const auto& e : fields) {
    const std::string name =
        reader.String(TableReader::Word(e, type_name)) + "::" + reader.String(TableReader::Word(e, field_name));
    if (TableReader::Int(e, is_static) & 0xff)
      out.addresses[name] = TableReader::Word(e, address);
    else
      out.offsets[name] = TableReader::Word(e, offset);
  }

  ASSIGN_OR_RETURN(uint64_t t_name, reader.Variable("gHotSpotVMTypeEntryTypeNameOffset"));
  ASSIGN_OR_RETURN(uint64_t t_size, reader.Variable("gHotSpotVMTypeEntrySizeOffset"));
  ASSIGN_OR_RETURN(auto types, reader.Entries("gHotSpotVMTypes", "gHotSpotVMTypeEntryArrayStride", t_name));
  for (const auto& e : types) out.sizes[reader.String(TableReader::Word(e, t_name))] = TableReader::Word(e, t_size);

  for (const char* kind : {"Int", "Long"}) {
    ASSIGN_OR_RETURN(uint64_t c_name, reader.Variable(fmt::format("gHotSpotVM{}ConstantEntryNameOffset", kind)));
    ASSIGN_OR_RETURN(uint64_t c_value, reader.Variable(fmt::format("gHotSpotVM{}ConstantEntryValueOffset", kind)));
    ASSIGN_OR_RETURN(auto constants, reader.Entries(fmt::format("gHotSpotVM{}Constants", kind),
                                                    fmt::format("gHotSpotVM{}ConstantEntryArrayStride", kind), c_name));
    for (const auto& e : constants) {
      const std::string name = reader.String(TableReader::Word(e, c_name));
      out.constants[name] = kind[0] == 'I' ? static_cast<int32_t>(TableReader::Int(e, c_value))
                                           : static_cast<int64_t>(TableReader::Word(e, c_value));
    }
  }
  return out;
}

}  // namespace looptrace::loader::jvm
