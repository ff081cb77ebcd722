// TCP between jobs that share no MPI world: a sweep's coordinator and the jobs that join it from
// another mpirun or Slurm job (docs/SWEEPS.md, "Jobs that join a running sweep"). A message is a
// frame: its length (4 bytes, big-endian), then its text. Reads never block, so one thread serves
// an MPI channel and many connections in the same polling loop; writes block until the frame is
// written (frames are small). Keepalive probes find a peer whose host died within about a minute;
// a killed process's peer sees the end of the stream at once. Every socket is closed by its owner.
#pragma once

#include <optional>
#include <string>

namespace phalanx::comm {

class TcpStream {
 public:
  // Connects to `host`:`port`, giving up after `timeout_seconds`; throws an input error that names
  // the address and the reason (refused, unreachable, no such host).
  static TcpStream connect(const std::string& host, int port, double timeout_seconds);
  explicit TcpStream(int descriptor);  // takes an accepted connection
  ~TcpStream();
  TcpStream(TcpStream&& other) noexcept;
  TcpStream& operator=(TcpStream&& other) noexcept;
  TcpStream(const TcpStream&) = delete;
  TcpStream& operator=(const TcpStream&) = delete;

  // False when the stream is closed or the peer is gone (the frame is then lost).
  bool send_frame(const std::string& text);
  // The next whole frame, when one has arrived; reads what is there without blocking.
  bool try_receive_frame(std::string& text);
  // Waits up to `timeout_seconds` for the next frame; false on time-out or a closed stream.
  bool receive_frame(std::string& text, double timeout_seconds);
  // The peer closed the stream, or it failed, or it sent a frame no peer of ours sends.
  bool closed() const { return closed_; }
  const std::string& peer() const { return peer_; }  // "host:port"
  void close();

 private:
  bool take_frame(std::string& text);

  int descriptor_ = -1;
  std::string buffer_;  // received bytes not yet taken as frames
  std::string peer_;
  bool closed_ = false;
};

class TcpListener {
 public:
  // Listens on every interface, on `port` (0: a free one the system picks); throws an input error
  // naming the port when it cannot.
  explicit TcpListener(int port = 0);
  ~TcpListener();
  TcpListener(const TcpListener&) = delete;
  TcpListener& operator=(const TcpListener&) = delete;

  int port() const { return port_; }
  // A connection that is waiting to be accepted, without blocking.
  std::optional<TcpStream> try_accept();

 private:
  int descriptor_ = -1;
  int port_ = 0;
};

}  // namespace phalanx::comm
