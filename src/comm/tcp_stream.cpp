// TCP frames between jobs (see tcp_stream.hpp).
#include "phalanx/comm/tcp_stream.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <utility>

#include "phalanx/core/error.hpp"
#include "phalanx/core/timer.hpp"

namespace phalanx::comm {
namespace {

// Frames of the sweep protocol are JSON of a few kilobytes (a job's history the largest); a length
// far beyond that is a stranger on the port, not one of ours.
constexpr std::uint32_t largest_frame = 64u << 20;

// Dead hosts are found by keepalive probes: idle 10 s, then every 5 s, given up after 6 unanswered.
void keep_alive(int descriptor) {
  const int on = 1, idle = 10, interval = 5, count = 6;
  ::setsockopt(descriptor, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof(on));
  ::setsockopt(descriptor, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
  ::setsockopt(descriptor, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof(interval));
  ::setsockopt(descriptor, IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof(count));
  // Frames are whole messages, each answered: no waiting to fill a segment.
  ::setsockopt(descriptor, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on));
}

std::string address_text(const sockaddr* address) {
  char host[NI_MAXHOST] = "?", port[NI_MAXSERV] = "?";
  const socklen_t length = address->sa_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
  ::getnameinfo(address, length, host, sizeof(host), port, sizeof(port), NI_NUMERICHOST | NI_NUMERICSERV);
  return std::string(host) + ":" + port;
}

// Connects one resolved address within the time left; returns the descriptor or -1 with errno set.
int connect_one(const addrinfo& candidate, double seconds_left) {
  const int descriptor = ::socket(candidate.ai_family, candidate.ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK,
                                  candidate.ai_protocol);
  if (descriptor < 0) return -1;
  if (::connect(descriptor, candidate.ai_addr, candidate.ai_addrlen) != 0) {
    if (errno != EINPROGRESS) {
      const int saved = errno;
      ::close(descriptor);
      errno = saved;
      return -1;
    }
    pollfd waiting{descriptor, POLLOUT, 0};
    const int ready = ::poll(&waiting, 1, static_cast<int>(seconds_left * 1000));
    int failure = ETIMEDOUT;
    socklen_t length = sizeof(failure);
    if (ready > 0) ::getsockopt(descriptor, SOL_SOCKET, SO_ERROR, &failure, &length);
    if (failure != 0) {
      ::close(descriptor);
      errno = failure;
      return -1;
    }
  }
  // Back to blocking writes; reads stay non-blocking per call (MSG_DONTWAIT).
  ::fcntl(descriptor, F_SETFL, ::fcntl(descriptor, F_GETFL) & ~O_NONBLOCK);
  return descriptor;
}

}  // namespace

TcpStream TcpStream::connect(const std::string& host, int port, double timeout_seconds) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const std::string where = host + ":" + std::to_string(port);
  const int resolved = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found);
  PHALANX_REQUIRE_INPUT(resolved == 0, "cannot resolve ", where, ": ", ::gai_strerror(resolved));
  const Stopwatch clock;
  std::string reason = "no address";
  int descriptor = -1;
  for (const addrinfo* candidate = found; candidate && descriptor < 0; candidate = candidate->ai_next) {
    descriptor = connect_one(*candidate, std::max(0.05, timeout_seconds - clock.seconds()));
    if (descriptor < 0) reason = std::strerror(errno);
  }
  ::freeaddrinfo(found);
  PHALANX_REQUIRE_INPUT(descriptor >= 0, "cannot connect to ", where, " (", reason, ")");
  TcpStream stream(descriptor);
  stream.peer_ = where;
  return stream;
}

TcpStream::TcpStream(int descriptor) : descriptor_(descriptor) {
  keep_alive(descriptor_);
  sockaddr_storage address{};
  socklen_t length = sizeof(address);
  if (::getpeername(descriptor_, reinterpret_cast<sockaddr*>(&address), &length) == 0)
    peer_ = address_text(reinterpret_cast<sockaddr*>(&address));
}

TcpStream::~TcpStream() { close(); }

TcpStream::TcpStream(TcpStream&& other) noexcept
    : descriptor_(std::exchange(other.descriptor_, -1)),
      buffer_(std::move(other.buffer_)),
      peer_(std::move(other.peer_)),
      closed_(std::exchange(other.closed_, true)) {}

TcpStream& TcpStream::operator=(TcpStream&& other) noexcept {
  if (this != &other) {
    close();
    descriptor_ = std::exchange(other.descriptor_, -1);
    buffer_ = std::move(other.buffer_);
    peer_ = std::move(other.peer_);
    closed_ = std::exchange(other.closed_, true);
  }
  return *this;
}

void TcpStream::close() {
  if (descriptor_ >= 0) ::close(descriptor_);
  descriptor_ = -1;
  closed_ = true;
}

