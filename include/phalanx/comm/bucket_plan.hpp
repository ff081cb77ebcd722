// BucketPlan: how a flat gradient buffer is cut into all-reduce buckets, and the order in which
// they start, for GradSync (MPI) and NcclGradSync alike. Every rank must start its collectives in
// the same order, so the cut and the order are stated once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace phalanx::comm {

class BucketPlan {
 public:
  struct Bucket {
    std::int64_t begin, end;  // element range in the gradient buffer
    std::int64_t elements() const { return end - begin; }
  };
  // Bucket indices [first, last), in the order their collectives start; a range-for walks them.
  // (std::views::iota would do, but clang 14 cannot compile libstdc++ 12's <ranges>.)
  struct Indices {
    struct Iterator {
      std::size_t index;
      std::size_t operator*() const { return index; }
      Iterator& operator++() {
        ++index;
        return *this;
      }
      bool operator==(const Iterator&) const = default;
    };
    std::size_t first, last;
    Iterator begin() const { return {first}; }
    Iterator end() const { return {last}; }
  };

  // Buckets of a buffer of `elements` floats, cut from its end (where backward finishes first):
  // the first of at most `first_bucket_bytes`, so the last layers' all-reduce starts while the rest
  // of backward runs even in small models, then `bucket_bytes` each, the one at offset 0 taking
  // what is left. A bucket holds at least one float whatever the bytes.
  BucketPlan(std::int64_t elements, std::size_t bucket_bytes, std::size_t first_bucket_bytes);

  std::size_t size() const { return buckets_.size(); }
  const Bucket& operator[](std::size_t index) const { return buckets_[index]; }

  // Start of a step: no bucket has started.
  void begin_step() { next_ = 0; }
  // Backward reports that every gradient at offset >= first_final_offset is final: the buckets
  // that thereby became whole, to start now; they count as started from here on. A bucket is
  // offered once a step, and never before the buckets that precede it.
  Indices take_ready(std::int64_t first_final_offset);
  // The buckets not started yet (end of backward); all count as started from here on.
  Indices take_rest();
  // The buckets started in this step so far.
  Indices started() const { return {0, next_}; }

 private:
  std::vector<Bucket> buckets_;  // ordered from the end of the buffer towards its start
  std::size_t next_ = 0;         // the first bucket not started in this step
};

}  // namespace phalanx::comm
