// The joining job's relay (see join_relay.hpp).
#include "join_relay.hpp"

#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "messages.hpp"
#include "phalanx/core/error.hpp"
#include "phalanx/sweep/join_protocol.hpp"
#include "phalanx/sweep/protocol.hpp"
#include "phalanx/train/stop_request.hpp"

namespace phalanx::sweep {
namespace {

// What the relay knows of each of its groups: the job it was sent and has not reported yet.
struct GroupTrack {
  std::int64_t job = -1;  // -1: idle
  bool stopped = false;
  bool asked_to_stop = false;  // after the coordinator was lost
};

}  // namespace

RelayEnd run_join_relay(const RelayOptions& options) {
  comm::TcpStream& link = *options.link;
  const comm::Communicator& channel = *options.channel;
  const auto group_count = static_cast<int>(options.leaders.size());
  std::vector<GroupTrack> groups(options.leaders.size());
  int stopped = 0;
  bool left = false, lost = false;
  const auto stop_group = [&](int group) {
    channel.send_string(stop_message(), options.leaders[static_cast<std::size_t>(group)], tag_to_worker);
    groups[static_cast<std::size_t>(group)].stopped = true;
    ++stopped;
  };
  while (stopped < group_count) {
    bool busy_poll = false;
    if (!left && !lost && train::StopRequest::signal_received()) {
      link.send_frame(leave_message());
      left = true;
    }
    // Leaders -> coordinator: reports end a job.
    comm::Message message;
    while (channel.try_receive_string(tag_to_coordinator, message)) {
      busy_poll = true;
      const auto report = nlohmann::json::parse(message.text);
      const int group = report.at("worker").get<int>() - options.first_worker;
      PHALANX_CHECK(group >= 0 && group < group_count, "a report from worker ", report.at("worker").get<int>(),
                    ", not one of this job's");
      GroupTrack& track = groups[static_cast<std::size_t>(group)];
      if (report.at("type") != "hello") track.job = -1;
      if (lost) {
        if (!track.stopped) stop_group(group);
      } else {
        link.send_frame(message.text);
      }
    }
    // Coordinator -> leaders.
    std::string frame;
    while (!lost && link.try_receive_frame(frame)) {
      busy_poll = true;
      const auto wrapped = nlohmann::json::parse(frame);
      const int group = wrapped.at("worker").get<int>() - options.first_worker;
      PHALANX_CHECK(group >= 0 && group < group_count, "the coordinator sent to worker ",
                    wrapped.at("worker").get<int>(), ", not one of this job's");
      const std::string text = wrapped.at("message").get<std::string>();
      const auto inner = nlohmann::json::parse(text);
      GroupTrack& track = groups[static_cast<std::size_t>(group)];
      if (inner.at("type") == "stop") {
        if (!track.stopped) stop_group(group);
        continue;
      }
      if (inner.at("type") == "job") track.job = inner.at("job").get<std::int64_t>();
      channel.send_string(text, options.leaders[static_cast<std::size_t>(group)], tag_to_worker);
    }
    if (!lost && link.closed()) {
      // The coordinator is gone: idle groups stop now, busy ones after their next step with a
      // checkpoint (their reports then stop them above).
      lost = true;
      for (int group = 0; group < group_count; ++group) {
        GroupTrack& track = groups[static_cast<std::size_t>(group)];
        if (track.stopped) continue;
        if (track.job < 0) {
          stop_group(group);
        } else if (!track.asked_to_stop) {
          channel.send_string(handover_message(track.job), options.leaders[static_cast<std::size_t>(group)],
                              tag_to_worker);
          track.asked_to_stop = true;
        }
      }
    }
    if (!busy_poll) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  // A job that was leaving already stopped its trials with a checkpoint either way.
  if (left) return RelayEnd::Left;
  return lost ? RelayEnd::CoordinatorLost : RelayEnd::SweepEnded;
}

}  // namespace phalanx::sweep
