// Fabric presets from published figures (each with its source; docs/SCALING.md lists them) and the
// JSON fabric file for any other system.
#include "phalanx/scaling/fabric.hpp"

#include <filesystem>

#include "json_fields.hpp"

namespace phalanx::scaling {
namespace {

constexpr double gbit = 1e9 / 8;  // bytes per second in one Gbit/s
constexpr double gbyte = 1e9;
// What a fabric file may say: from 1 MB/s (a slow lab link) to a thousand times today's fastest
// links, and up to a second per network step; refused beyond, as a slip in the file.
constexpr Bounds intra_node_gbytes_bounds{1e-3, 1e6};
constexpr Bounds network_gbit_bounds{1e-2, 1e7};
constexpr Bounds network_latency_us_bounds{0, 1e6};
// As many NICs as GPUs a node may have (most_gpus_per_node).
constexpr std::int64_t most_interfaces_per_node = 1024;
// CUDA's compute capabilities run from 1.0 to 12.x today; past 100 a slip.
constexpr Bounds compute_capability_bounds{1, 100};

Fabric preset(std::string name, std::string source, IntraNodeLink link, double intra_gbytes,
              double network_gbit_per_node, int interfaces_per_node, double network_gbit_per_gpu,
              double compute_capability) {
  Fabric fabric;
  fabric.network_interfaces_per_node = interfaces_per_node;
  fabric.gpu_compute_capability = compute_capability;
  fabric.name = std::move(name);
  fabric.source = std::move(source);
  fabric.intra_node_link = link;
  fabric.intra_node_bandwidth = intra_gbytes * gbyte;
  fabric.network_bandwidth_per_node = network_gbit_per_node * gbit;
  fabric.network_bandwidth_per_gpu = network_gbit_per_gpu * gbit;
  return fabric;
}

std::vector<Fabric> presets() {
  // Intra-node figures are one direction of the GPU's links: the datasheets quote both directions.
  return {
      preset("roce-25g",
             "25 Gbit/s RoCE per server (Sergeev & Del Balso 2018, Horovod); Pascal GPUs on PCIe 3.0 x16 "
             "within the server, 15.75 GB/s (PCI-SIG)",
             IntraNodeLink::Pcie, 15.75, 25, 1, 0, 6.0),
      preset("ethernet-50g",
             "50 Gbit/s Ethernet per Big Basin server (Goyal et al. 2017); P100 NVLink 1.0, 4 links x "
             "20 GB/s (NVIDIA Tesla P100 datasheet)",
             IntraNodeLink::NvLink, 80, 50, 1, 0, 6.0),
      preset("ib-4x100g",
             "4 x 100 Gbit/s InfiniBand per node (PyTorch DDP benchmark README); V100 NVLink 2.0, 6 links "
             "x 25 GB/s (NVIDIA Tesla V100 datasheet)",
             IntraNodeLink::NvLink, 150, 400, 4, 0, 7.0),
      preset("ndr-400g",
             "NDR InfiniBand 400 Gbit/s per GPU (NVIDIA DGX H100: 8 ConnectX-7); H100 NVLink 4 over "
             "NVSwitch, 900 GB/s both directions (NVIDIA H100 datasheet)",
             IntraNodeLink::NvLink, 450, 0, 1, 400, 9.0),
      preset("nvlink-h100",
             "H100 NVLink 4 over NVSwitch within one node, 900 GB/s both directions (NVIDIA H100 datasheet)",
             IntraNodeLink::NvLink, 450, 0, 1, 0, 9.0),
      preset("nvlink-h200",
             "H200 NVLink over NVSwitch within one node, 900 GB/s both directions (NVIDIA H200 datasheet)",
             IntraNodeLink::NvLink, 450, 0, 1, 0, 9.0),
  };
}

}  // namespace

std::vector<std::string> fabric_preset_names() {
  std::vector<std::string> names;
  for (const Fabric& fabric : presets()) names.push_back(fabric.name);
  return names;
}

Fabric find_fabric(const std::string& name_or_path) {
  for (const Fabric& fabric : presets())
    if (fabric.name == name_or_path) return fabric;
  // The non-throwing form: a link that loops, or a name too long, is an input error naming it.
  std::error_code error;
  const bool exists = std::filesystem::exists(name_or_path, error);
  PHALANX_REQUIRE_INPUT(!error, "--fabric ", name_or_path, ": ", error.message());
  if (!exists) {
    std::string known;
    for (const std::string& name : fabric_preset_names()) known += (known.empty() ? "" : ", ") + name;
    PHALANX_REQUIRE_INPUT(false, "--fabric: '", name_or_path, "' is neither a preset (", known,
                          ") nor a fabric file");
  }
  return read_fabric_file(name_or_path);
}

Fabric read_fabric_file(const std::string& path) {
  const nlohmann::json json = read_json_file(path, "fabric file");
  Fabric fabric;
  fabric.name = path;
  fabric.source = optional_text(json, "source", path, "");
  const std::string link = optional_text(json, "intra_node_link", path, "");
  PHALANX_REQUIRE_INPUT(link == "nvlink" || link == "pcie", path,
                        ": field 'intra_node_link' must be \"nvlink\" or \"pcie\"",
                        link.empty() ? " (missing)" : " (got \"" + link + "\")");
  fabric.intra_node_link = link == "nvlink" ? IntraNodeLink::NvLink : IntraNodeLink::Pcie;
  fabric.intra_node_bandwidth =
      required_number(json, "intra_node_gbytes_per_second", path, "", intra_node_gbytes_bounds) * gbyte;
  const auto per_node =
      optional_number(json, "network_gbit_per_second_per_node", path, "", network_gbit_bounds);
  const auto per_gpu =
      optional_number(json, "network_gbit_per_second_per_gpu", path, "", network_gbit_bounds);
  PHALANX_REQUIRE_INPUT(!(per_node && per_gpu), path,
                        ": give one of the fields 'network_gbit_per_second_per_node' and "
                        "'network_gbit_per_second_per_gpu', not both");
  fabric.network_bandwidth_per_node = per_node.value_or(0) * gbit;
  if (json.contains("network_interfaces_per_node")) {
    PHALANX_REQUIRE_INPUT(
        per_node.has_value(), path,
        ": field 'network_interfaces_per_node' shares 'network_gbit_per_second_per_node' "
        "among the node's NICs; give that figure with it (a per-GPU figure is one NIC per GPU)");
    fabric.network_interfaces_per_node = static_cast<int>(
        required_count(json, "network_interfaces_per_node", path, "", 1, most_interfaces_per_node));
  }
  fabric.network_bandwidth_per_gpu = per_gpu.value_or(0) * gbit;
  fabric.network_latency =
      optional_number(json, "network_latency_us", path, "", network_latency_us_bounds).value_or(0) * 1e-6;
  fabric.gpu_compute_capability =
      optional_number(json, "gpu_compute_capability", path, "", compute_capability_bounds)
          .value_or(fabric.gpu_compute_capability);
  for (const auto& [key, value] : json.items()) {
    static const char* const known[] = {"source",
                                        "intra_node_link",
                                        "intra_node_gbytes_per_second",
                                        "network_gbit_per_second_per_node",
                                        "network_gbit_per_second_per_gpu",
                                        "network_latency_us",
                                        "gpu_compute_capability",
                                        "network_interfaces_per_node",
                                        "name"};
    bool found = false;
    for (const char* name : known) found = found || key == name;
    PHALANX_REQUIRE_INPUT(found, path, ": unknown field '", key, "'");
  }
  if (const std::string name = optional_text(json, "name", path, ""); !name.empty())
    fabric.name = name + " (" + path + ")";
  return fabric;
}

}  // namespace phalanx::scaling
