// GradSync: sums the flat gradient buffer over the ranks in fixed-size buckets, starting each
// bucket's non-blocking all-reduce as soon as backward has finished every gradient in it, so
// communication overlaps the rest of backward (PyTorch DDP's reducer idea, on flat memory).
#pragma once

#include <cstdint>
#include <vector>

#include "phalanx/comm/communicator.hpp"

namespace phalanx::comm {

class GradSync {
 public:
  // `gradients` is the flat buffer of `elements` floats; buckets are cut from its end (where
  // backward finishes first): the first of at most `first_bucket_bytes` (PyTorch DDP's 1 MiB),
  // so the last layers' all-reduce starts while the rest of backward runs even in small
  // models, then pieces of about `bucket_bytes`.
  GradSync(const Communicator& communicator, float* gradients, std::int64_t elements,
           std::size_t bucket_bytes, std::size_t first_bucket_bytes = std::size_t{1} << 20);

  // Start of a step: no bucket has been launched.
  void begin_step();
  // Backward reports that every gradient at offset >= first_final_offset is final.
  void gradients_ready(std::int64_t first_final_offset);
  // Launches what is left and waits for every bucket; returns the seconds spent waiting (the
  // exposed, un-overlapped share of communication).
  double wait();

  std::size_t bucket_count() const { return buckets_.size(); }
  // Seconds from the first bucket launch to the last bucket's completion in the last step.
  double last_communication_seconds() const { return last_communication_seconds_; }

 private:
  struct Bucket {
    std::int64_t begin, end;  // element range in the gradient buffer
    Request request;
    bool launched = false;
  };
  void launch(Bucket& bucket);
  void progress();

  const Communicator& communicator_;
  float* gradients_;
  std::vector<Bucket> buckets_;  // ordered from the end of the buffer towards its start
  std::size_t next_bucket_ = 0;
  double first_launch_time_ = 0;
  double last_communication_seconds_ = 0;
};

}  // namespace phalanx::comm
