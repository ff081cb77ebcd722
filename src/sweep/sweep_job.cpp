// A sweep's set-up and run (sweep_job.hpp). Rank 0 hosts the coordinator, on a thread beside its
// own worker group's trials (the MPI session grants multiple threads for it); the coordinator's
// messages travel on a communicator of their own, apart from any training traffic.
#include "phalanx/sweep/sweep_job.hpp"

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>
#include <vector>

#include "join_relay.hpp"
#include "phalanx/comm/agreement.hpp"
#include "phalanx/comm/nccl_communicator.hpp"
#include "phalanx/comm/tcp_stream.hpp"
#include "phalanx/core/build_stamp.hpp"
#include "phalanx/core/error.hpp"
#include "phalanx/core/timer.hpp"
#include "phalanx/sweep/coordinator.hpp"
#include "phalanx/sweep/join_protocol.hpp"
#include "phalanx/sweep/protocol.hpp"
#include "phalanx/sweep/results_store.hpp"
#include "phalanx/sweep/sweep_lock.hpp"
#include "phalanx/sweep/worker.hpp"
#include "phalanx/train/rank_resources.hpp"
#include "worker_groups.hpp"

namespace phalanx::sweep {

struct SweepParts {
  SweepRequest request;
  std::optional<FileLock> lock;  // rank 0's, held until the process ends
  train::RankResources resources;
  WorkerGroups groups;
  int my_group = -1;
  std::unique_ptr<comm::Communicator> channel, group, sweep_ranks;
  std::unique_ptr<comm::NcclCommunicator> nccl;  // when this rank's group trains over NCCL
  // --join: rank 0's connection to the running sweep's coordinator, and the coordinator's number
  // for this job's first group.
  std::unique_ptr<comm::TcpStream> link;
  std::string coordinator;  // host:port, for messages
  int first_worker = 0;
};

namespace {

// Rank 0 checks the sweep directory against --resume before anything starts: a resume needs the
// sweep it started with, a fresh sweep a directory without trials.
void check_sweep_directory(const SweepRequest& request) {
  const std::string& directory = request.directory;
  const std::string database = directory + "/sweep.db";
  const bool exists = std::filesystem::exists(database);
  if (request.resume) {
    PHALANX_REQUIRE_INPUT(exists, "--resume: ", database, " does not exist (no sweep to resume in ", directory,
                          ")");
    const ResultsStore store(database);
    const auto stored = store.meta("definition");
    const std::string now = sweep_definition(request.sweep);
    // A sweep killed before it stored its definition has no trials either, and resumes as new.
    PHALANX_REQUIRE_INPUT(stored || !store.has_trials(), database,
                          ": has trials but no sweep definition (damaged, or not written by phalanx sweep)");
    PHALANX_REQUIRE_INPUT(!stored || *stored == now, request.sweep.source,
                          ": --resume needs the sweep it started with; ",
                          sweep_definition_difference(now, stored.value_or(""), "in " + database));
  } else {
    if (exists) {
      const ResultsStore store(database);
      PHALANX_REQUIRE_INPUT(!store.has_trials(), directory,
                            ": already holds a sweep (sweep.db has trials); pass --resume to continue it, or "
                            "choose another --sweep-dir");
    }
    // A new sweep's trials start from their folders' checkpoints as every job resumes: an earlier
    // sweep's folders (its sweep.db moved away) would become this one's trials' starting points.
    for (const char* folder : {"/trials", "/pbt"}) {
      std::error_code error;
      const bool empty = std::filesystem::is_empty(directory + folder, error);
      PHALANX_REQUIRE_INPUT(error || empty, directory + folder,
                            ": holds an earlier sweep's trials, which a new sweep would take for its own; "
                            "choose another --sweep-dir (or remove that folder)");
    }
  }
  std::error_code error;
  std::filesystem::create_directories(directory + "/trials", error);
  PHALANX_REQUIRE_INPUT(!error, "--sweep-dir ", directory, ": cannot create it (", error.message(), ")");
}

// The coordinator on rank 0's thread. A failing coordinator leaves every worker waiting for a
// job: it ends the whole job.
void coordinate(const SweepParts& parts, bool& stopped_by_signal,
                std::optional<std::string>& every_trial_failed) {
  try {
    CoordinatorOptions options{&parts.request.sweep, parts.request.directory, parts.request.resume,
                               static_cast<int>(parts.groups.members.size())};
    stopped_by_signal = run_coordinator(options, *parts.channel, &every_trial_failed);
    return;
  } catch (const Error& error) {
    std::fprintf(stderr, "phalanx: error: %s\n", error.what());
    std::fflush(stderr);
    comm::MpiSession::abort(error.exit_status());
  } catch (const std::exception& error) {
    std::fprintf(stderr, "phalanx: error: rank 0 (sweep coordinator): %s\n", error.what());
    std::fflush(stderr);
    comm::MpiSession::abort(1);
  }
}

// --join, on rank 0: asks the coordinator that join.json names to take this job's `groups`; returns
// the number of its first group. A refusal is bad input (exit 2) with the coordinator's reason.
int ask_to_join(SweepParts& parts, int groups, const std::string& host) {
  const std::string& directory = parts.request.directory;
  const JoinAddress address = read_join_file(directory);
  // The host's name first, then its addresses (a name another network does not resolve).
  std::vector<std::string> candidates{address.host};
  candidates.insert(candidates.end(), address.addresses.begin(), address.addresses.end());
  std::string reasons;
  for (const auto& candidate : candidates) {
    try {
      parts.link = std::make_unique<comm::TcpStream>(comm::TcpStream::connect(candidate, address.port, 10.0));
      parts.coordinator = candidate + ":" + std::to_string(address.port);
      break;
    } catch (const Error& error) {
      reasons += std::string(reasons.empty() ? "" : "; ") + error.what();
    }
  }
  PHALANX_REQUIRE_INPUT(parts.link, "--join ", directory, ": the sweep's coordinator is not there (", reasons,
                        "): is the sweep still running? (", join_file(directory),
                        " may be left from a sweep that was killed)");
  JoinRequest request;
  request.token = address.token;
  request.version = build_stamp().version;
  request.commit = build_stamp().git_commit;
  request.definition = sweep_definition(parts.request.sweep);
  request.host = host;
  request.groups = groups;
  std::string text;
  PHALANX_REQUIRE_INPUT(parts.link->send_frame(encode_join_request(request)) && parts.link->receive_frame(text, 60.0),
                        "--join ", directory, ": the coordinator at ", parts.coordinator,
                        " did not answer within 60 s");
  // What answers at the address join.json names may be another program (the sweep ended and
  // another process took its port): an answer that is not a coordinator's is refused as such.
  const std::string not_a_coordinator = "--join " + directory + ": what answered at " + parts.coordinator +
                                        " (from " + join_file(directory) + ") is not a sweep's coordinator: ";
  nlohmann::json answer;
  try {
    answer = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& error) {
    throw_input_error(not_a_coordinator + error.what());
  }
  PHALANX_REQUIRE_INPUT(answer.is_object() && answer.contains("type") && answer["type"].is_string(),
                        not_a_coordinator, "its answer has no type");
  if (answer["type"] == "refused")
    throw_input_error("--join " + directory + ": refused by the sweep at " + parts.coordinator + ": " +
                      (answer.contains("message") && answer["message"].is_string()
                           ? answer["message"].get<std::string>()
                           : std::string("no reason given")));
  PHALANX_REQUIRE_INPUT(
      answer["type"] == "welcome" && answer.contains("first_worker") &&
          answer["first_worker"].is_number_integer() && answer["first_worker"].get<std::int64_t>() >= 0 &&
          answer["first_worker"].get<std::int64_t>() <= std::numeric_limits<int>::max(),
      not_a_coordinator, "its answer ", answer.dump(), " is not a welcome with a first worker");
  return answer["first_worker"].get<int>();
}

}  // namespace

SweepJob::SweepJob(SweepRequest request, const comm::Communicator& world)
    : parts_(std::make_unique<SweepParts>()) {
  SweepParts& parts = *parts_;
  parts.request = std::move(request);
  const config::SweepConfig& sweep = parts.request.sweep;
  std::string& directory = parts.request.directory;
  if (directory.empty()) directory = "sweeps/" + sweep.name;
  world.broadcast_string(directory, 0);
  comm::agree(
      world,
      [&] {
        if (world.rank() != 0 || parts.request.join) return;  // a joined job writes nothing of the sweep's
        std::error_code error;
        if (std::filesystem::is_directory(directory, error))
          parts.lock.emplace(lock_sweep_directory(directory, 30.0));
        check_sweep_directory(parts.request);
        if (!parts.lock) parts.lock.emplace(lock_sweep_directory(directory, 30.0));
      },
      sweep.base.distributed.timeout_s);
  comm::agree(
      world,
      [&] { parts.resources = train::make_rank_resources(sweep.base.device, sweep.base.threads, world); },
      sweep.base.distributed.timeout_s);

  const bool gpu = parts.resources.backend->device_kind() == DeviceKind::Cuda;
  std::vector<bool> kinds;
  for (const auto kind : world.allgather(static_cast<std::uint64_t>(gpu))) kinds.push_back(kind != 0);
  parts.groups = plan_worker_groups(kinds, sweep);
  if (world.rank() == 0 && parts.groups.gpu_ranks_left_out > 0)
    std::printf("%d GPU rank(s) left out: workers.gpu_ranks_per_trial is %d\n", parts.groups.gpu_ranks_left_out,
                sweep.gpu_ranks_per_trial);
  comm::agree(
      world,
      [&] {
        PHALANX_REQUIRE_INPUT(
            !parts.groups.members.empty(), sweep.source,
            ": no worker group: workers.cpu_trials is false and there are no (or too few) GPU ranks");
      },
      sweep.base.distributed.timeout_s);
  if (parts.request.join) {
    const std::string host = world.host_name();
    comm::agree(
        world,
        [&] {
          if (world.rank() == 0)
            parts.first_worker = ask_to_join(parts, static_cast<int>(parts.groups.members.size()), host);
        },
        sweep.base.distributed.timeout_s);
    world.broadcast(&parts.first_worker, sizeof(parts.first_worker), 0);
    if (world.rank() == 0)
      std::printf("joined the sweep in %s (coordinator %s) with worker group(s) %d-%d\n", directory.c_str(),
                  parts.coordinator.c_str(), parts.first_worker,
                  parts.first_worker + static_cast<int>(parts.groups.members.size()) - 1);
  }
  parts.my_group = parts.groups.group_of[static_cast<std::size_t>(world.rank())];
  const int group_count = static_cast<int>(parts.groups.members.size());
  parts.channel = std::make_unique<comm::Communicator>(world.split(0, world.rank()));
  parts.group = std::make_unique<comm::Communicator>(
      world.split(parts.my_group >= 0 ? parts.my_group : group_count, world.rank()));
  // Merged groups for joined trials (docs/SWEEPS.md, "No idle tail") are formed from this one.
  parts.sweep_ranks = std::make_unique<comm::Communicator>(world.split(0, world.rank()));
  comm::agree(
      world,
      [&] {
        if (parts.my_group >= 0 && gpu)
          parts.nccl = std::make_unique<comm::NcclCommunicator>(*parts.group, *parts.resources.backend,
                                                                sweep.base.distributed.timeout_s);
      },
      sweep.base.distributed.timeout_s);
}

SweepJob::~SweepJob() = default;

bool SweepJob::run() {
  SweepParts& parts = *parts_;
  const comm::Communicator& channel = *parts.channel;
  bool stopped_by_signal = false;
  std::thread coordinator;
  RelayEnd relay_end = RelayEnd::SweepEnded;
  if (channel.rank() == 0 && parts.request.join) {
    RelayOptions relay{parts.link.get(), &channel, {}, parts.first_worker};
    for (const auto& members : parts.groups.members) relay.leaders.push_back(members.front());
    coordinator = std::thread([&parts, relay, &relay_end] {
      try {
        relay_end = run_join_relay(relay);
      } catch (const std::exception& error) {
        std::fprintf(stderr, "phalanx: error: rank 0 (join relay to %s): %s\n", parts.coordinator.c_str(),
                     error.what());
        std::fflush(stderr);
        comm::MpiSession::abort(1);
      }
    });
  } else if (channel.rank() == 0) {
    coordinator = std::thread([&] { coordinate(parts, stopped_by_signal, every_trial_failed_); });
  }
  if (parts.my_group >= 0) {
    WorkerOptions options{&parts.request.sweep,
                          parts.request.directory,
                          parts.first_worker + parts.my_group,
                          parts.channel.get(),
                          parts.group.get(),
                          parts.sweep_ranks.get(),
                          parts.resources.backend.get(),
                          parts.nccl.get(),
                          parts.resources.threads,
                          parts.groups.members[static_cast<std::size_t>(parts.my_group)],
                          parts.request.join};
    // A failure run_worker passes on (a trial's error in a group of several ranks, where the others
    // may wait in a collective) ends the job here, with its message: unwinding on rank 0 past the
    // running coordinator or relay thread would end the process without one (std::terminate).
    try {
      run_worker(options);
    } catch (const Error& error) {
      std::fprintf(stderr, "phalanx: error: %s\n", error.what());
      std::fflush(stderr);
      comm::MpiSession::abort(error.exit_status());
    } catch (const std::exception& error) {
      std::fprintf(stderr, "phalanx: error: rank %d (worker %d): %s\n", channel.rank(), options.worker,
                   error.what());
      std::fflush(stderr);
      comm::MpiSession::abort(1);
    }
  }
  if (channel.rank() == 0) {
    coordinator.join();
    // Ranks outside every group have been waiting for this word.
    for (int rank = 0; rank < channel.size(); ++rank)
      if (parts.groups.group_of[static_cast<std::size_t>(rank)] < 0) channel.send_string("stop", rank, tag_to_worker);
  } else if (parts.my_group < 0) {
    channel.receive_string(0, tag_to_worker, 0.05);
  }
  if (!parts.request.join) return stopped_by_signal;
  if (channel.rank() == 0) {
    if (relay_end == RelayEnd::CoordinatorLost)
      throw_run_failure("--join " + parts.request.directory + ": the sweep's coordinator at " + parts.coordinator +
                        " is gone (its connection closed before the sweep ended); this job's trials stopped "
                        "with a checkpoint, and the sweep's --resume requeues them");
    std::printf("%s\n", relay_end == RelayEnd::Left ? "left the sweep: a stop signal reached this job; its "
                                                        "trials are requeued in the sweep"
                                                      : "the sweep ended");
  }
  return relay_end == RelayEnd::Left;
}

}  // namespace phalanx::sweep
