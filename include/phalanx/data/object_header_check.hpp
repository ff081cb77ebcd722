// The object-header check: phalanx reads the HDF5 object header of each object it is about to
// open or look into in a user's file (a dataset, a data.source file, a checkpoint) and checks
// that every message HDF5 will decode holds what its own sizes say, before HDF5 decodes it.
// HDF5 1.10 decodes an attribute message at the sizes the message states (its name, datatype,
// dataspace and value), not bounded by the message: a damaged header made it copy past the
// message and crash (docs/HARDENING.md). Looking up any one attribute decodes all of an object's
// attribute messages, so the check covers the whole header: attribute, datatype, dataspace, fill
// value, layout and filter pipeline messages, and the continuation chunks that hold more.
// Internal to phalanx (the data module and the checkpoint reader); callers hold the HDF5 lock
// (hdf5_lock.hpp).
#pragma once

#include <hdf5.h>

#include <string>

#include "phalanx/data/hdf5_handle.hpp"

namespace phalanx::data::detail {

// Checks the object header of `name` (a path below `location`; "." for `location` itself) in the
// file `path`, which `location` belongs to. Throws an input error naming the file, the object
// and the message when a message does not hold what it says (".../a.h5: /state/epoch: object
// header at byte 4096: message 2 (attribute) \"checksum\": its value of 1 element of 8 bytes runs
// past the message (0 bytes left) (file corrupt?)"), or when `name` leads to a header HDF5 cannot
// read at all. Does nothing when `name` leads to no object (the caller's own lookup then reports
// it missing) or the file is not one HDF5 can describe through its public calls.
void check_object_header(hid_t location, const std::string& name, const std::string& path);

// H5Dopen2 of `name` below `location` once its object header checks out; invalid when HDF5
// cannot open it (the caller says why in its own words, as before).
Hdf5Handle open_checked_dataset(hid_t location, const std::string& name, const std::string& path);

// Why HDF5 must not open the file open as `descriptor`, or empty: its root group's object header,
// which HDF5 1.10 loads inside H5Fopen (so before check_object_header can run), has a chunk that
// lies past the file's end (HDF5 allocates each chunk at its stated size before reading it: a
// damaged continuation length made it ask for 4 GB for a file of 22 KB) or does not hold together
// (continuation chunks that loop, a message past its chunk). The checked file driver asks on open.
std::string root_header_problem(int descriptor);

}  // namespace phalanx::data::detail
