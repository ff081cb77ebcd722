// A global allocator that counts the bytes live on the heap and their peak, for the binaries that
// measure what a data structure holds (bench/shard_plan.cpp, tests/plan_memory). It replaces the
// global operator new and delete: include it in exactly one file of a binary.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>

namespace counted_heap {
// Each block carries its size in front, so delete knows what it frees.
constexpr std::size_t header = alignof(std::max_align_t);
inline std::atomic<std::int64_t> live_bytes{0}, peak_bytes{0};

inline void* allocate(std::size_t size) {
  void* block = std::malloc(size + header);
  if (block == nullptr) throw std::bad_alloc();
  *static_cast<std::size_t*>(block) = size;
  const std::int64_t now = live_bytes += static_cast<std::int64_t>(size);
  std::int64_t peak = peak_bytes.load();
  while (now > peak && !peak_bytes.compare_exchange_weak(peak, now)) {
  }
  return static_cast<char*>(block) + header;
}

inline void free(void* pointer) {
  if (pointer == nullptr) return;
  void* block = static_cast<char*>(pointer) - header;
  live_bytes -= static_cast<std::int64_t>(*static_cast<std::size_t*>(block));
  std::free(block);
}
}  // namespace counted_heap

void* operator new(std::size_t size) {
  return counted_heap::allocate(size);
}
void* operator new[](std::size_t size) {
  return counted_heap::allocate(size);
}
void operator delete(void* pointer) noexcept {
  counted_heap::free(pointer);
}
void operator delete[](void* pointer) noexcept {
  counted_heap::free(pointer);
}
void operator delete(void* pointer, std::size_t) noexcept {
  counted_heap::free(pointer);
}
void operator delete[](void* pointer, std::size_t) noexcept {
  counted_heap::free(pointer);
}
