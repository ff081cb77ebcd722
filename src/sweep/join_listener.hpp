// The coordinator's side of jobs that join its sweep (join_protocol.hpp): a TCP listener whose
// address and token it writes to SWEEP_DIR/join.json (removed again when the sweep ends), and the
// joined jobs' connections. The coordinator polls it in the loop that polls its MPI channel; what
// arrived comes out as events, in order per connection. A connection's first frame must be a join
// request within 10 s, or it is closed unanswered.
#pragma once

#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "phalanx/comm/tcp_stream.hpp"
#include "phalanx/sweep/join_protocol.hpp"

namespace phalanx::sweep {

// A job asks to join (welcome() or refuse() it). `connection` is a number for the asking
// connection alone; a welcomed one goes by its joined job's number.
struct JoinAsked {
  int connection = 0;
  JoinRequest request;
};
// A joined group leader's message, as it sent it.
struct JoinedReport {
  int connection = 0;
  std::string text;
};
// The joined job is leaving (a stop signal reached it).
struct JoinedLeaving {
  int connection = 0;
};
// The joined job's connection closed: the job ended, was killed, or its host is gone.
struct JoinedGone {
  int connection = 0;
};
using JoinEvent = std::variant<JoinAsked, JoinedReport, JoinedLeaving, JoinedGone>;

class JoinListener {
 public:
  // Listens on a free port and writes the join file (host: this host's name).
  explicit JoinListener(std::string sweep_directory);
  // Removes the join file and closes every connection.
  ~JoinListener();
  JoinListener(const JoinListener&) = delete;
  JoinListener& operator=(const JoinListener&) = delete;

  const JoinAddress& address() const { return address_; }
  std::vector<JoinEvent> poll(double now);
  // Returns the joined job's number (1, 2, ... in the order jobs joined), which its connection goes
  // by from now on (events and send()); -1 when the connection is gone.
  int welcome(int connection, int first_worker);
  // Cuts a joined job off: its relay sees the end of the stream and stops its groups; the next
  // poll reports it gone.
  void close(int connection);
  void refuse(int connection, const std::string& reason);  // and closes it
  // A failed send closes the connection; the next poll reports it gone.
  void send(int connection, int worker, const std::string& text);
  // At the sweep's end, after the stops: reads (and drops) what still comes until every joined job
  // has closed its end, or `seconds` passed, so no stop is lost to a reset connection.
  void drain(double seconds);
  // The peer of a connection, "host:port", for the log.
  std::string peer(int connection) const;

 private:
  struct Connection {
    int id = 0;
    comm::TcpStream stream;
    double opened = 0;
    bool asked = false;  // its join request is out as an event, to be answered
    bool welcomed = false;
    bool reported_gone = false;
  };
  Connection* find(int connection);

  std::string sweep_directory_;
  comm::TcpListener listener_;
  JoinAddress address_;
  std::vector<std::unique_ptr<Connection>> connections_;
  int next_asking_id_ = -1;  // connections that have not been welcomed: -1, -2, ...
  int next_joined_job_ = 1;
};

}  // namespace phalanx::sweep
