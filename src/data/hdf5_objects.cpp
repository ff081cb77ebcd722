// hdf5_objects.hpp in the API of the HDF5 built in: 1.12 and later (tokens, H5O_info2_t and the
// calls of version 3), or 1.10 (addresses, H5O_info_t and the calls of version 2). The calls are
// named by their version, so an HDF5 built to map the plain names to older versions changes nothing.
#include "phalanx/data/hdf5_objects.hpp"

#include <exception>

namespace phalanx::data::detail {
namespace {

#if H5_VERSION_GE(1, 12, 0)
using ObjectInfo = H5O_info2_t;
#else
using ObjectInfo = H5O_info_t;
#endif

struct Visit {
  const std::function<herr_t(const char*, H5O_type_t)>& visitor;
  std::exception_ptr error;
};

herr_t visit_one(hid_t, const char* name, const ObjectInfo* info, void* data) noexcept {
  auto& visit = *static_cast<Visit*>(data);
  try {
    return visit.visitor(name, info->type);
  } catch (...) {
    visit.error = std::current_exception();
    return -1;
  }
}

}  // namespace

std::optional<ObjectFacts> object_facts(hid_t location, const char* name) {
  ObjectInfo info{};
  ObjectFacts facts;
#if H5_VERSION_GE(1, 12, 0)
  if (H5Oget_info_by_name3(location, name, &info, H5O_INFO_BASIC, H5P_DEFAULT) < 0 ||
      H5VLnative_token_to_addr(location, info.token, &facts.header_address) < 0)
    return std::nullopt;
#else
  if (H5Oget_info_by_name2(location, name, &info, H5O_INFO_BASIC, H5P_DEFAULT) < 0) return std::nullopt;
  facts.header_address = info.addr;
#endif
  facts.type = info.type;
  facts.file_number = info.fileno;
  return facts;
}

std::optional<haddr_t> hard_link_address(hid_t location, const char* name) {
#if H5_VERSION_GE(1, 12, 0)
  H5L_info2_t link{};
  haddr_t address = HADDR_UNDEF;
  if (H5Lget_info2(location, name, &link, H5P_DEFAULT) < 0 || link.type != H5L_TYPE_HARD ||
      H5VLnative_token_to_addr(location, link.u.token, &address) < 0)
    return std::nullopt;
  return address;
#else
  H5L_info_t link{};
  if (H5Lget_info(location, name, &link, H5P_DEFAULT) < 0 || link.type != H5L_TYPE_HARD) return std::nullopt;
  return link.u.address;
#endif
}

herr_t visit_objects(hid_t object, const std::function<herr_t(const char* name, H5O_type_t type)>& visitor) {
  Visit visit{visitor, {}};
#if H5_VERSION_GE(1, 12, 0)
  const herr_t status = H5Ovisit3(object, H5_INDEX_NAME, H5_ITER_INC, visit_one, &visit, H5O_INFO_BASIC);
#else
  const herr_t status = H5Ovisit2(object, H5_INDEX_NAME, H5_ITER_INC, visit_one, &visit, H5O_INFO_BASIC);
#endif
  if (visit.error) std::rethrow_exception(visit.error);
  return status;
}

}  // namespace phalanx::data::detail
