// The coordinator's side of joining jobs (join_listener.hpp), over this host's loopback with a
// plain TcpStream as the joining job: the join file says where to connect and goes with the
// listener; a join request, the reports after the welcome, a leave and the end of the stream come
// out as events in order, and a welcomed job stays connected however long it is quiet; a refusal
// reaches the job and closes its connection; a stranger's bytes and a connection that asks nothing
// within 10 s are dropped without an event.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

#include "join_listener.hpp"
#include "phalanx/core/timer.hpp"

using namespace phalanx::sweep;
using phalanx::comm::TcpStream;

namespace {

std::string scratch() {
  const auto path =
      std::filesystem::temp_directory_path() / ("phalanx_join_listener_" + std::to_string(::getpid()));
  std::filesystem::remove_all(path);
  std::filesystem::create_directories(path);
  return path.string();
}

// Polls until at least `count` events came (or 5 s passed).
std::vector<JoinEvent> events_within(JoinListener& listener, std::size_t count, double now = 0) {
  std::vector<JoinEvent> events;
  const phalanx::Stopwatch clock;
  while (events.size() < count && clock.seconds() < 5) {
    for (auto& event : listener.poll(now)) events.push_back(std::move(event));
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return events;
}

JoinRequest request_with(const std::string& token) {
  return JoinRequest{token, "0.1.0", "abc", "{}", "n2", 1};
}

}  // namespace

TEST(JoinListener, AJoinedJobsRequestReportsLeaveAndEndComeOutInOrder) {
  const std::string directory = scratch();
  std::optional<JoinListener> listener(std::in_place, directory);
  const JoinAddress address = read_join_file(directory);
  EXPECT_EQ(address.port, listener->address().port);
  EXPECT_EQ(address.token.size(), 32u);
  ASSERT_FALSE(address.addresses.empty());

  TcpStream job = TcpStream::connect("127.0.0.1", address.port, 5.0);
  ASSERT_TRUE(job.send_frame(encode_join_request(request_with(address.token))));
  auto events = events_within(*listener, 1);
  ASSERT_EQ(events.size(), 1u);
  const JoinAsked asked = std::get<JoinAsked>(events[0]);
  EXPECT_EQ(asked.request.token, address.token);
  EXPECT_EQ(asked.request.groups, 1);
  const int joined_job = listener->welcome(asked.connection, 3);
  EXPECT_EQ(joined_job, 1);  // the first job to join
  std::string text;
  ASSERT_TRUE(job.receive_frame(text, 5.0));
  EXPECT_EQ(nlohmann::json::parse(text).at("first_worker"), 3);
  // Quiet for a minute while its groups train: a welcomed job is past the 10 s to ask, and keeps
  // its connection.
  EXPECT_TRUE(listener->poll(60).empty());

  ASSERT_TRUE(job.send_frame(R"({"type":"hello","worker":3})"));
  ASSERT_TRUE(job.send_frame(leave_message()));
  events = events_within(*listener, 2);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(std::get<JoinedReport>(events[0]).text, R"({"type":"hello","worker":3})");
  EXPECT_EQ(std::get<JoinedReport>(events[0]).connection, joined_job);
  EXPECT_EQ(std::get<JoinedLeaving>(events[1]).connection, joined_job);

  listener->send(joined_job, 3, R"({"type":"stop"})");
  ASSERT_TRUE(job.receive_frame(text, 5.0));
  const auto wrapped = nlohmann::json::parse(text);
  EXPECT_EQ(wrapped.at("worker"), 3);
  EXPECT_EQ(wrapped.at("message"), R"({"type":"stop"})");

  job.close();
  events = events_within(*listener, 1);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(std::get<JoinedGone>(events[0]).connection, joined_job);
  EXPECT_TRUE(listener->poll(0).empty());  // gone once

  listener.reset();
  EXPECT_FALSE(std::filesystem::exists(join_file(directory)));
  std::filesystem::remove_all(directory);
}

TEST(JoinListener, ARefusalReachesTheJobAndStrangersAreDroppedQuietly) {
  const std::string directory = scratch();
  JoinListener listener(directory);
  const int port = listener.address().port;

  TcpStream refused = TcpStream::connect("127.0.0.1", port, 5.0);
  ASSERT_TRUE(refused.send_frame(encode_join_request(request_with("wrong"))));
  auto events = events_within(listener, 1);
  ASSERT_EQ(events.size(), 1u);
  listener.refuse(std::get<JoinAsked>(events[0]).connection, "the token does not match");
  std::string text;
  ASSERT_TRUE(refused.receive_frame(text, 5.0));
  EXPECT_EQ(nlohmann::json::parse(text).at("message"), "the token does not match");
  EXPECT_FALSE(refused.receive_frame(text, 5.0));
  EXPECT_TRUE(refused.closed());

  // A frame that is no join request, and a connection that says nothing for 10 s: no event, and
  // each is closed.
  TcpStream stranger = TcpStream::connect("127.0.0.1", port, 5.0);
  ASSERT_TRUE(stranger.send_frame("GET / HTTP/1.0"));
  TcpStream silent = TcpStream::connect("127.0.0.1", port, 5.0);
  EXPECT_TRUE(events_within(listener, 1, 0).empty());
  EXPECT_TRUE(listener.poll(11).empty());  // 11 s after the connections were taken in at 0
  EXPECT_FALSE(stranger.receive_frame(text, 5.0));
  EXPECT_TRUE(stranger.closed());
  EXPECT_FALSE(silent.receive_frame(text, 5.0));
  EXPECT_TRUE(silent.closed());
  std::filesystem::remove_all(directory);
}

// A join request read late (the coordinator was busy past the 10 s a connection has to ask) is
// still answered: asking in time is what counts, not how soon the coordinator looks.
TEST(JoinListener, ARequestReadLateIsStillAnswered) {
  const std::string directory = scratch();
  JoinListener listener(directory);
  TcpStream job = TcpStream::connect("127.0.0.1", listener.address().port, 5.0);
  ASSERT_TRUE(job.send_frame(encode_join_request(request_with(listener.address().token))));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  // Taken in at 0 s with its request (poll reads what has arrived); the coordinator answers only
  // after another poll at 30 s, long past the 10 s to ask.
  std::vector<JoinEvent> events = listener.poll(0);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_TRUE(listener.poll(30).empty());
  const int joined_job = listener.welcome(std::get<JoinAsked>(events[0]).connection, 0);
  EXPECT_EQ(joined_job, 1);
  std::string text;
  ASSERT_TRUE(job.receive_frame(text, 5.0));
  EXPECT_EQ(nlohmann::json::parse(text).at("type"), "welcome");
  EXPECT_EQ(listener.welcome(12345, 0), -1);  // no such connection: nothing to answer
  std::filesystem::remove_all(directory);
}
