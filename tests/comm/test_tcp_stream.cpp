// TCP frames between jobs (tcp_stream.hpp), over this host's loopback: frames arrive whole and in
// order both ways whatever their size, a read with nothing there returns at once, a closed peer is
// seen as closed (after what it sent before closing), and a connection to a port nobody listens on
// is refused with the address in the message.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <optional>
#include <string>
#include <thread>

#include "phalanx/comm/tcp_stream.hpp"
#include "phalanx/core/error.hpp"
#include "phalanx/core/timer.hpp"

using phalanx::comm::TcpListener;
using phalanx::comm::TcpStream;

namespace {

TcpStream accept_within(TcpListener& listener, double seconds) {
  const phalanx::Stopwatch clock;
  while (clock.seconds() < seconds) {
    if (auto accepted = listener.try_accept()) return std::move(*accepted);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  throw std::runtime_error("no connection to accept");
}

}  // namespace

TEST(TcpStream, FramesArriveWholeAndInOrderBothWays) {
  TcpListener listener;
  ASSERT_GT(listener.port(), 0);
  EXPECT_FALSE(listener.try_accept().has_value());  // nobody yet: no wait
  TcpStream client = TcpStream::connect("localhost", listener.port(), 5.0);
  TcpStream server = accept_within(listener, 5.0);
  std::string text;
  EXPECT_FALSE(server.try_receive_frame(text));  // nothing sent yet: no wait
  // 3 MiB does not fit a socket buffer: the reader sees it in pieces and takes it whole.
  const std::string large(3u << 20, 'x');
  std::thread writer([&] {
    EXPECT_TRUE(client.send_frame("first"));
    EXPECT_TRUE(client.send_frame(""));
    EXPECT_TRUE(client.send_frame(large));
    EXPECT_TRUE(client.send_frame("last"));
  });
  std::vector<std::string> received;
  while (received.size() < 4) {
    ASSERT_TRUE(server.receive_frame(text, 10.0));
    received.push_back(text);
  }
  writer.join();
  EXPECT_EQ(received[0], "first");
  EXPECT_EQ(received[1], "");
  EXPECT_EQ(received[2].size(), large.size());
  EXPECT_EQ(received[2], large);
  EXPECT_EQ(received[3], "last");
  EXPECT_TRUE(server.send_frame("answer"));
  ASSERT_TRUE(client.receive_frame(text, 5.0));
  EXPECT_EQ(text, "answer");
  EXPECT_FALSE(client.receive_frame(text, 0.05));  // time-out with nothing there
  EXPECT_FALSE(client.closed());
}

TEST(TcpStream, APeerThatClosesIsSeenClosedAfterWhatItSent) {
  TcpListener listener;
  std::optional<TcpStream> client = TcpStream::connect("127.0.0.1", listener.port(), 5.0);
  TcpStream server = accept_within(listener, 5.0);
  ASSERT_TRUE(client->send_frame("goodbye"));
  client.reset();  // the process of a killed job closes its sockets likewise
  std::string text;
  ASSERT_TRUE(server.receive_frame(text, 5.0));
  EXPECT_EQ(text, "goodbye");
  EXPECT_FALSE(server.receive_frame(text, 5.0));
  EXPECT_TRUE(server.closed());
  EXPECT_FALSE(server.send_frame("anyone?"));
}

TEST(TcpStream, AStrangerSendingAnImpossibleLengthIsClosed) {
  TcpListener listener;
  // A plain socket speaking HTTP, as a port scanner or a browser would: "GET " read as a frame
  // length is about 1.2 GB, which no frame of ours is.
  const int stranger = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(stranger, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(static_cast<std::uint16_t>(listener.port()));
  ASSERT_EQ(::connect(stranger, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  const std::string request = "GET / HTTP/1.0\r\n\r\n";
  ASSERT_EQ(::send(stranger, request.data(), request.size(), 0), static_cast<ssize_t>(request.size()));
  TcpStream server = accept_within(listener, 5.0);
  std::string text;
  EXPECT_FALSE(server.receive_frame(text, 5.0));
  EXPECT_TRUE(server.closed());
  ::close(stranger);
}

TEST(TcpStream, ConnectingWhereNobodyListensNamesTheAddress) {
  int port = 0;
  {
    TcpListener listener;
    port = listener.port();
  }  // closed again: nobody listens there now
  try {
    TcpStream::connect("127.0.0.1", port, 5.0);
    FAIL() << "connected to a closed port";
  } catch (const phalanx::Error& error) {
    EXPECT_EQ(error.exit_status(), 2);
    EXPECT_NE(std::string(error.what()).find("127.0.0.1:" + std::to_string(port)), std::string::npos) << error.what();
    EXPECT_NE(std::string(error.what()).find("refused"), std::string::npos) << error.what();
  }
  EXPECT_THROW(TcpStream::connect("no-such-host.invalid", 1, 5.0), phalanx::Error);
}
