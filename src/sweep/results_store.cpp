// The sweep database schema and its transactions (see results_store.hpp).
#include "phalanx/sweep/results_store.hpp"

#include "phalanx/core/error.hpp"

namespace phalanx::sweep {
namespace {

// The text a rank list is stored as: "2", "0,1".
std::string rank_list_text(const std::vector<int>& ranks) {
  std::string text;
  for (const int rank : ranks) {
    if (!text.empty()) text += ',';
    text += std::to_string(rank);
  }
  return text;
}

}  // namespace

ResultsStore::ResultsStore(const std::string& path) : database_(path, true) {
  database_.execute(R"sql(
    CREATE TABLE IF NOT EXISTS sweep (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    CREATE TABLE IF NOT EXISTS workers (
      worker INTEGER PRIMARY KEY, ranks TEXT NOT NULL, device TEXT NOT NULL, threads INTEGER NOT NULL,
      host TEXT NOT NULL, speed REAL, jobs INTEGER NOT NULL DEFAULT 0, busy_seconds REAL NOT NULL DEFAULT 0);
    CREATE TABLE IF NOT EXISTS trials (
      trial_id INTEGER PRIMARY KEY, status TEXT NOT NULL, rung INTEGER NOT NULL, budget REAL, metric REAL,
      config TEXT NOT NULL, parameters TEXT NOT NULL, seed INTEGER NOT NULL, run_dir TEXT NOT NULL,
      worker INTEGER, device TEXT, steps INTEGER NOT NULL DEFAULT 0, wall_seconds REAL NOT NULL DEFAULT 0,
      created REAL NOT NULL, updated REAL NOT NULL);
    CREATE TABLE IF NOT EXISTS jobs (
      job_id INTEGER PRIMARY KEY AUTOINCREMENT, trial_id INTEGER NOT NULL REFERENCES trials(trial_id),
      rung INTEGER NOT NULL, budget REAL NOT NULL, worker INTEGER NOT NULL, device TEXT NOT NULL,
      status TEXT NOT NULL, start_step INTEGER, end_step INTEGER, resumed_from TEXT, started REAL NOT NULL,
      finished REAL, wall_seconds REAL, train_seconds REAL, images_per_sec REAL, metric REAL, message TEXT,
      estimate_seconds REAL, faster_group_seconds REAL);
    CREATE TABLE IF NOT EXISTS rung_results (
      trial_id INTEGER NOT NULL REFERENCES trials(trial_id), rung INTEGER NOT NULL, budget REAL NOT NULL,
      metric REAL NOT NULL, steps INTEGER NOT NULL, worker INTEGER NOT NULL, device TEXT NOT NULL,
      job_id INTEGER NOT NULL, finished REAL NOT NULL, PRIMARY KEY (trial_id, rung));
    CREATE TABLE IF NOT EXISTS epoch_metrics (
      trial_id INTEGER NOT NULL REFERENCES trials(trial_id), epoch INTEGER NOT NULL, job_id INTEGER NOT NULL,
      test_accuracy REAL, test_loss REAL, train_loss REAL, epoch_seconds REAL, PRIMARY KEY (trial_id, epoch));
    CREATE TABLE IF NOT EXISTS job_groups (
      job_id INTEGER NOT NULL REFERENCES jobs(job_id), trial_id INTEGER NOT NULL, worker INTEGER NOT NULL,
      ranks TEXT NOT NULL, start_step INTEGER NOT NULL, PRIMARY KEY (job_id, worker));
    CREATE TABLE IF NOT EXISTS proposals (
      trial_id INTEGER PRIMARY KEY REFERENCES trials(trial_id), method TEXT NOT NULL, model_rung INTEGER,
      fitted_on TEXT NOT NULL, parameter_values TEXT NOT NULL);
  )sql");
}

bool ResultsStore::has_trials() const {
  Statement statement(database_, "SELECT COUNT(*) FROM trials");
  return statement.step() && statement.integer(0) > 0;
}

std::optional<std::string> ResultsStore::failure_of_every_trial() const {
  Statement counts(
      database_,
      "SELECT (SELECT COUNT(*) FROM trials), (SELECT COUNT(*) FROM trials WHERE status != 'failed'), "
      "(SELECT COUNT(*) FROM rung_results)");
  if (!counts.step() || counts.integer(0) == 0 || counts.integer(1) != 0 || counts.integer(2) != 0)
    return std::nullopt;
  Statement first(database_,
                  "SELECT trial_id, message FROM jobs WHERE status = 'failed' AND message IS NOT NULL "
                  "ORDER BY trial_id, job_id LIMIT 1");
  if (!first.step()) return std::string("(no message recorded)");
  return "trial " + std::to_string(first.integer(0)) + ": " + first.text(1);
}

std::optional<std::string> ResultsStore::meta(const std::string& key) const {
  Statement statement(database_, "SELECT value FROM sweep WHERE key = ?1");
  statement.bind(1, key);
  if (!statement.step()) return std::nullopt;
  return statement.text(0);
}

void ResultsStore::set_meta(const std::string& key, const std::string& value) {
  Statement(database_, "INSERT OR REPLACE INTO sweep (key, value) VALUES (?1, ?2)")
      .bind(1, key)
      .bind(2, value)
      .run();
}

void ResultsStore::register_worker(int worker, const std::vector<int>& ranks, const std::string& device,
                                   int threads, const std::string& host) {
  Statement(database_,
            "INSERT INTO workers (worker, ranks, device, threads, host) VALUES (?1, ?2, ?3, ?4, ?5) "
            "ON CONFLICT (worker) DO UPDATE SET ranks = ?2, device = ?3, threads = ?4, host = ?5")
      .bind(1, worker)
      .bind(2, rank_list_text(ranks))
      .bind(3, device)
      .bind(4, threads)
      .bind(5, host)
      .run();
}

std::int64_t ResultsStore::last_job_id() const {
  // AUTOINCREMENT's counter too: it never goes back, even where rows would have gone.
  Statement statement(database_,
                      "SELECT MAX(COALESCE((SELECT MAX(job_id) FROM jobs), 0), COALESCE((SELECT seq FROM "
                      "sqlite_sequence WHERE name = 'jobs'), 0))");
  return statement.step() ? statement.integer(0) : 0;
}

void ResultsStore::start_job(const JobStart& job, const std::optional<NewTrial>& trial) {
  Transaction transaction(database_);
  if (trial) {
    Statement(
        database_,
        "INSERT INTO trials (trial_id, status, rung, config, parameters, seed, run_dir, worker, device, "
        "created, updated) VALUES (?1, 'running', ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?9)")
        .bind(1, job.trial)
        .bind(2, job.rung)
        .bind(3, trial->config)
        .bind(4, trial->parameters)
        .bind(5, static_cast<std::int64_t>(trial->seed))
        .bind(6, trial->run_dir)
        .bind(7, job.worker)
        .bind(8, job.device)
        .bind(9, job.started)
        .run();
    if (trial->proposal) {
      Statement insert(database_,
                       "INSERT INTO proposals (trial_id, method, model_rung, fitted_on, parameter_values) VALUES "
                       "(?1, ?2, ?3, ?4, ?5)");
      insert.bind(1, job.trial).bind(2, trial->proposal->method).bind(4, trial->proposal->fitted_on);
      insert.bind(5, trial->proposal->values);
      if (trial->proposal->model_rung >= 0)
        insert.bind(3, trial->proposal->model_rung);
      else
        insert.bind_null(3);
      insert.run();
    }
  } else {
    // The rung stays its latest result's, beside that result's budget and metric (the running
    // rung is the job's): results.csv paired a promotion's rung with the rung below's metric.
    Statement(
        database_,
        "UPDATE trials SET status = 'running', worker = ?2, device = ?3, updated = ?4 WHERE trial_id = ?1")
        .bind(1, job.trial)
        .bind(2, job.worker)
        .bind(3, job.device)
        .bind(4, job.started)
        .run();
  }
  insert_job(job);
  transaction.commit();
}

void ResultsStore::insert_job(const JobStart& job) {
  PHALANX_CHECK(job.job_id > 0, "job ", job.job_id, " of trial ", job.trial, " has no id");
  Statement insert(
      database_,
      "INSERT INTO jobs (job_id, trial_id, rung, budget, worker, device, status, started, estimate_seconds, "
      "faster_group_seconds) VALUES (?9, ?1, ?2, ?3, ?4, ?5, 'running', ?6, ?7, ?8)");
  insert.bind(9, job.job_id)
      .bind(1, job.trial)
      .bind(2, job.rung)
      .bind(3, job.budget)
      .bind(4, job.worker)
      .bind(5, job.device)
      .bind(6, job.started)
      .bind(7, job.estimate_seconds);
  if (job.faster_group_seconds >= 0)
    insert.bind(8, job.faster_group_seconds);
  else
    insert.bind_null(8);
  insert.run();
}

void ResultsStore::end_job(std::int64_t job_id, const std::string& status, std::int64_t start_step,
                           std::int64_t end_step, const std::string& resumed_from, double finished) {
  Statement(database_,
            "UPDATE jobs SET status = ?2, start_step = ?3, end_step = ?4, resumed_from = ?5, finished = ?6, "
            "wall_seconds = ?6 - started WHERE job_id = ?1")
      .bind(1, job_id)
      .bind(2, status)
      .bind(3, start_step)
      .bind(4, end_step)
      .bind(5, resumed_from)
      .bind(6, finished)
      .run();
}

void ResultsStore::add_busy_time(std::int64_t job_id, int worker, double finished) {
  Statement(
      database_,
      "UPDATE workers SET jobs = jobs + 1, busy_seconds = busy_seconds + (?3 - (SELECT started FROM jobs "
      "WHERE job_id = ?1)) WHERE worker = ?2 OR worker IN (SELECT worker FROM job_groups WHERE job_id = ?1 "
      "AND worker != ?2)")
      .bind(1, job_id)
      .bind(2, worker)
      .bind(3, finished)
      .run();
}

void ResultsStore::hand_over_job(std::int64_t job_id, std::int64_t start_step, std::int64_t end_step,
                                 const std::string& resumed_from, double finished, const JobStart& next,
                                 const std::vector<JobGroup>& groups) {
  Transaction transaction(database_);
  end_job(job_id, "handed_over", start_step, end_step, resumed_from, finished);
  Statement(
      database_,
      "UPDATE trials SET wall_seconds = wall_seconds + (?2 - (SELECT started FROM jobs WHERE job_id = ?3)), "
      "steps = ?4, worker = ?5, updated = ?2 WHERE trial_id = ?1")
      .bind(1, next.trial)
      .bind(2, finished)
      .bind(3, job_id)
      .bind(4, end_step)
      .bind(5, next.worker)
      .run();
  add_busy_time(job_id, next.worker, finished);
  insert_job(next);
  Statement group(
      database_,
      "INSERT INTO job_groups (job_id, trial_id, worker, ranks, start_step) VALUES (?1, ?2, ?3, ?4, ?5)");
  for (const auto& member : groups)
    group.bind(1, next.job_id)
        .bind(2, next.trial)
        .bind(3, member.worker)
        .bind(4, rank_list_text(member.ranks))
        .bind(5, end_step)
        .run();
  transaction.commit();
}

void ResultsStore::finish_job(const JobFinish& job) {
  Transaction transaction(database_);
  end_job(job.job_id, "done", job.start_step, job.end_step, job.resumed_from, job.finished);
  Statement(database_,
            "UPDATE jobs SET train_seconds = ?2, images_per_sec = ?3, metric = ?4 WHERE job_id = ?1")
      .bind(1, job.job_id)
      .bind(2, job.train_seconds)
      .bind(3, job.images_per_sec)
      .bind(4, job.metric)
      .run();
  Statement(
      database_,
      "INSERT INTO rung_results (trial_id, rung, budget, metric, steps, worker, device, job_id, finished) "
      "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)")
      .bind(1, job.trial)
      .bind(2, job.rung)
      .bind(3, job.budget)
      .bind(4, job.metric)
      .bind(5, job.end_step)
      .bind(6, job.worker)
      .bind(7, job.device)
      .bind(8, job.job_id)
      .bind(9, job.finished)
      .run();
  Statement epoch(database_,
                  "INSERT OR REPLACE INTO epoch_metrics (trial_id, epoch, job_id, test_accuracy, test_loss, "
                  "train_loss, epoch_seconds) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)");
  for (const auto& entry : job.history) {
    epoch.bind(1, job.trial)
        .bind(2, entry.epoch)
        .bind(3, job.job_id)
        .bind(4, entry.test_accuracy)
        .bind(5, entry.test_loss)
        .bind(6, entry.train_loss)
        .bind(7, entry.epoch_seconds)
        .run();
  }
  Statement(database_,
            "UPDATE trials SET status = ?2, rung = ?3, budget = ?4, metric = ?5, steps = ?6, "
            "wall_seconds = wall_seconds + (?7 - (SELECT started FROM jobs WHERE job_id = ?8)), updated = ?7 "
            "WHERE trial_id = ?1")
      .bind(1, job.trial)
      .bind(2, std::string(job.completed ? "completed" : "paused"))
      .bind(3, job.rung)
      .bind(4, job.budget)
      .bind(5, job.metric)
      .bind(6, job.end_step)
      .bind(7, job.finished)
      .bind(8, job.job_id)
      .run();
  Statement(database_, "UPDATE workers SET speed = ?2 WHERE worker = ?1")
      .bind(1, job.worker)
      .bind(2, job.worker_speed)
      .run();
  add_busy_time(job.job_id, job.worker, job.finished);
  transaction.commit();
}

void ResultsStore::fail_job(std::int64_t job_id, int trial, const std::string& message, double finished) {
  Transaction transaction(database_);
  Statement(database_,
            "UPDATE jobs SET status = 'failed', message = ?2, finished = ?3, wall_seconds = ?3 - started "
            "WHERE job_id = ?1")
      .bind(1, job_id)
      .bind(2, message)
      .bind(3, finished)
      .run();
  Statement(database_, "UPDATE trials SET status = 'failed', updated = ?2 WHERE trial_id = ?1")
      .bind(1, trial)
      .bind(2, finished)
      .run();
  transaction.commit();
}

std::vector<std::pair<int, int>> ResultsStore::interrupt_running(double now) {
  Transaction transaction(database_);
  std::vector<std::pair<int, int>> interrupted;
  {
    Statement statement(database_,
                        "SELECT trial_id, rung FROM jobs WHERE status = 'running' ORDER BY job_id");
    while (statement.step())
      interrupted.emplace_back(static_cast<int>(statement.integer(0)),
                               static_cast<int>(statement.integer(1)));
  }
  Statement(database_, "UPDATE jobs SET status = 'interrupted', finished = ?1 WHERE status = 'running'")
      .bind(1, now)
      .run();
  Statement(database_, "UPDATE trials SET status = 'paused', updated = ?1 WHERE status = 'running'")
      .bind(1, now)
      .run();
  transaction.commit();
  return interrupted;
}

void ResultsStore::interrupt_job(std::int64_t job_id, int trial, std::int64_t start_step,
                                 std::int64_t end_step, const std::string& resumed_from, double finished) {
  Transaction transaction(database_);
  end_job(job_id, "interrupted", start_step, end_step, resumed_from, finished);
  Statement(database_, "UPDATE trials SET status = 'paused', updated = ?2 WHERE trial_id = ?1")
      .bind(1, trial)
      .bind(2, finished)
      .run();
  transaction.commit();
}

void ResultsStore::lose_job(std::int64_t job_id, int trial, double finished) {
  Transaction transaction(database_);
  Statement(database_,
            "UPDATE jobs SET status = 'interrupted', finished = ?2, wall_seconds = ?2 - started WHERE job_id = ?1")
      .bind(1, job_id)
      .bind(2, finished)
      .run();
  Statement(database_, "UPDATE trials SET status = 'paused', updated = ?2 WHERE trial_id = ?1")
      .bind(1, trial)
      .bind(2, finished)
      .run();
  transaction.commit();
}

std::vector<std::pair<int, int>> ResultsStore::interrupted_jobs() const {
  std::vector<std::pair<int, int>> jobs;
  Statement statement(database_,
                      "SELECT trial_id, rung FROM jobs WHERE status = 'interrupted' AND job_id IN "
                      "(SELECT MAX(job_id) FROM jobs GROUP BY trial_id) ORDER BY job_id");
  while (statement.step())
    jobs.emplace_back(static_cast<int>(statement.integer(0)), static_cast<int>(statement.integer(1)));
  return jobs;
}

RecordedProgress ResultsStore::progress() const {
  RecordedProgress progress;
  {
    Statement statement(database_, "SELECT trial_id FROM trials");
    while (statement.step()) progress.trials.push_back(static_cast<int>(statement.integer(0)));
  }
  {
    Statement statement(database_, "SELECT trial_id FROM trials WHERE status = 'failed' ORDER BY trial_id");
    while (statement.step()) progress.failed_trials.push_back(static_cast<int>(statement.integer(0)));
  }
  {
    Statement statement(database_, "SELECT DISTINCT trial_id, rung FROM jobs WHERE rung > 0");
    while (statement.step())
      progress.promotions.emplace_back(static_cast<int>(statement.integer(0)),
                                       static_cast<int>(statement.integer(1)));
  }
  {
    // In the order they were recorded: ASHA's stopping rule decided each against those before it.
    Statement statement(database_, "SELECT trial_id, rung, metric FROM rung_results ORDER BY rowid");
    while (statement.step())
      progress.rung_results.push_back({static_cast<int>(statement.integer(0)),
                                       static_cast<int>(statement.integer(1)), statement.real(2)});
  }
  progress.interrupted = interrupted_jobs();
  {
    Statement statement(database_, "SELECT trial_id, parameter_values FROM proposals ORDER BY trial_id");
    while (statement.step()) {
      auto& values = progress.parameters[static_cast<int>(statement.integer(0))];
      for (const auto& pair : nlohmann::json::parse(statement.text(1)))
        values.emplace_back(pair.at(0).get<std::string>(), pair.at(1).get<std::string>());
    }
  }
  return progress;
}

void ResultsStore::stop_paused() {
  database_.execute("UPDATE trials SET status = 'stopped' WHERE status = 'paused'");
}

}  // namespace phalanx::sweep
