// The sweep protocol's JSON on the coordinator's side: a group leader's messages, as worker.cpp
// writes them, decode into typed messages (rank lists as integers, a result's target step
// defaulting to its end step, a history's missing metrics as 0), malformed ones are refused with
// the text, and the coordinator's job message carries the merged ranks only for a merged job.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "messages.hpp"
#include "phalanx/core/error.hpp"

using namespace phalanx::sweep;

TEST(SweepMessages, HelloCarriesTheGroupsRanksAsIntegers) {
  const auto message = decode_worker_message(
      R"({"type":"hello","worker":2,"ranks":[3,4],"gpu":false,"device":"cpu","threads":2,"host":"n1"})");
  const auto& hello = std::get<Hello>(message);
  EXPECT_EQ(hello.worker, 2);
  EXPECT_EQ(hello.ranks, (std::vector<int>{3, 4}));
  EXPECT_FALSE(hello.gpu);
  EXPECT_EQ(hello.device, "cpu");
  EXPECT_EQ(hello.threads, 2);
  EXPECT_EQ(hello.host, "n1");
}

TEST(SweepMessages, ResultsAndTheirSteps) {
  const auto message = decode_worker_message(
      R"({"type":"result","job":7,"worker":1,"metric":0.75,"start_step":15,"end_step":45,"target_step":45,)"
      R"("resumed_from":"t/step-15.h5","train_seconds":3.5,"images_per_sec":900.0,)"
      R"("history":[{"epoch":2,"test_accuracy":0.7,"test_loss":0.8,"train_loss":0.9,"epoch_seconds":1.5},{"epoch":3}]})");
  const auto& result = std::get<JobResult>(message);
  EXPECT_EQ(result.worker, 1);
  EXPECT_EQ(result.job_id, 7);
  EXPECT_DOUBLE_EQ(result.metric, 0.75);
  EXPECT_EQ(result.steps, (JobSteps{15, 45, 45, "t/step-15.h5"}));
  EXPECT_DOUBLE_EQ(result.train_seconds, 3.5);
  EXPECT_DOUBLE_EQ(result.images_per_sec, 900.0);
  EXPECT_EQ(result.history,
            (std::vector<phalanx::sweep::EpochRecord>{{2, 0.7, 0.8, 0.9, 1.5}, {3, 0, 0, 0, 0}}));
  // Without a target step the job's rung ends where it ended.
  const auto short_result = std::get<JobResult>(decode_worker_message(
      R"({"type":"result","job":7,"worker":1,"metric":0.5,"start_step":0,"end_step":9,"resumed_from":"",)"
      R"("train_seconds":1,"images_per_sec":1,"history":[]})"));
  EXPECT_EQ(short_result.steps.target_step, 9);
}

TEST(SweepMessages, FailuresInterruptionsAndHandovers) {
  const auto failed =
      std::get<JobFailed>(decode_worker_message(R"({"type":"failed","job":3,"worker":0,"message":"nan"})"));
  EXPECT_EQ(failed.job_id, 3);
  EXPECT_EQ(failed.message, "nan");
  const auto interrupted = std::get<JobInterrupted>(decode_worker_message(
      R"({"type":"interrupted","job":4,"worker":1,"signal":10,"start_step":0,"end_step":6,"resumed_from":"",)"
      R"("train_seconds":2})"));
  EXPECT_EQ(interrupted.signal, 10);
  EXPECT_EQ(interrupted.steps.end_step, 6);
  const auto handed_over = std::get<JobHandedOver>(decode_worker_message(
      R"({"type":"handed_over","job":5,"worker":0,"start_step":2,"end_step":6,"target_step":30,)"
      R"("resumed_from":"a.h5","train_seconds":2})"));
  EXPECT_EQ(handed_over.steps, (JobSteps{2, 6, 30, "a.h5"}));
  // A handover's rest is counted from its target step: it must be there.
  EXPECT_THROW(
      decode_worker_message(R"({"type":"handed_over","job":5,"worker":0,"start_step":2,"end_step":6,)"
                            R"("resumed_from":"a.h5","train_seconds":2})"),
      phalanx::Error);
}

TEST(SweepMessages, MalformedMessagesAreRefusedWithTheirText) {
  try {
    decode_worker_message(R"({"type":"hello","worker":0,"ranks":"0,1"})");
    FAIL() << "a rank list as text was accepted";
  } catch (const phalanx::Error& error) {
    EXPECT_NE(std::string(error.what()).find("\"ranks\":\"0,1\""), std::string::npos) << error.what();
  }
  EXPECT_THROW(decode_worker_message("not json"), phalanx::Error);
  EXPECT_THROW(decode_worker_message(R"({"type":"bye","worker":0,"job":1})"), phalanx::Error);
}

TEST(SweepMessages, JobMessagesCarryMergedRanksOnlyForMergedJobs) {
  const auto alone = nlohmann::json::parse(job_message(9, 4, 2, 3.0, {"seed=5", "train.batch_size=64"}, {}));
  EXPECT_EQ(alone.at("type"), "job");
  EXPECT_EQ(alone.at("job"), 9);
  EXPECT_EQ(alone.at("trial"), 4);
  EXPECT_EQ(alone.at("rung"), 2);
  EXPECT_DOUBLE_EQ(alone.at("budget").get<double>(), 3.0);
  EXPECT_EQ(alone.at("assignments"), (std::vector<std::string>{"seed=5", "train.batch_size=64"}));
  EXPECT_FALSE(alone.contains("ranks"));
  const auto merged = nlohmann::json::parse(job_message(9, 4, 2, 3.0, {}, {0, 2, 3}));
  EXPECT_EQ(merged.at("ranks").get<std::vector<int>>(), (std::vector<int>{0, 2, 3}));
  EXPECT_EQ(nlohmann::json::parse(handover_message(9)), (nlohmann::json{{"type", "handover"}, {"job", 9}}));
  EXPECT_EQ(nlohmann::json::parse(stop_message()), (nlohmann::json{{"type", "stop"}}));
}
