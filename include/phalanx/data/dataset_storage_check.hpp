// The storage check: before phalanx reads a dataset of a user's HDF5 file, it compares what the
// dataset's header and chunk index say is stored with what the dataset's extent and type need.
// HDF5 1.10 sizes its own buffers from those stored sizes and then copies what the extent needs
// out of them, without comparing the two: a compact dataset whose layout message holds fewer bytes
// than its values, or an unfiltered chunk whose index record states fewer bytes than a chunk
// holds, makes H5Dread read past a buffer HDF5 allocated (docs/HARDENING.md). Everything is
// asked through HDF5's public API, but for the chunk index of a dataset of many chunks (below);
// nothing is read from the dataset's values.
// Internal to phalanx (the data module and the checkpoint reader); callers hold the HDF5 lock
// (hdf5_lock.hpp).
#pragma once

#include <hdf5.h>

#include <cstdint>
#include <string>

namespace phalanx::data::detail {

// Chunked datasets of at most this many stored chunks have every chunk index record checked
// through HDF5's record queries. HDF5 1.10 hands out a record only by its position, walking the
// index from its start each time, so that costs n^2/2 steps of the walk (about 0.1 s for 4,096
// records); the records of larger datasets are read from the file in one pass when they are in
// HDF5's default index (a version 1 B-tree), and left to HDF5 in the indexes of its newest format
// (docs/HARDENING.md says what that leaves open).
inline constexpr std::uint64_t largest_checked_chunk_count = 4096;

// Why reading `dataset` whole or in part would make HDF5 copy more bytes than its storage holds
// ("its storage holds 1 byte, its 1 value of 8 bytes need 8"), or empty when nothing is wrong.
// Checked: a compact dataset's stored bytes against its values; an allocated contiguous dataset's
// storage against its values; a chunked dataset's chunk rank against its own rank, its filter
// pipeline against the ones phalanx decodes (checked_chunk_decoding.hpp), and the stored size of
// each chunk its compressor did not go through (no compressor, or one skipped for that chunk)
// against a chunk's bytes, with 4 more for a Fletcher-32 checksum (which no record may lack room
// for). Values are sized as the file stores them (stored_value_bytes).
std::string dataset_storage_problem(hid_t dataset);

// Throws phalanx's input error "<place>: <problem> (file corrupt?)" when dataset_storage_problem
// finds one; `place` names the file and the dataset ("run/step-11.h5: /state/epoch").
void require_sound_dataset_storage(hid_t dataset, const std::string& place);

// Why `dataset` holds values it was never given, or empty: a contiguous dataset with no storage,
// or a chunked one with fewer chunks stored than its shape needs. HDF5 reads the fill value (zeros)
// there, so a dataset whose writer stopped, or one whose shape a damaged header enlarged, would
// train as blank images with label 0; data, unlike a checkpoint being edited, is always written
// whole. Compact datasets always store their values.
std::string unwritten_storage_problem(hid_t dataset);

}  // namespace phalanx::data::detail
