// HDF5's own clean-up at process exit, which phalanx turns off.
//
// HDF5 registers an atexit handler that closes every file still open and frees its free lists.
// A file whose writes failed (a full disk during an import) is one HDF5 1.10 cannot close: its
// handler then crashes (a segfault in H5F__close_cb) after phalanx has already printed the error
// and removed the temporary file, turning exit status 1 into 139. phalanx closes every file it
// opens itself (RAII handles), so the handler has nothing of phalanx's left to do.
#pragma once

namespace phalanx::data {

// Before any other HDF5 call of the process (the start of `phalanx`'s main): H5dont_atexit.
void skip_hdf5_exit_handler();

}  // namespace phalanx::data
