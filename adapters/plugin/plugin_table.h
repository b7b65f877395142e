// The plugin's table (include/attncheck/adapter.h): loading the library, checking
// every field of its table before anything runs (ABI 1 and ABI 2), and the
// Capabilities the table declares.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "attncheck/adapter.h"
#include "cases/capabilities.h"

namespace attncheck::adapters {

// The loaded library, shared by every adapter instance made from it.
struct PluginLibrary {
  std::string path;
  void* handle = nullptr;
  const attncheck_adapter_v1* table = nullptr;
  ~PluginLibrary();
};

// Loads `path` and checks its table; throws InputError(path, field, reason).
std::shared_ptr<PluginLibrary> LoadPlugin(std::string_view path);

// ABI 2: the descriptor, refusal (ATTNCHECK_REFUSED) and shape constraints.
inline bool IsAbi2(const attncheck_adapter_v1& t) { return t.abi_version >= 2; }
// ABI 2.1: the backward call (has_backward, backward), read only where struct_size covers it.
inline bool IsAbi21(const attncheck_adapter_v1& t) { return IsAbi2(t) && t.struct_size >= ATTNCHECK_ADAPTER_V2_1_SIZE; }
// ABI 2.2: the saved forward inputs of the backward (backward_saved), read only where struct_size covers it.
inline bool IsAbi22(const attncheck_adapter_v1& t) { return IsAbi2(t) && t.struct_size >= ATTNCHECK_ADAPTER_V2_2_SIZE; }
// ABI 2.3: the kernel's tile sizes (tile_sizes), read only where struct_size covers them.
inline bool IsAbi23(const attncheck_adapter_v1& t) { return IsAbi2(t) && t.struct_size >= ATTNCHECK_ADAPTER_V2_3_SIZE; }
// ABI 2.4: further page sizes of the paged form (more_page_sizes), read only where struct_size covers them.
inline bool IsAbi24(const attncheck_adapter_v1& t) { return IsAbi2(t) && t.struct_size >= ATTNCHECK_ADAPTER_V2_4_SIZE; }
// ABI 2.5: the contract promises session_rope_as_call and backward_order_varies.
inline bool IsAbi25(const attncheck_adapter_v1& t) { return IsAbi2(t) && t.struct_size >= ATTNCHECK_ADAPTER_V2_5_SIZE; }
// A table built against the 2.2 (2.3, 2.4) header: its sizeof, tail padding included (the
// padding lies where 2.3's tile_sizes, 2.4's more_page_sizes, 2.5's promises begin).
inline constexpr size_t SizeofUpTo(size_t least) {
  return (least + alignof(attncheck_adapter_v1) - 1) / alignof(attncheck_adapter_v1) * alignof(attncheck_adapter_v1);
}
inline constexpr size_t kAdapterV22Sizeof = SizeofUpTo(ATTNCHECK_ADAPTER_V2_2_SIZE);
inline constexpr size_t kAdapterV23Sizeof = SizeofUpTo(ATTNCHECK_ADAPTER_V2_3_SIZE);
inline constexpr size_t kAdapterV24Sizeof = SizeofUpTo(ATTNCHECK_ADAPTER_V2_4_SIZE);

// The table's contract, or nullptr for an ABI 1.0 table (its struct_size ends before it).
const attncheck_contract* ContractOf(const attncheck_adapter_v1& t);

// What the table declares, as Capabilities (ABI 2: descriptor forms, head dims).
Capabilities PluginCapabilities(const attncheck_adapter_v1& t);

// A plugin's text on one line, at most 400 characters.
std::string OneLine(const char* text);

}  // namespace attncheck::adapters
