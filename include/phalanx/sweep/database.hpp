// SQLite through RAII handles: a Database owns its connection, a Statement its prepared query,
// a Transaction rolls back unless committed. Errors throw with the file and SQLite's message.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

struct sqlite3;
struct sqlite3_stmt;

namespace phalanx::sweep {

class Database;

class Statement {
 public:
  Statement(const Database& database, const std::string& sql);
  ~Statement();
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  // Parameters are numbered from 1, as in SQL's ?1, ?2, ...
  Statement& bind(int index, std::int64_t value);
  Statement& bind(int index, int value) { return bind(index, static_cast<std::int64_t>(value)); }
  Statement& bind(int index, double value);
  Statement& bind(int index, const std::string& value);
  Statement& bind_null(int index);
  // Runs to the next row: true while there is one.
  bool step();
  // Runs a statement that returns no rows.
  void run();
  std::int64_t integer(int column) const;
  double real(int column) const;
  std::string text(int column) const;
  bool is_null(int column) const;
  // The current row as {"column name": value}, with SQL NULL as null.
  nlohmann::json row() const;

 private:
  const Database& database_;
  sqlite3_stmt* statement_ = nullptr;
};

class Database {
 public:
  // Opens (and with `create`, creates) the database file.
  Database(std::string path, bool create);
  ~Database();
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  void execute(const std::string& sql) const;
  // Every row of a query, as row() gives them.
  nlohmann::json rows(const std::string& sql) const;
  std::int64_t last_insert_id() const;
  const std::string& path() const { return path_; }
  sqlite3* handle() const { return handle_; }
  [[noreturn]] void fail(const std::string& what) const;

 private:
  std::string path_;
  sqlite3* handle_ = nullptr;
};

// BEGIN IMMEDIATE on construction; commit() makes it durable, the destructor rolls back an
// uncommitted one (an exception between the writes leaves the database as it was).
class Transaction {
 public:
  explicit Transaction(const Database& database);
  ~Transaction();
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  void commit();

 private:
  const Database& database_;
  bool open_ = true;
};

}  // namespace phalanx::sweep
