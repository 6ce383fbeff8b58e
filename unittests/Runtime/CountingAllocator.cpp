//===- CountingAllocator.cpp - A global operator new that counts ----------===//
//
// In its own file so that no call site sees the replaced operators inline
// (GCC would then pair them with the library's sized delete).
//
//===----------------------------------------------------------------------===//

#include "heterps/Runtime/Kernel.h"

#include <atomic>
#include <cstdlib>
#include <new>

static std::atomic<long> allocations{0};

long heapAllocations() { return allocations.load(); }

void *operator new(std::size_t n) {
  if (heterps::runtime::ForeignCallScope::depth() == 0)
    ++allocations;
  if (void *p = std::malloc(n ? n : 1))
    return p;
  throw std::bad_alloc();
}

void operator delete(void *p) noexcept { std::free(p); }
void operator delete(void *p, std::size_t) noexcept { std::free(p); }
