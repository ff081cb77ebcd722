// The coordinator's listener for joining jobs (see join_listener.hpp).
#include "join_listener.hpp"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "phalanx/core/error.hpp"
#include "phalanx/core/timer.hpp"

namespace phalanx::sweep {
namespace {

constexpr double seconds_to_ask = 10;

std::string random_token() {
  std::random_device device;
  char text[33];
  for (int index = 0; index < 4; ++index)
    std::snprintf(text + 8 * index, 9, "%08x", static_cast<unsigned>(device()));
  return text;
}

// This host's IPv4 addresses, the loopback last: a joining job on another node tries them when the
// host name does not resolve there, one on this node reaches the loopback.
std::vector<std::string> this_hosts_addresses() {
  std::vector<std::string> addresses, loopback;
  ifaddrs* interfaces = nullptr;
  if (::getifaddrs(&interfaces) != 0) return {"127.0.0.1"};
  for (const ifaddrs* entry = interfaces; entry; entry = entry->ifa_next) {
    if (!entry->ifa_addr || entry->ifa_addr->sa_family != AF_INET) continue;
    char text[INET_ADDRSTRLEN] = {};
    ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(entry->ifa_addr)->sin_addr, text,
                sizeof(text));
    ((entry->ifa_flags & IFF_LOOPBACK) ? loopback : addresses).emplace_back(text);
  }
  ::freeifaddrs(interfaces);
  addresses.insert(addresses.end(), loopback.begin(), loopback.end());
  return addresses;
}

std::string this_host() {
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0) return "localhost";
  return name;
}

}  // namespace

JoinListener::JoinListener(std::string sweep_directory) : sweep_directory_(std::move(sweep_directory)) {
  address_ = JoinAddress{this_host(), this_hosts_addresses(), listener_.port(), random_token()};
  write_join_file(sweep_directory_, address_);
}

JoinListener::~JoinListener() {
  std::error_code ignored;
  std::filesystem::remove(join_file(sweep_directory_), ignored);
}

JoinListener::Connection* JoinListener::find(int connection) {
  for (auto& held : connections_)
    if (held->id == connection) return held.get();
  return nullptr;
}

std::string JoinListener::peer(int connection) const {
  for (const auto& held : connections_)
    if (held->id == connection) return held->stream.peer();
  return "?";
}

std::vector<JoinEvent> JoinListener::poll(double now) {
  std::vector<JoinEvent> events;
  while (auto accepted = listener_.try_accept())
    connections_.push_back(
        std::make_unique<Connection>(Connection{next_asking_id_--, std::move(*accepted), now}));
  for (auto& held : connections_) {
    Connection& connection = *held;
    std::string text;
    while (!connection.reported_gone && connection.stream.try_receive_frame(text)) {
      if (!connection.welcomed) {
        // The first frame: a join request, or a stranger that gets no answer.
        try {
          events.emplace_back(JoinAsked{connection.id, decode_join_request(text)});
          connection.asked = true;
        } catch (const Error&) {
          connection.stream.close();
          break;
        }
        break;  // nothing more until the coordinator has answered
      }
      bool leaving = false;
      try {
        leaving = nlohmann::json::parse(text).value("type", "") == "leave";
      } catch (const nlohmann::json::exception&) {
      }
      if (leaving)
        events.emplace_back(JoinedLeaving{connection.id});
      else
        events.emplace_back(JoinedReport{connection.id, text});
    }
    // The time to ask binds a connection until its request is out; a welcomed job's connection
    // lasts as long as the sweep, however quiet it is between reports.
    if (!connection.welcomed && !connection.asked && !connection.stream.closed() &&
        now - connection.opened > seconds_to_ask)
      connection.stream.close();
    if (connection.stream.closed() && connection.welcomed && !connection.reported_gone) {
      connection.reported_gone = true;
      events.emplace_back(JoinedGone{connection.id});
    }
  }
  // Closed connections that have nothing more to say go.
  connections_.erase(std::remove_if(connections_.begin(), connections_.end(),
                                    [](const auto& held) {
                                      return held->stream.closed() && !held->asked &&
                                             (!held->welcomed || held->reported_gone);
                                    }),
                     connections_.end());
  return events;
}

void JoinListener::drain(double seconds) {
  const Stopwatch clock;
  for (;;) {
    bool open = false;
    for (auto& held : connections_) {
      if (!held->welcomed) {
        held->stream.close();  // still asking: the sweep has ended
        continue;
      }
      std::string text;
      while (held->stream.try_receive_frame(text)) {
      }
      open = open || !held->stream.closed();
    }
    if (!open || clock.seconds() > seconds) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

int JoinListener::welcome(int connection, int first_worker) {
  Connection* held = find(connection);
  if (!held || held->welcomed) return -1;
  held->asked = false;
  held->welcomed = true;
  held->id = next_joined_job_++;
  held->stream.send_frame(welcome_message(first_worker));
  return held->id;
}

void JoinListener::close(int connection) {
  if (Connection* held = find(connection)) held->stream.close();
}

void JoinListener::refuse(int connection, const std::string& reason) {
  if (Connection* held = find(connection)) {
    held->asked = false;
    held->stream.send_frame(refusal_message(reason));
    held->stream.close();
  }
}

void JoinListener::send(int connection, int worker, const std::string& text) {
  if (Connection* held = find(connection)) held->stream.send_frame(to_worker_frame(worker, text));
}

}  // namespace phalanx::sweep
