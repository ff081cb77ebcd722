// The checked file driver: the HDF5 file driver every serial read of a user's HDF5 file goes
// through (datasets, data.source files, `data inspect`, checkpoints). It reads as HDF5's own sec2
// driver does (pread on one descriptor, which H5Fget_vfd_handle hands out), and it checks each global heap
// collection (where HDF5 keeps variable-length strings such as a dataset's class names) before
// HDF5 parses it: HDF5 1.10 walks a collection's objects by their stored sizes and never gets
// past one of size 0, so a damaged collection would hang the reader instead of failing it
// (docs/HARDENING.md). A collection whose objects do not each move forward and stay inside it is
// refused; the read fails and HDF5 returns an error the caller turns into an input error.
// Internal to phalanx (the data module and the checkpoint reader); callers hold the HDF5 lock
// (hdf5_lock.hpp).
#pragma once

#include <string>

#include "phalanx/data/hdf5_handle.hpp"

namespace phalanx::data::detail {

// A new file-access property list that opens files read-only through the checked driver. The
// driver is registered with HDF5 on first use and unregistered when the process exits.
Hdf5Handle checked_file_access();

// The POSIX descriptor of `file` when it is open through the checked driver, else -1: for reads
// of phalanx's own beside HDF5's (the object-header check), which then need no second open.
int checked_file_descriptor(hid_t file);

// Why the checked driver refused the read under the HDF5 call that just failed ("the global heap
// collection at byte 2048 is damaged: ..."), from HDF5's error stack; empty when it refused none.
// Call it right after the failed call: the next HDF5 call clears the stack.
std::string checked_file_refusal();

// The one wording of a failed read of `place` ("attribute \"format\" of /") for an input error:
// "<place>: cannot be read: <refusal> (file corrupt?)", or without ": <refusal>" when it is empty.
std::string unreadable_message(const std::string& place, const std::string& refusal);

}  // namespace phalanx::data::detail
