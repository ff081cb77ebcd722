// The coordinator's lines (see sweep_printer.hpp). Each line starts with the seconds since this
// run of the sweep began; printed with stdio and flushed, as the trainer's progress lines are.
#include "sweep_printer.hpp"

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <sstream>
#include <string>

#include "phalanx/sweep/search_space.hpp"

namespace phalanx::sweep {
namespace {

std::string budget_text(const config::SweepConfig& sweep, double budget) {
  char text[64];
  std::snprintf(text, sizeof(text), "%g %s", budget, config::name_of(sweep.budget_unit).c_str());
  return text;
}

// "0+2": the groups of a job.
std::string worker_list(const std::vector<int>& workers) {
  std::string text;
  for (const int worker : workers) {
    if (!text.empty()) text += '+';
    text += std::to_string(worker);
  }
  return text;
}

// "0,1": a group's world ranks.
std::string rank_list(const std::vector<int>& ranks) {
  std::string text;
  for (const int rank : ranks) {
    if (!text.empty()) text += ',';
    text += std::to_string(rank);
  }
  return text;
}

const char* signal_name(int signal_number) {
  switch (signal_number) {
    case SIGTERM: return "SIGTERM";
    case SIGUSR1: return "SIGUSR1";
    default: return "a stop signal";
  }
}

std::string line_of(const config::SweepConfig& sweep, const ShowJobDone& done) {
  char line[512];
  const std::string resumed =
      done.start_step > 0 ? " resumed at step " + std::to_string(done.start_step) : "";
  std::snprintf(line, sizeof(line),
                "[%7.1f s] trial %3d rung %d (%s) %s %.4f  worker %s (%s, %d thr) %.1f s%s", done.elapsed,
                done.trial, done.rung, budget_text(sweep, done.budget).c_str(), sweep.metric.c_str(),
                done.metric, worker_list(done.workers).c_str(), done.gpu ? "gpu" : "cpu", done.threads,
                done.seconds, resumed.c_str());
  return line;
}

std::string line_of(const config::SweepConfig&, const ShowJobInterrupted& stopped) {
  char line[256];
  std::snprintf(line, sizeof(line),
                "[%7.1f s] trial %3d rung %d interrupted after step %lld (checkpoint written) on worker %d",
                stopped.elapsed, stopped.trial, stopped.rung, static_cast<long long>(stopped.end_step),
                stopped.worker);
  return line;
}

std::string line_of(const config::SweepConfig&, const ShowJobHandedOver& handed_over) {
  char share[96] = "";
  if (handed_over.merged_efficiency)
    std::snprintf(share, sizeof(share), ", at %.0f%% of their summed speed as merged jobs so far",
                  100.0 * *handed_over.merged_efficiency);
  char line[512];
  std::snprintf(line, sizeof(line),
                "[%7.1f s] trial %3d rung %d handed over after step %lld (checkpoint written): continues on "
                "workers %s (%d ranks), same global batch, about %.0f s%s",
                handed_over.elapsed, handed_over.trial, handed_over.rung,
                static_cast<long long>(handed_over.end_step), worker_list(handed_over.workers).c_str(),
                handed_over.ranks, handed_over.estimate_seconds, share);
  return line;
}

std::string line_of(const ShowJoin& join) {
  char line[256];
  std::snprintf(
      line, sizeof(line),
      "[%7.1f s] worker %d (ranks %s) has nothing from ASHA: joins trial %d on worker %s (about %.0f s "
      "left on %d ranks) after its next step",
      join.elapsed, join.worker, rank_list(join.worker_ranks).c_str(), join.trial,
      worker_list(join.trial_workers).c_str(), join.seconds_left, join.ranks);
  return line;
}

std::string line_of(const ShowEndedBeforeHandover& ended) {
  char line[256];
  std::snprintf(line, sizeof(line), "[%7.1f s] trial %d ended before its handover: worker(s) %s free again",
                ended.elapsed, ended.trial, worker_list(ended.workers).c_str());
  return line;
}

std::string line_of(const ShowJoinedJob& joined) {
  std::ostringstream line;
  char head[64];
  std::snprintf(head, sizeof(head), "[%7.1f s] joined job %d", joined.elapsed, joined.joined_job);
  line << head << ": worker(s) " << worker_list(joined.workers) << (joined.left ? " left" : " join the sweep");
  if (!joined.requeued.empty()) {
    line << "; trial(s)";
    for (const int trial : joined.requeued) line << ' ' << trial;
    line << " requeued from their newest checkpoint";
  }
  return line.str();
}

}  // namespace

void SweepPrinter::header(const SweepState& state) const {
  const Asha& asha = state.asha();
  std::string ladder;
  for (int rung = 0; rung < asha.rung_count(); ++rung) {
    if (rung) ladder += ", ";
    ladder += budget_text(sweep_, asha.budget(rung));
  }
  std::string search = config::name_of(sweep_.search) + " search";
  if (sweep_.search == config::Search::Tpe)
    search += " (the first " + std::to_string(sweep_.tpe_startup_trials) + " trials random, " +
              std::to_string(sweep_.tpe_candidates) + " candidates)";
  // PBT's rungs are its intervals; eta means nothing there.
  const bool pbt = state.pbt() != nullptr;
  const std::string shape =
      pbt ? "intervals: " + ladder + "; population " + std::to_string(sweep_.pbt.population)
          : "rungs: " + ladder + "; eta " + std::to_string(sweep_.eta) +
                (sweep_.scheduler == config::Scheduler::Asha
                     ? "; " + config::name_of(sweep_.asha_rule) + " rule" +
                           (sweep_.asha_brackets > 1
                                ? ", " + std::to_string(sweep_.asha_brackets) + " brackets"
                                : "")
                     : "");
  std::printf("sweep %s: %d trials, %s, %s scheduler (%s), metric %s (%s), %d worker groups\n",
              sweep_.name.c_str(), asha.max_trials(), search.c_str(), config::name_of(sweep_.scheduler).c_str(),
              shape.c_str(), sweep_.metric.c_str(), config::name_of(sweep_.goal).c_str(), state.group_count());
  std::fflush(stdout);
}

void SweepPrinter::resuming(const std::string& sweep_directory, const SweepState& state) const {
  std::printf("resuming %s: %d trials started, %zu interrupted jobs requeued\n", sweep_directory.c_str(),
              state.asha().started_trials(), state.requeued_jobs());
}

void SweepPrinter::show(const ShowJobFailed& line, const SweepState& state) {
  const bool redraw = live_block_lines_ > 0;
  erase_live_block();
  std::printf("[%7.1f s] trial %d failed on worker %d: %s\n", line.elapsed, line.trial, line.worker,
              line.message.c_str());
  if (redraw) live_block_lines_ = leaderboard(state, false);
  std::fflush(stdout);
}

void SweepPrinter::note(const std::string& line) {
  erase_live_block();
  std::printf("%s\n", line.c_str());
  std::fflush(stdout);
}

void SweepPrinter::show(const ShowStopBegun& line) {
  erase_live_block();
  std::printf("[%7.1f s] %s: no new jobs; waiting for %d running trial(s) to stop with a checkpoint\n",
              line.elapsed, signal_name(line.signal), line.running);
  std::fflush(stdout);
}

void SweepPrinter::show(const ShowProgress& progress, const SweepState& state) {
  erase_live_block();
  if (progress.headline) {
    const std::string line =
        std::visit([&](const auto& headline) { return line_of(sweep_, headline); }, *progress.headline);
    std::printf("%s | %s\n", line.c_str(), status_line(state).c_str());
  }
  for (const auto& note : progress.notes)
    std::printf("%s\n", std::visit([](const auto& typed) { return line_of(typed); }, note).c_str());
  // On a terminal the leaderboard stays below the event lines, redrawn after each; in a log it
  // is printed every 10 results.
  if (progress.headline) {
    if (live_)
      live_block_lines_ = leaderboard(state, false);
    else if (state.results() % 10 == 0)
      leaderboard(state, false);
  }
  std::fflush(stdout);
}

void SweepPrinter::erase_live_block() {
  if (live_block_lines_ > 0) std::printf("\033[%dA\033[J", live_block_lines_);
  live_block_lines_ = 0;
}

std::string SweepPrinter::status_line(const SweepState& state) const {
  std::string rungs;
  for (int rung = 0; rung < state.asha().rung_count(); ++rung) {
    if (rung) rungs += "/";
    rungs += std::to_string(state.asha().ranking(rung).size());
  }
  std::string best = "-";
  const auto standings = state.standings();
  if (!standings.empty()) {
    char text[96];
    std::snprintf(text, sizeof(text), "trial %d %.4f (rung %d)", standings.front().trial,
                  standings.front().metric, standings.front().rung);
    best = text;
  }
  return "rungs " + rungs + " | busy " + std::to_string(state.busy_groups()) + "/" +
         std::to_string(state.group_count()) + " | best " + best;
}

int SweepPrinter::leaderboard(const SweepState& state, bool final) const {
  const auto standings = state.standings();
  std::printf("%s top trials (%s):\n", final ? "final" : "current", sweep_.metric.c_str());
  const std::size_t shown = std::min<std::size_t>(5, standings.size());
  for (std::size_t index = 0; index < shown; ++index) {
    const auto parameters = state.parameters(standings[index].trial, standings[index].rung).to_json().dump();
    std::printf("  %zu. trial %3d  rung %d  %.4f  %s\n", index + 1, standings[index].trial,
                standings[index].rung, standings[index].metric, parameters.c_str());
  }
  std::fflush(stdout);
  return 1 + static_cast<int>(shown);
}

void SweepPrinter::stopped(const SweepState& state, std::optional<double> seconds_after_signal,
                           std::size_t waiting_jobs, int exit_status) const {
  char after[64] = "";
  if (seconds_after_signal)
    std::snprintf(after, sizeof(after), " %.2f s after the signal", *seconds_after_signal);
  std::printf(
      "sweep stopped by %s%s: %d running trial(s) interrupted with a checkpoint, %zu job(s) waiting; "
      "continue "
      "with --resume (exit status %d)\n",
      signal_name(state.stop_signal()), after, state.interrupted(), waiting_jobs, exit_status);
  std::fflush(stdout);
}

void SweepPrinter::done(const SweepState& state, double wall_seconds, const std::string& sweep_directory,
                        const std::string& report) const {
  const double utilisation =
      100.0 * state.busy_seconds() / std::max(1e-9, wall_seconds * static_cast<double>(state.group_count()));
  std::printf(
      "sweep done in %.1f s: %d trials, worker utilisation %.1f%% (busy time / (groups x wall) since this "
      "start); %d promotions left by a slower group to a faster one\nresults: %s/results.csv, best: %s/best, "
      "report: %s\n",
      wall_seconds, state.asha().started_trials(), utilisation, state.passed_over(), sweep_directory.c_str(),
      sweep_directory.c_str(), report.c_str());
  std::fflush(stdout);
}

}  // namespace phalanx::sweep