bool TcpStream::send_frame(const std::string& text) {
  if (closed_) return false;
  const auto size = static_cast<std::uint32_t>(text.size());
  const unsigned char header[4] = {static_cast<unsigned char>(size >> 24), static_cast<unsigned char>(size >> 16),
                                   static_cast<unsigned char>(size >> 8), static_cast<unsigned char>(size)};
  std::string frame(reinterpret_cast<const char*>(header), 4);
  frame += text;
  std::size_t sent = 0;
  while (sent < frame.size()) {
    // MSG_NOSIGNAL: a peer that is gone is a closed stream, not a SIGPIPE that kills the rank.
    const ssize_t written = ::send(descriptor_, frame.data() + sent, frame.size() - sent, MSG_NOSIGNAL);
    if (written < 0 && errno == EINTR) continue;
    if (written <= 0) {
      close();
      return false;
    }
    sent += static_cast<std::size_t>(written);
  }
  return true;
}

bool TcpStream::take_frame(std::string& text) {
  if (buffer_.size() < 4) return false;
  const auto* bytes = reinterpret_cast<const unsigned char*>(buffer_.data());
  const std::uint32_t size = (std::uint32_t{bytes[0]} << 24) | (std::uint32_t{bytes[1]} << 16) |
                             (std::uint32_t{bytes[2]} << 8) | std::uint32_t{bytes[3]};
  if (size > largest_frame) {
    close();
    return false;
  }
  if (buffer_.size() < 4 + static_cast<std::size_t>(size)) return false;
  text = buffer_.substr(4, size);
  buffer_.erase(0, 4 + static_cast<std::size_t>(size));
  return true;
}

bool TcpStream::try_receive_frame(std::string& text) {
  if (take_frame(text)) return true;
  while (!closed_) {
    char chunk[65536];
    const ssize_t received = ::recv(descriptor_, chunk, sizeof(chunk), MSG_DONTWAIT);
    if (received > 0) {
      buffer_.append(chunk, static_cast<std::size_t>(received));
      if (take_frame(text)) return true;
      continue;
    }
    if (received < 0 && errno == EINTR) continue;
    if (received < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return false;
    close();  // 0: the peer closed the stream; < 0: it failed
  }
  return false;
}

bool TcpStream::receive_frame(std::string& text, double timeout_seconds) {
  const Stopwatch clock;
  while (!closed_) {
    if (try_receive_frame(text)) return true;
    const double left = timeout_seconds - clock.seconds();
    if (left <= 0 || closed_) return false;
    pollfd waiting{descriptor_, POLLIN, 0};
    ::poll(&waiting, 1, static_cast<int>(left * 1000) + 1);
  }
  return false;
}

TcpListener::TcpListener(int port) {
  // IPv6 with IPv4 mapped in where the host has it, else IPv4 alone.
  descriptor_ = ::socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  const int on = 1, off = 0;
  bool bound = false;
  if (descriptor_ >= 0) {
    ::setsockopt(descriptor_, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
    ::setsockopt(descriptor_, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof(off));
    sockaddr_in6 address{};
    address.sin6_family = AF_INET6;
    address.sin6_addr = in6addr_any;
    address.sin6_port = htons(static_cast<std::uint16_t>(port));
    bound = ::bind(descriptor_, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0;
    if (!bound) ::close(descriptor_);
  }
  if (!bound) {
    descriptor_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    PHALANX_REQUIRE_INPUT(descriptor_ >= 0, "cannot open a TCP socket: ", std::strerror(errno));
    ::setsockopt(descriptor_, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_ANY);
    address.sin_port = htons(static_cast<std::uint16_t>(port));
    if (::bind(descriptor_, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
      const int saved = errno;
      ::close(descriptor_);
      descriptor_ = -1;
      throw_input_error("cannot listen on TCP port " + std::to_string(port) + ": " + std::strerror(saved));
    }
  }
  if (::listen(descriptor_, 16) != 0) {
    const int saved = errno;
    ::close(descriptor_);
    descriptor_ = -1;
    throw_input_error("cannot listen on TCP port " + std::to_string(port) + ": " + std::strerror(saved));
  }
  sockaddr_storage address{};
  socklen_t length = sizeof(address);
  ::getsockname(descriptor_, reinterpret_cast<sockaddr*>(&address), &length);
  port_ = ntohs(address.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&address)->sin6_port
                                              : reinterpret_cast<sockaddr_in*>(&address)->sin_port);
}

TcpListener::~TcpListener() {
  if (descriptor_ >= 0) ::close(descriptor_);
}

std::optional<TcpStream> TcpListener::try_accept() {
  for (;;) {
    const int accepted = ::accept4(descriptor_, nullptr, nullptr, SOCK_CLOEXEC);
    if (accepted >= 0) return TcpStream(accepted);
    if (errno == EINTR || errno == ECONNABORTED) continue;
    return std::nullopt;  // EAGAIN: none waiting
  }
}

}  // namespace phalanx::comm
