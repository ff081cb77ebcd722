// SQLite handles (see database.hpp). The sweep database is written by one thread of one process
// (the coordinator), so the default serialized mode and a rollback journal are all it needs;
// synchronous=FULL makes each commit durable before the coordinator acts on it.
#include "phalanx/sweep/database.hpp"

#include <sqlite3.h>

#include "phalanx/core/error.hpp"

namespace phalanx::sweep {

Database::Database(std::string path, bool create) : path_(std::move(path)) {
  const int flags = SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0) | SQLITE_OPEN_FULLMUTEX;
  const int status = sqlite3_open_v2(path_.c_str(), &handle_, flags, nullptr);
  if (status != SQLITE_OK) {
    const std::string message = handle_ ? sqlite3_errmsg(handle_) : sqlite3_errstr(status);
    sqlite3_close(handle_);
    handle_ = nullptr;
    throw_input_error(path_ + ": cannot open the sweep database: " + message);
  }
  // The destructor does not run for a constructor that throws: the handle is closed here then.
  try {
    sqlite3_busy_timeout(handle_, 10000);
    // SQLite reads the file's header only now: a file that is not a database (or a damaged one) is
    // bad input naming it, not an internal error.
    char* message = nullptr;
    const int checked = sqlite3_exec(handle_, "PRAGMA schema_version", nullptr, nullptr, &message);
    const std::string text = message ? message : sqlite3_errstr(checked);
    sqlite3_free(message);
    if (checked == SQLITE_NOTADB || checked == SQLITE_CORRUPT)
      throw_input_error(path_ + ": is not a sweep database SQLite can read (" + text +
                        "); move it aside to start the sweep afresh");
    if (checked != SQLITE_OK) throw_input_error(path_ + ": cannot read the sweep database (" + text + ")");
    execute("PRAGMA synchronous = FULL");
    execute("PRAGMA foreign_keys = ON");
  } catch (...) {
    sqlite3_close(handle_);
    handle_ = nullptr;
    throw;
  }
}

Database::~Database() {
  sqlite3_close(handle_);
}

void Database::fail(const std::string& what) const {
  throw_internal_error(path_ + ": " + what + ": " + sqlite3_errmsg(handle_), __FILE__, __LINE__);
}

void Database::execute(const std::string& sql) const {
  char* message = nullptr;
  if (sqlite3_exec(handle_, sql.c_str(), nullptr, nullptr, &message) != SQLITE_OK) {
    const std::string text = message ? message : "unknown error";
    sqlite3_free(message);
    throw_internal_error(path_ + ": " + text + " (in: " + sql.substr(0, 80) + ")", __FILE__, __LINE__);
  }
}

nlohmann::json Database::rows(const std::string& sql) const {
  Statement statement(*this, sql);
  nlohmann::json result = nlohmann::json::array();
  while (statement.step()) result.push_back(statement.row());
  return result;
}

std::int64_t Database::last_insert_id() const {
  return sqlite3_last_insert_rowid(handle_);
}

Statement::Statement(const Database& database, const std::string& sql) : database_(database) {
  if (sqlite3_prepare_v2(database_.handle(), sql.c_str(), -1, &statement_, nullptr) != SQLITE_OK)
    database_.fail("cannot prepare '" + sql.substr(0, 80) + "'");
}

Statement::~Statement() {
  sqlite3_finalize(statement_);
}

Statement& Statement::bind(int index, std::int64_t value) {
  if (sqlite3_bind_int64(statement_, index, value) != SQLITE_OK) database_.fail("bind");
  return *this;
}
Statement& Statement::bind(int index, double value) {
  if (sqlite3_bind_double(statement_, index, value) != SQLITE_OK) database_.fail("bind");
  return *this;
}
Statement& Statement::bind(int index, const std::string& value) {
  if (sqlite3_bind_text(statement_, index, value.data(), static_cast<int>(value.size()), SQLITE_TRANSIENT) !=
      SQLITE_OK)
    database_.fail("bind");
  return *this;
}
Statement& Statement::bind_null(int index) {
  if (sqlite3_bind_null(statement_, index) != SQLITE_OK) database_.fail("bind");
  return *this;
}

bool Statement::step() {
  const int status = sqlite3_step(statement_);
  if (status == SQLITE_ROW) return true;
  if (status == SQLITE_DONE) return false;
  database_.fail("query failed");
}

void Statement::run() {
  while (step()) {
  }
  sqlite3_reset(statement_);
}

std::int64_t Statement::integer(int column) const {
  return sqlite3_column_int64(statement_, column);
}
double Statement::real(int column) const {
  return sqlite3_column_double(statement_, column);
}
std::string Statement::text(int column) const {
  const auto* bytes = sqlite3_column_text(statement_, column);
  return bytes ? std::string(reinterpret_cast<const char*>(bytes),
                             static_cast<std::size_t>(sqlite3_column_bytes(statement_, column)))
               : std::string();
}
bool Statement::is_null(int column) const {
  return sqlite3_column_type(statement_, column) == SQLITE_NULL;
}

nlohmann::json Statement::row() const {
  nlohmann::json result = nlohmann::json::object();
  const int columns = sqlite3_column_count(statement_);
  for (int column = 0; column < columns; ++column) {
    const std::string name = sqlite3_column_name(statement_, column);
    switch (sqlite3_column_type(statement_, column)) {
      case SQLITE_INTEGER: result[name] = integer(column); break;
      case SQLITE_FLOAT: result[name] = real(column); break;
      case SQLITE_NULL: result[name] = nullptr; break;
      default: result[name] = text(column); break;
    }
  }
  return result;
}

Transaction::Transaction(const Database& database) : database_(database) {
  database_.execute("BEGIN IMMEDIATE");
}

Transaction::~Transaction() {
  if (open_) sqlite3_exec(database_.handle(), "ROLLBACK", nullptr, nullptr, nullptr);
}

void Transaction::commit() {
  database_.execute("COMMIT");
  open_ = false;
}

}  // namespace phalanx::sweep
