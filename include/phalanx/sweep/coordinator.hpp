// The coordinator: a thread on world rank 0, beside rank 0's own worker, so that no rank sits
// idle as a pure coordinator. It owns the ASHA state and the database, hands out jobs under the
// heterogeneous dispatch rule, prints the leaderboard, and at the end writes results.csv, best/
// and report.html. It sleeps between polls, so it takes next to no CPU from rank 0's trial.
#pragma once

#include <string>

#include "phalanx/comm/communicator.hpp"
#include "phalanx/config/sweep_config.hpp"

namespace phalanx::sweep {

struct CoordinatorOptions {
  const config::SweepConfig* sweep = nullptr;
  std::string sweep_directory;
  bool resume = false;
  int groups = 1;  // worker groups that will say hello
  // Listen for jobs that join the sweep (sweep --join; SWEEP_DIR/join.json says where).
  bool accept_joins = true;
};

// Runs the sweep to its end, or until a stop signal (SIGTERM, SIGUSR1) reaches rank 0 or a worker
// reports a trial it stopped on one: then no job is handed out any more, the running trials stop
// after a step with a checkpoint and are recorded as interrupted. Every worker has been told to
// stop when it returns; returns true when a signal stopped the sweep (--resume continues it).
// `every_trial_failed`, where given, is set when the sweep ran to its end and every trial failed
// with none giving a result: the first failure's message (ResultsStore::failure_of_every_trial).
bool run_coordinator(const CoordinatorOptions& options, const comm::Communicator& channel,
                     std::optional<std::string>* every_trial_failed = nullptr);

// A stable description of what the sweep searches (space, budgets, scheduler, base config),
// stored in the database and compared on --resume.
std::string sweep_definition(const config::SweepConfig& sweep);
// The first key in which two definitions differ, named as a user would set it (a line of the base
// config where that is what differs); `where` says where `other` comes from ("in the running sweep").
std::string sweep_definition_difference(const std::string& mine, const std::string& other,
                                        const std::string& where);

}  // namespace phalanx::sweep
