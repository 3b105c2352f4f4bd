// What the wasm heap holds, for the handles' "does this fit?" checks and the leak tests.
#pragma once

#include <malloc.h>
#include <unistd.h>

#include <cstdint>
#include <vector>

#include "mha/plan/memory_budget.hpp"

namespace mha_embind {

// Bytes the allocator has handed out: mallinfo's int field, read back as the unsigned 32-bit
// count it holds (above 2 GiB in use the int is negative).
inline uint64_t heap_in_use() { return static_cast<uint32_t>(mallinfo().uordblks); }

// The same where only "do `need` more bytes fit?" is asked: mallinfo walks every chunk of the
// heap (2% of a small layer's decode step), while the heap's top (sbrk(0)) bounds the bytes in
// use from above for free. The walk runs only when that bound leaves too little room, so a
// refusal's message still gives the exact count.
inline uint64_t heap_in_use_unless_fits(const std::vector<mha::MemoryItem>& items) {
  const uint64_t top = static_cast<uint32_t>(reinterpret_cast<uintptr_t>(sbrk(0)));
  return mha::total_bytes(items) + top <= mha::addressable_bytes() ? top : heap_in_use();
}

}  // namespace mha_embind
