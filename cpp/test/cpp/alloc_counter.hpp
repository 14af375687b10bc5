// Counts every heap allocation (operator new) of the program that includes it (one translation
// unit per program), so a test can assert "no allocation in the hot path": read g_allocs before
// and after. A thread counts while t_alloc_armed; every thread is armed from its start unless the
// program defines ALLOC_COUNTER_ARMED false before the include and arms only the measured calls
// (src/hri_controllers/test/rt_check.cpp, where rclcpp's threads allocate alongside).
#pragma once
#include <atomic>
#include <cstdlib>
#include <new>

#ifndef ALLOC_COUNTER_ARMED
#define ALLOC_COUNTER_ARMED true
#endif
static thread_local bool t_alloc_armed = ALLOC_COUNTER_ARMED;
static std::atomic<long> g_allocs{0};
void* operator new(std::size_t n) {
  if (t_alloc_armed) ++g_allocs;
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) {
  if (t_alloc_armed) ++g_allocs;
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
