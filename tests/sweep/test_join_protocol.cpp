// What a joining job and a running sweep's coordinator say first (join_protocol.hpp): the join
// file round-trips and a missing or malformed one is bad input naming the file; a join request
// round-trips and a stranger's frame is refused; the coordinator refuses a wrong token, another
// phalanx version or commit, and another sweep definition with the key or config line that differs.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "phalanx/config/config.hpp"
#include "phalanx/config/sweep_config.hpp"
#include "phalanx/core/error.hpp"
#include "phalanx/sweep/coordinator.hpp"
#include "phalanx/sweep/join_protocol.hpp"

using namespace phalanx::sweep;

namespace {

std::string scratch(const std::string& name) {
  const auto path = std::filesystem::temp_directory_path() / ("phalanx_join_" + name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(path);
  std::filesystem::create_directories(path);
  return path.string();
}

phalanx::config::SweepConfig small_sweep() {
  phalanx::config::SweepConfig sweep;
  sweep.trials = 9;
  sweep.min_budget = 1;
  sweep.max_budget = 9;
  sweep.eta = 3;
  return sweep;
}

JoinRequest request_for(const phalanx::config::SweepConfig& sweep, const phalanx::BuildStamp& build) {
  return JoinRequest{"secret", build.version, build.git_commit, sweep_definition(sweep), "n2", 2};
}

}  // namespace

TEST(JoinProtocol, TheJoinFileRoundTripsAndABadOneNamesItself) {
  const std::string directory = scratch("file");
  try {
    read_join_file(directory);
    FAIL() << "read a join file that is not there";
  } catch (const phalanx::Error& error) {
    EXPECT_EQ(error.exit_status(), 2);
    EXPECT_NE(std::string(error.what()).find(directory + "/join.json"), std::string::npos) << error.what();
    EXPECT_NE(std::string(error.what()).find("no sweep is running"), std::string::npos) << error.what();
  }
  write_join_file(directory, JoinAddress{"node7", {"10.0.0.7", "127.0.0.1"}, 40123, "abc"});
  const JoinAddress address = read_join_file(directory);
  EXPECT_EQ(address.host, "node7");
  EXPECT_EQ(address.addresses, (std::vector<std::string>{"10.0.0.7", "127.0.0.1"}));
  EXPECT_EQ(address.port, 40123);
  EXPECT_EQ(address.token, "abc");
  std::ofstream(directory + "/join.json") << "{\"host\": \"node7\"}";
  try {
    read_join_file(directory);
    FAIL() << "read a join file without a port";
  } catch (const phalanx::Error& error) {
    EXPECT_EQ(error.exit_status(), 2);
    EXPECT_NE(std::string(error.what()).find("join.json"), std::string::npos) << error.what();
  }
  std::filesystem::remove_all(directory);
}

TEST(JoinProtocol, ARequestRoundTripsAndAStrangersFrameIsRefused) {
  const JoinRequest sent{"t", "0.1.0", "abc1234", "{\"seed\": 1}", "n3", 4};
  const JoinRequest received = decode_join_request(encode_join_request(sent));
  EXPECT_EQ(received.token, "t");
  EXPECT_EQ(received.version, "0.1.0");
  EXPECT_EQ(received.commit, "abc1234");
  EXPECT_EQ(received.definition, sent.definition);
  EXPECT_EQ(received.host, "n3");
  EXPECT_EQ(received.groups, 4);
  EXPECT_THROW(decode_join_request("GET / HTTP/1.0"), phalanx::Error);
  EXPECT_THROW(decode_join_request(R"({"type":"hello","worker":1})"), phalanx::Error);
}

TEST(JoinProtocol, TheCoordinatorRefusesAnotherBuildAnotherSweepOrAWrongToken) {
  const auto sweep = small_sweep();
  const phalanx::BuildStamp build{"0.1.0", "1326be0", "Release", "GNU 12.2.0"};
  const std::string definition = sweep_definition(sweep);
  EXPECT_EQ(join_refusal(request_for(sweep, build), "secret", definition, build), "");

  auto wrong_token = request_for(sweep, build);
  wrong_token.token = "guess";
  EXPECT_NE(join_refusal(wrong_token, "secret", definition, build).find("token"), std::string::npos);

  auto other_commit = request_for(sweep, build);
  other_commit.commit = "988a798";
  const std::string commit_refusal = join_refusal(other_commit, "secret", definition, build);
  EXPECT_NE(commit_refusal.find("commit 1326be0"), std::string::npos) << commit_refusal;
  EXPECT_NE(commit_refusal.find("commit 988a798"), std::string::npos) << commit_refusal;
  auto other_version = request_for(sweep, build);
  other_version.version = "0.2.0";
  EXPECT_NE(join_refusal(other_version, "secret", definition, build).find("phalanx 0.2.0"), std::string::npos);

  // Another budget: the key is named with both values.
  auto longer = sweep;
  longer.max_budget = 27;
  const std::string budget_refusal = join_refusal(request_for(longer, build), "secret", definition, build);
  EXPECT_NE(budget_refusal.find("'budget'"), std::string::npos) << budget_refusal;
  EXPECT_NE(budget_refusal.find("27"), std::string::npos) << budget_refusal;

  // Another ASHA rule: a key the default leaves out of the definition, named with its value.
  auto stopping = sweep;
  stopping.asha_rule = phalanx::config::AshaRule::Stopping;
  const std::string rule_refusal = join_refusal(request_for(stopping, build), "secret", definition, build);
  EXPECT_NE(rule_refusal.find("'asha'"), std::string::npos) << rule_refusal;
  EXPECT_NE(rule_refusal.find("stopping"), std::string::npos) << rule_refusal;

  // Other brackets: named the same way.
  auto brackets = sweep;
  brackets.asha_brackets = 3;
  const std::string brackets_refusal =
      join_refusal(request_for(brackets, build), "secret", definition, build);
  EXPECT_NE(brackets_refusal.find("'asha'"), std::string::npos) << brackets_refusal;
  EXPECT_NE(brackets_refusal.find("brackets"), std::string::npos) << brackets_refusal;

  // Another base config: the line of the resolved config that differs.
  auto other_base = sweep;
  other_base.base.optimizer.learning_rate = 0.125;
  const std::string base_refusal = join_refusal(request_for(other_base, build), "secret", definition, build);
  EXPECT_NE(base_refusal.find("base config"), std::string::npos) << base_refusal;
  EXPECT_NE(base_refusal.find("learning_rate: 0.125"), std::string::npos) << base_refusal;

  auto no_groups = request_for(sweep, build);
  no_groups.groups = 0;
  EXPECT_NE(join_refusal(no_groups, "secret", definition, build).find("no worker group"), std::string::npos);
}
