// What phalanx asks HDF5 of objects and links by name, in one form for every HDF5 it builds with:
// HDF5 1.12 names an object by a token where 1.10 gave its header's address in the file, and its
// info and visit calls took new forms (a `fields` argument, H5O_info2_t). The header checks read
// headers at their addresses, so the address is what these hand back. Callers hold the HDF5 lock.
#pragma once

#include <hdf5.h>

#include <functional>
#include <optional>

namespace phalanx::data::detail {

struct ObjectFacts {
  H5O_type_t type = H5O_TYPE_UNKNOWN;
  unsigned long file_number = 0;         // HDF5's number of the open file the object is in
  haddr_t header_address = HADDR_UNDEF;  // where its object header starts (from the file's base)
};

// Of the object `name` leads to from `location` ("." is `location` itself); HDF5 loads its header
// to say. nullopt when HDF5 cannot.
std::optional<ObjectFacts> object_facts(hid_t location, const char* name);

// The header address the hard link `name` (from `location`) holds; nullopt when `name` is no hard
// link or HDF5 cannot read it. HDF5 reads only the link, not the header it leads to.
std::optional<haddr_t> hard_link_address(hid_t location, const char* name);

// Every object reachable from `object`, each once, in name order, `object` itself first (named
// "."): `visitor(name, type)` returns 0 to go on, anything else to stop the visit, which returns
// it. An exception from the visitor stops the visit and is rethrown once HDF5 has returned (none
// may unwind through HDF5's C frames).
herr_t visit_objects(hid_t object, const std::function<herr_t(const char* name, H5O_type_t type)>& visitor);

}  // namespace phalanx::data::detail
