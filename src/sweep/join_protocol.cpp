// The join handshake and frames (see join_protocol.hpp).
#include "phalanx/sweep/join_protocol.hpp"

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "phalanx/config/config.hpp"
#include "phalanx/core/atomic_file.hpp"
#include "phalanx/core/error.hpp"
#include "phalanx/sweep/coordinator.hpp"

namespace phalanx::sweep {

std::string join_file(const std::string& sweep_directory) { return sweep_directory + "/join.json"; }

void write_join_file(const std::string& sweep_directory, const JoinAddress& address) {
  const nlohmann::json file = {
      {"host", address.host}, {"addresses", address.addresses}, {"port", address.port}, {"token", address.token}};
  write_file_atomically(join_file(sweep_directory), file.dump(1) + "\n");
}

JoinAddress read_join_file(const std::string& sweep_directory) {
  const std::string path = join_file(sweep_directory);
  std::ifstream stream(path);
  PHALANX_REQUIRE_INPUT(stream.good(), "--join ", sweep_directory, ": no sweep is running there (", path,
                        " does not exist; a running `phalanx sweep` writes it at its start and removes it "
                        "at its end)");
  std::stringstream text;
  text << stream.rdbuf();
  nlohmann::json file;
  try {
    file = nlohmann::json::parse(text.str());
  } catch (const nlohmann::json::exception& error) {
    throw_input_error(path + ": not a sweep's join file (" + error.what() + ")");
  }
  PHALANX_REQUIRE_INPUT(file.is_object(), path, ": not a sweep's join file (a JSON object is expected)");
  // Each field checked on its own, so that the message names it; a port is checked as the integer
  // written, not after a conversion that would wrap or truncate it.
  const auto text_field = [&](const char* name) {
    PHALANX_REQUIRE_INPUT(file.contains(name) && file[name].is_string(), path, ": field '", name,
                          "' must be a string",
                          file.contains(name) ? ", not " + file[name].dump() : " (missing)");
    return file[name].get<std::string>();
  };
  JoinAddress address;
  address.host = text_field("host");
  address.token = text_field("token");
  if (file.contains("addresses")) {
    const auto& addresses = file["addresses"];
    PHALANX_REQUIRE_INPUT(
        addresses.is_array() && std::all_of(addresses.begin(), addresses.end(),
                                            [](const auto& entry) { return entry.is_string(); }),
        path, ": field 'addresses' must be a list of strings, not ", addresses.dump());
    address.addresses = addresses.get<std::vector<std::string>>();
  }
  PHALANX_REQUIRE_INPUT(file.contains("port"), path, ": field 'port' is missing");
  const auto& port = file["port"];
  PHALANX_REQUIRE_INPUT(
      port.is_number_integer() && port.get<std::int64_t>() > 0 && port.get<std::int64_t>() < 65536, path,
      ": field 'port' is ", port.dump(), ", not a TCP port (an integer from 1 to 65535)");
  address.port = port.get<int>();
  return address;
}

std::string encode_join_request(const JoinRequest& request) {
  return nlohmann::json{{"type", "join"},
                        {"token", request.token},
                        {"version", request.version},
                        {"commit", request.commit},
                        {"definition", request.definition},
                        {"host", request.host},
                        {"groups", request.groups}}
      .dump();
}

JoinRequest decode_join_request(const std::string& text) {
  JoinRequest request;
  try {
    const auto message = nlohmann::json::parse(text);
    PHALANX_REQUIRE_INPUT(message.at("type") == "join", "the first frame is '",
                          message.at("type").get<std::string>(), "', not a join request");
    request.token = message.at("token").get<std::string>();
    request.version = message.at("version").get<std::string>();
    request.commit = message.at("commit").get<std::string>();
    request.definition = message.at("definition").get<std::string>();
    request.host = message.at("host").get<std::string>();
    request.groups = message.at("groups").get<int>();
  } catch (const nlohmann::json::exception& error) {
    throw_input_error(std::string("not a join request: ") + error.what());
  }
  return request;
}

std::string join_refusal(const JoinRequest& request, const std::string& token, const std::string& definition,
                         const BuildStamp& build) {
  // The token first: a job without it learns nothing about the sweep.
  if (request.token != token) return "the token does not match this sweep's join.json";
  if (request.version != build.version || request.commit != build.git_commit)
    return "the sweep runs phalanx " + build.version + " (commit " + build.git_commit + "), this job phalanx " +
           request.version + " (commit " + request.commit + "): every job of a sweep must run the same build";
  if (request.definition != definition)
    return "this job's sweep differs from the running sweep's: " +
           sweep_definition_difference(request.definition, definition, "in the running sweep");
  if (request.groups <= 0) return "the job has no worker group to bring";
  return "";
}

std::string welcome_message(int first_worker) {
  return nlohmann::json{{"type", "welcome"}, {"first_worker", first_worker}}.dump();
}

std::string refusal_message(const std::string& reason) {
  return nlohmann::json{{"type", "refused"}, {"message", reason}}.dump();
}

std::string to_worker_frame(int worker, const std::string& text) {
  return nlohmann::json{{"worker", worker}, {"message", text}}.dump();
}

std::string leave_message() { return nlohmann::json{{"type", "leave"}}.dump(); }

}  // namespace phalanx::sweep
