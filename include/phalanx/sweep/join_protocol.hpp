// Jobs that join a running sweep (`phalanx sweep SWEEP.yaml --join SWEEP_DIR`, docs/SWEEPS.md):
// what the two sides say before a joined job's groups take work. The running sweep's coordinator
// listens on TCP and writes where, with a token, to SWEEP_DIR/join.json; a joining job reads it
// from the shared filesystem, connects and asks to join with its phalanx build and its resolved
// sweep definition; the coordinator welcomes it (its groups' worker numbers) or refuses it with a
// message that names the difference. After the welcome, frames carry the sweep protocol's messages
// (protocol.hpp): a group leader's text as it is, the coordinator's wrapped with the worker it is
// for, so one connection serves all of a job's groups.
#pragma once

#include <string>
#include <vector>

#include "phalanx/core/build_stamp.hpp"

namespace phalanx::sweep {

// Where a running sweep's coordinator listens (SWEEP_DIR/join.json).
struct JoinAddress {
  std::string host;
  std::vector<std::string> addresses;  // the host's IP addresses, tried after its name, in order
  int port = 0;
  std::string token;  // presented by joining jobs: only those that can read the sweep directory join
};

std::string join_file(const std::string& sweep_directory);
void write_join_file(const std::string& sweep_directory, const JoinAddress& address);
// Throws an input error naming the file when it is missing (no sweep running there) or malformed.
JoinAddress read_join_file(const std::string& sweep_directory);

// What a joining job asks with.
struct JoinRequest {
  std::string token;
  std::string version, commit;  // its phalanx build
  std::string definition;       // sweep_definition() of its sweep file with its overrides
  std::string host;             // its rank 0's host, for the log
  int groups = 0;               // worker groups it brings
};

std::string encode_join_request(const JoinRequest& request);
// Throws an Error when `text` is not a join request (a stranger on the port).
JoinRequest decode_join_request(const std::string& text);

// Why the coordinator refuses `request` ("" when it joins): a wrong token, another phalanx version
// or commit, another sweep definition (the first line that differs), no worker group.
std::string join_refusal(const JoinRequest& request, const std::string& token, const std::string& definition,
                         const BuildStamp& build);

// The coordinator's answers, and its messages to a joined group.
std::string welcome_message(int first_worker);
std::string refusal_message(const std::string& reason);
std::string to_worker_frame(int worker, const std::string& text);
// A joined job tells the coordinator it is leaving (a stop signal reached it).
std::string leave_message();

}  // namespace phalanx::sweep
