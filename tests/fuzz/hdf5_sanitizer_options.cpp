// Linked into the fuzz targets that open HDF5 files (dataset, checkpoint, mapped_source): under
// AddressSanitizer a malloc that cannot be satisfied returns null, as the C library's does, instead
// of ending the process with a report. HDF5 1.10 mallocs the size a damaged file states for an
// object header continuation before it compares it with the file's end (H5C_protect loads such a
// chunk without the end-of-file check it gives speculative reads), so a file claiming 7 * 10^17
// bytes made ASan abort (regressions/checkpoint/hdf5_root_header_size_too_big) where production
// HDF5 gets null, fails the open, and phalanx refuses the file with exit status 2. phalanx's own
// allocations go through operator new (the standard containers), which ASan still reports when it
// fails, whatever this option says: it lets only C code, HDF5 here, see the null it would see
// without the sanitizer. The runtime reads these defaults before ASAN_OPTIONS, which adds to them.
extern "C" const char* __asan_default_options() {
  return "allocator_may_return_null=1";
}
