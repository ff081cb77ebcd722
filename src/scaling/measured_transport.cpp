// A profile's measured all-reduce transport (see measured_transport.hpp).
#include "phalanx/scaling/measured_transport.hpp"

#include "json_fields.hpp"

namespace phalanx::scaling {

MeasuredTransport read_measured_transport(const std::string& profile_path, const std::string& name) {
  const nlohmann::json json = read_json_file(profile_path, "profile");
  const auto transports = json.find("transports");
  PHALANX_REQUIRE_INPUT(
      transports != json.end() && transports->is_array(), profile_path,
      ": field 'transports' is missing or not a list (run `bench calibrate` under mpirun -np N, "
      "N >= 2)");
  std::string known;
  for (std::size_t index = 0; index < transports->size(); ++index) {
    const nlohmann::json& entry = (*transports)[index];
    const std::string where = "transports[" + std::to_string(index) + "].";
    PHALANX_REQUIRE_INPUT(entry.is_object(), profile_path, ": field '", where, "' must be an object");
    const std::string entry_name = optional_text(entry, "name", profile_path, where);
    known += (known.empty() ? "" : ", ") + entry_name;
    if (entry_name != name) continue;
    MeasuredTransport transport;
    transport.name = name;
    transport.profile = profile_path;
    transport.ranks = static_cast<int>(required_number(entry, "ranks", profile_path, where));
    transport.latency = required_number(entry, "latency_seconds", profile_path, where, false);
    transport.seconds_per_byte = required_number(entry, "seconds_per_byte", profile_path, where);
    return transport;
  }
  PHALANX_REQUIRE_INPUT(false, profile_path, ": field 'transports' has no transport named '", name,
                        "' (it has: ", known.empty() ? "none" : known, ")");
  return {};
}

AllreduceEstimate estimate_allreduce(const MeasuredTransport& transport, std::size_t bytes) {
  AllreduceEstimate estimate;
  estimate.algorithm = Algorithm::Ring;
  estimate.protocol = Protocol::Simple;
  estimate.latency = transport.latency;
  estimate.bandwidth = 1.0 / transport.seconds_per_byte;
  estimate.seconds =
      transport.ranks > 1 ? transport.latency + static_cast<double>(bytes) * transport.seconds_per_byte : 0.0;
  return estimate;
}

}  // namespace phalanx::scaling
