#include "loader/runtimes/jvm/compiled_scopes.h"

#include <algorithm>
#include <cstdint>

#include "loader/runtimes/jvm/compressed_ints.h"

namespace looptrace::loader::jvm {
namespace {

// HotSpot's own limits are far lower (MaxInlineLevel 15); these only bound a bad read.
constexpr int kMaxScopes = 64;
constexpr size_t kMaxDescs = 1 << 16;
constexpr size_t kMaxScopesData = 4 << 20;
constexpr size_t kMaxMetadata = 1 << 16;
constexpr size_t kMaxCache = 1 << 12;
constexpr int kInvocationEntryBci = -1;  // read_bci's bias

}  // namespace

std::optional<int32_t> ScopeAt(std::span<const PcDescEntry> descs, int32_t pc_offset) {
  // In pc order; the first is a sentinel at -1.
  auto it = std::lower_bound(descs.begin(), descs.end(), pc_offset,
                             [](const PcDescEntry& d, int32_t pc) { return d.pc_offset < pc; });
  if (it == descs.end()) return std::nullopt;
  return it->scope_decode_offset;
}

std::optional<std::vector<Scope>> DecodeScopes(std::span<const uint8_t> scopes_data, int32_t decode_offset,
                                               std::span<const uint64_t> metadata, uint64_t nmethod_method,
                                               bool exclude_zero) {
  std::vector<Scope> chain;
  while (decode_offset != 0) {  // 0: DebugInformationRecorder::serialized_null, the top
    if (decode_offset < 0 || static_cast<size_t>(decode_offset) >= scopes_data.size() ||
        chain.size() >= static_cast<size_t>(kMaxScopes))
      return std::nullopt;
    CompressedReader in(scopes_data, exclude_zero, static_cast<size_t>(decode_offset));
    const int32_t sender = in.Int();
    const int32_t index = in.Int();
    const int32_t bci = in.Int() + kInvocationEntryBci;
    if (!in.ok() || index <= 0 || static_cast<size_t>(index) > metadata.size()) return std::nullopt;
    chain.push_back({metadata[static_cast<size_t>(index) - 1], bci});
    decode_offset = sender;
  }
  if (chain.empty()) return std::vector<Scope>{{nmethod_method, -1}};
  if (chain.back().method != nmethod_method) return std::nullopt;
  return chain;
}

std::optional<uint64_t> CompiledScopes::Pointer(uint64_t address) {
  uint64_t value = 0;
  if (!address || !memory_.Read(address, &value, sizeof(value))) return std::nullopt;
  return value;
}

std::optional<int32_t> CompiledScopes::Int(uint64_t address) {
  int32_t value = 0;
  if (!address || !memory_.Read(address, &value, sizeof(value))) return std::nullopt;
  return value;
}

// The nmethod's header, then its PcDescs, debug info stream and metadata (nmethod.hpp:
// offsets from the nmethod's start; the stream begins at _scopes_data_begin and ends where
// the PcDescs begin, the metadata ends where the stream begins).
std::optional<CompiledScopes::DebugInfo> CompiledScopes::Read(uint64_t nmethod, uint32_t compile_id) {
  const HotSpotLayout& l = layout_;
  auto id = Int(nmethod + l.nmethod_compile_id);
  if (!id || static_cast<uint32_t>(*id) != compile_id) return std::nullopt;
  auto method = Pointer(nmethod + l.nmethod_method);
  auto code_begin = Pointer(nmethod + l.blob_code_begin);
  if (!method || !*method || !code_begin) return std::nullopt;
  DebugInfo info;
  info.compile_id = compile_id;
  info.method = *method;
  info.code_begin = *code_begin;
  auto metadata_offset = Int(nmethod + l.nmethod_metadata_offset);
  auto pcs_offset = Int(nmethod + l.nmethod_scopes_pcs_offset);
  auto pcs_end = Int(nmethod + l.nmethod_dependencies_offset);
  auto scopes_begin = Pointer(nmethod + l.nmethod_scopes_data_begin);
  if (!metadata_offset || !pcs_offset || !pcs_end || !scopes_begin || l.pc_desc_size < 8) return info;
  const uint64_t metadata_begin = nmethod + static_cast<uint64_t>(*metadata_offset);
  const uint64_t scopes_end = nmethod + static_cast<uint64_t>(*pcs_offset);
  const uint64_t descs_end = nmethod + static_cast<uint64_t>(*pcs_end);
  if (*metadata_offset <= 0 || *scopes_begin < metadata_begin || scopes_end < *scopes_begin || descs_end < scopes_end)
    return info;
  const size_t nr_metadata = (*scopes_begin - metadata_begin) / 8;
  const size_t nr_descs = (descs_end - scopes_end) / l.pc_desc_size;
  const size_t scopes_size = scopes_end - *scopes_begin;
  if (nr_metadata > kMaxMetadata || nr_descs > kMaxDescs || scopes_size > kMaxScopesData) return info;
  info.metadata.resize(nr_metadata);
  info.scopes_data.resize(scopes_size);
  std::vector<uint8_t> raw(nr_descs * l.pc_desc_size);
  if ((nr_metadata && !memory_.Read(metadata_begin, info.metadata.data(), nr_metadata * 8)) ||
      (scopes_size && !memory_.Read(*scopes_begin, info.scopes_data.data(), scopes_size)) ||
      (!raw.empty() && !memory_.Read(scopes_end, raw.data(), raw.size())))
    return info;
  info.descs.reserve(nr_descs);
  for (size_t i = 0; i < nr_descs; ++i) {
    PcDescEntry d;
    const uint8_t* at = raw.data() + i * l.pc_desc_size;
    if (l.pc_desc_pc_offset + 4 > l.pc_desc_size || l.pc_desc_scope_decode_offset + 4 > l.pc_desc_size) return info;
    std::copy_n(at + l.pc_desc_pc_offset, 4, reinterpret_cast<uint8_t*>(&d.pc_offset));
    std::copy_n(at + l.pc_desc_scope_decode_offset, 4, reinterpret_cast<uint8_t*>(&d.scope_decode_offset));
    info.descs.push_back(d);
  }
  // The debug info was written as the code was: HotSpot keeps it in pc order.
  if (!std::is_sorted(info.descs.begin(), info.descs.end(),
                      [](const PcDescEntry& a, const PcDescEntry& b) { return a.pc_offset < b.pc_offset; }))
    return info;
  info.readable = true;
  return info;
}

std::optional<std::vector<Scope>> CompiledScopes::At(uint64_t nmethod, uint32_t compile_id, uint64_t pc) {
  auto it = cache_.find(nmethod);
  if (it == cache_.end() || it->second.compile_id != compile_id) {
    auto info = Read(nmethod, compile_id);
    if (!info) return std::nullopt;
    if (cache_.size() >= kMaxCache) cache_.clear();
    it = cache_.insert_or_assign(nmethod, std::move(*info)).first;
  }
  const DebugInfo& info = it->second;
  const std::vector<Scope> own{{info.method, -1}};
  if (!info.readable || pc < info.code_begin || pc - info.code_begin > INT32_MAX) return own;
  auto decode_offset = ScopeAt(info.descs, static_cast<int32_t>(pc - info.code_begin));
  if (!decode_offset) return own;
  auto chain = DecodeScopes(info.scopes_data, *decode_offset, info.metadata, info.method, layout_.ints_exclude_zero);
  if (!chain) return own;
  return chain;
}

}  // namespace looptrace::loader::jvm
