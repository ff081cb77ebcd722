// The checked file driver (checked_file_driver.hpp says why it exists). An HDF5 file driver is a
// table of callbacks HDF5 calls for every file operation (H5FD_class_t); this one implements what a
// read-only open needs, the way HDF5's sec2 driver does, and checks global heap collections in its
// read callback, the last moment before HDF5 parses them.
#include "phalanx/data/checked_file_driver.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <type_traits>
#include <unordered_set>
#include <vector>

#include "phalanx/core/error.hpp"
#include "phalanx/data/checked_chunk_decoding.hpp"
#include "phalanx/data/dataset.hpp"
#include "phalanx/data/hdf5_lock.hpp"
#include "phalanx/data/object_header_check.hpp"

// The driver class has two layouts: HDF5 1.10 and 1.12's, and from 1.14 (H5FDdevelop.h) version 1
// of the class, marked by H5FD_CLASS_VERSION, with an identifier, vector and selection I/O, delete
// and control callbacks. A later version of the class needs its own fields set here.
#if defined(H5FD_CLASS_VERSION) && H5FD_CLASS_VERSION != 1
#error "checked_file_driver.cpp fills HDF5's file driver class of version 1 (HDF5 1.14); this HDF5's is newer"
#endif

namespace phalanx::data::detail {
namespace {

// The names under which the driver's errors go on HDF5's error stack (H5E_error2_t::func_name):
// a refused collection or root header, which checked_file_refusal() reports, and a failed system
// call.
constexpr const char* refusal_origin = "phalanx checked file driver: check";
constexpr const char* system_origin = "phalanx checked file driver";

// A global heap collection (HDF5 file format specification, "Global Heap"): "GCOL", version 1,
// three reserved bytes and the collection's size in bytes, written with the file's size of lengths
// and padded to 8 bytes; then its objects, each a header (2-byte index, 2-byte reference count,
// 4 reserved bytes, its size, padded to 8 bytes) followed by its data padded to 8 bytes. Index 0
// is free space, whose size counts its own header; a tail too small for a header is free space too.
constexpr unsigned char collection_signature[4] = {'G', 'C', 'O', 'L'};
constexpr unsigned char collection_version = 1;
// HDF5 reads a collection first with this many bytes (H5HG_MINSIZE, also the smallest collection
// it writes), or up to the end of the file's data where that comes sooner; a collection its header
// says is larger has the rest read in a second call.
constexpr std::uint64_t first_collection_read = 4096;
// Past HDF5's first read, a large collection's object headers are read from the file this many
// bytes at a time.
constexpr std::uint64_t collection_window_bytes = 64 * 1024;

// The largest address a file may have: the largest file offset, as sec2 allows.
constexpr haddr_t largest_address = (static_cast<haddr_t>(1) << (8 * sizeof(off_t) - 1)) - 1;
// Linux moves at most this many bytes in one pread.
constexpr std::size_t largest_single_read = 0x7ffff000;

constexpr std::uint64_t aligned_to_8(std::uint64_t bytes) {
  return (bytes + 7) / 8 * 8;
}

// One open file. HDF5 owns the H5FD_t part and hands it to every callback, so it comes first and
// the struct stays standard-layout: the pointer HDF5 holds is then also a pointer to the whole.
struct CheckedFile {
  H5FD_t hdf5;
  int descriptor;
  haddr_t end_of_address;  // where HDF5 says the file's data ends (set_eoa)
  haddr_t end_of_file;     // the file's size when opened, as sec2 reports it
  dev_t device;            // device and inode tell whether two opens are the same file
  ino_t inode;
  bool ignore_disabled_locks;
  // The file's size of lengths from its superblock (2 to 32 bytes), which sets where a collection
  // keeps its sizes; 0 when unknown (the file has no superblock HDF5 would accept).
  unsigned length_bytes;
  // The last collection found sound, [begin, end): reads inside it (HDF5's second read of a large
  // one) are its remainder, not the start of another collection.
  haddr_t checked_begin;
  haddr_t checked_end;
  // The gzip chunks that passed the chunk check (checked_chunk_decoding.hpp), by a hash of their
  // address and stored bytes: a chunk read again (the next epoch of a streamed dataset) is hashed
  // instead of inflated a second time before HDF5 inflates it.
  // Owned like the CheckedFile itself (made on the first gzip chunk, deleted by close_file): a
  // smart pointer here is not standard-layout under every compiler, and HDF5 hands the driver
  // back the H5FD_t at this struct's start.
  std::unordered_set<std::uint64_t>* passed_gzip_chunks;
};
static_assert(std::is_standard_layout_v<CheckedFile>);

CheckedFile& checked(H5FD_t* file) {
  return *reinterpret_cast<CheckedFile*>(file);
}
const CheckedFile& checked(const H5FD_t* file) {
  return *reinterpret_cast<const CheckedFile*>(file);
}

// Never throws (HDF5 calls the callbacks from C); a message that cannot be built is dropped.
void push_error(const char* origin, hid_t minor, const std::string& message) noexcept {
  H5Epush2(H5E_DEFAULT, __FILE__, origin, __LINE__, H5E_ERR_CLS, H5E_VFL, minor, "%s", message.c_str());
}

// A system call that failed, worded as sec2 words it ("..., errno = 5, error message =
// 'Input/output error'"): hdf5_system_reason() finds the reason by that wording, and readers tell
// a failing file system (exit status 1) from a damaged file (exit status 2) by it.
void push_system_error(hid_t minor, const char* what, int error) noexcept {
  try {
    push_error(system_origin, minor,
               std::string(what) + ": errno = " + std::to_string(error) + ", error message = '" +
                   std::strerror(error) + "'");
  } catch (...) {  // std::bad_alloc
  }
}

// Reads `size` bytes at `address` whole, across interrupted and short reads, as sec2 does; bytes
// past the end of the file read as zeros, as HDF5 expects of space it allocated but never wrote
// (the readers check separately that a file did not shrink under them). 0, or the failed read's errno.
int read_whole(int descriptor, haddr_t address, std::size_t size, std::uint8_t* buffer) {
  while (size > 0) {
    ssize_t count = 0;
    do {
      count = pread(descriptor, buffer, std::min(size, largest_single_read), static_cast<off_t>(address));
    } while (count < 0 && errno == EINTR);
    if (count < 0) return errno;
    if (count == 0) {
      std::memset(buffer, 0, size);
      return 0;
    }
    size -= static_cast<std::size_t>(count);
    buffer += count;
    address += static_cast<haddr_t>(count);
  }
  return 0;
}

// A little-endian length of `bytes` bytes; UINT64_MAX (larger than any collection) when it does not
// fit in 64 bits.
std::uint64_t decode_length(const std::uint8_t* field, unsigned bytes) {
  std::uint64_t value = 0;
  for (unsigned index = 0; index < bytes; ++index) {
    if (index >= 8) {
      if (field[index] != 0) return UINT64_MAX;
      continue;
    }
    value |= static_cast<std::uint64_t>(field[index]) << (8 * index);
  }
  return value;
}

// The size of lengths the superblock declares, found where HDF5 looks for it: byte 0, then 512,
// 1024, 2048 and on (files with a user block). 0 when there is no superblock HDF5 would accept
// (HDF5 then refuses to open the file itself).
unsigned superblock_length_bytes(int descriptor, haddr_t end_of_file) {
  constexpr unsigned char signature[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};
  for (haddr_t offset = 0; offset + 16 <= end_of_file; offset = offset == 0 ? 512 : offset * 2) {
    std::uint8_t bytes[16];
    if (read_whole(descriptor, offset, sizeof bytes, bytes) != 0) return 0;
    if (std::memcmp(bytes, signature, sizeof signature) != 0) continue;
    // Superblock versions 0 and 1 keep the size of lengths at byte 14, versions 2 and 3 at byte 10.
    const unsigned length_bytes = bytes[8] < 2 ? bytes[14] : bytes[10];
    const bool valid = length_bytes == 2 || length_bytes == 4 || length_bytes == 8 || length_bytes == 16 ||
                       length_bytes == 32;
    return valid ? length_bytes : 0;
  }
  return 0;
}

// Whether a read is HDF5's first read of a global heap collection. HDF5 1.10 hands those to the
// driver as raw data (H5F_block_read maps H5FD_MEM_GHEAP to H5FD_MEM_DRAW), so they are known by
// what they hold and how long they are: a collection's signature and version, in a read of exactly
// the size HDF5 first reads a collection with.
bool is_first_collection_read(const CheckedFile& file, H5FD_mem_t type, haddr_t address, std::size_t size,
                              const std::uint8_t* bytes) {
  if (type != H5FD_MEM_DRAW && type != H5FD_MEM_GHEAP) return false;
  if (size < 5 || std::memcmp(bytes, collection_signature, 4) != 0 || bytes[4] != collection_version)
    return false;
  if (address > file.checked_begin && address < file.checked_end) return false;
  if (type == H5FD_MEM_GHEAP) return true;
  const std::uint64_t data_left = file.end_of_address > address ? file.end_of_address - address : 0;
  return size == std::min(first_collection_read, data_left);
}

// The bytes of one collection while it is checked: those HDF5 just read, and past them (a
// collection larger than HDF5's first read) the file, a window at a time.
class CollectionBytes {
 public:
  CollectionBytes(const CheckedFile& file, haddr_t address, const std::uint8_t* read, std::size_t read_bytes,
                  std::uint64_t collection_bytes)
      : file_(file),
        address_(address),
        read_(read),
        read_bytes_(read_bytes),
        collection_bytes_(collection_bytes) {}

  // Copies `count` bytes at `offset` into the collection (inside it) to `out`; 0, or the errno of
  // a read of the file that failed.
  int copy(std::uint64_t offset, std::size_t count, std::uint8_t* out) {
    if (offset + count <= read_bytes_) {
      std::memcpy(out, read_ + offset, count);
      return 0;
    }
    if (offset < window_offset_ || offset + count > window_offset_ + window_.size()) {
      window_.resize(
          std::max<std::uint64_t>(count, std::min(collection_window_bytes, collection_bytes_ - offset)));
      window_offset_ = offset;
      if (const int error = read_whole(file_.descriptor, address_ + offset, window_.size(), window_.data()))
        return error;
    }
    std::memcpy(out, window_.data() + (offset - window_offset_), count);
    return 0;
  }

 private:
  const CheckedFile& file_;
  haddr_t address_;
  const std::uint8_t* read_;
  std::uint64_t read_bytes_;
  std::uint64_t collection_bytes_;
  std::vector<std::uint8_t> window_;
  std::uint64_t window_offset_ = 0;
};

struct CollectionVerdict {
  std::uint64_t bytes = 0;  // the collection's size, once known
  std::string damage;       // why HDF5 must not parse it; empty when it may
  int system_error = 0;     // the errno of a read of its remainder that failed
};

// Walks the collection at `address` (its first `read_bytes` bytes are `read`) the way HDF5 will,
// and says whether every object moves the walk forward and stays inside the collection: HDF5 1.10
// loops forever on a free-space object of size 0 (and on sizes whose padding wraps to 0), and
// copies an object that runs past the collection out of memory that is not the collection's.
CollectionVerdict check_collection(const CheckedFile& file, haddr_t address, const std::uint8_t* read,
                                   std::size_t read_bytes) {
  CollectionVerdict verdict;
  const unsigned length_bytes = file.length_bytes;
  // The collection header and every object header take 8 bytes and a length, padded to 8 bytes.
  const std::uint64_t header_bytes = aligned_to_8(8 + length_bytes);
  const std::uint64_t data_left = file.end_of_address > address ? file.end_of_address - address : 0;
  const std::string collection = "the global heap collection at byte " + std::to_string(address);
  if (data_left < 8 + length_bytes) {
    verdict.damage = collection + " is cut off by the end of the file's data";
    return verdict;
  }
  CollectionBytes bytes(file, address, read, read_bytes, data_left);
  std::uint8_t field[40];
  if ((verdict.system_error = bytes.copy(8, length_bytes, field)) != 0) return verdict;
  const std::uint64_t size = decode_length(field, length_bytes);
  verdict.bytes = size;
  if (size > data_left) {
    verdict.damage = collection + " is damaged: its size (" + std::to_string(size) +
                     " bytes) runs past the end of the file's data (" + std::to_string(data_left) +
                     " bytes on)";
    return verdict;
  }
  if (size < header_bytes) {
    verdict.damage = collection + " is damaged: its size (" + std::to_string(size) +
                     " bytes) is smaller than its own header";
    return verdict;
  }
  for (std::uint64_t position = header_bytes; position < size;) {
    if (size - position < header_bytes) break;  // the free-space tail HDF5 leaves without a header
    if ((verdict.system_error = bytes.copy(position, static_cast<std::size_t>(header_bytes), field)) != 0)
      return verdict;
    const unsigned index = field[0] | static_cast<unsigned>(field[1]) << 8;
    const std::uint64_t object_bytes = decode_length(field + 8, length_bytes);
    const std::string object =
        "its object " + std::to_string(index) + " at byte " + std::to_string(address + position);
    if (index == 0) {
      // Free space: HDF5 moves on by exactly its size, which counts its header.
      if (object_bytes == 0) {
        verdict.damage = collection + " is damaged: " + object +
                         " (free space) has size 0, which HDF5 would never get past";
        return verdict;
      }
      if (object_bytes > size - position) {
        verdict.damage = collection + " is damaged: " + object + " (free space) has size " +
                         std::to_string(object_bytes) + ", past the collection's end (" +
                         std::to_string(size) + " bytes)";
        return verdict;
      }
      position += object_bytes;
    } else {
      if (object_bytes > size - position - header_bytes) {
        verdict.damage = collection + " is damaged: " + object + " has size " + std::to_string(object_bytes) +
                         ", past the collection's end (" + std::to_string(size) + " bytes)";
        return verdict;
      }
      position += header_bytes + aligned_to_8(object_bytes);
    }
  }
  return verdict;
}

// Whether a file system without locks (flock answers ENOSYS) may be read unlocked, decided as sec2
// decides it: HDF5_USE_FILE_LOCKING=BEST_EFFORT says yes and TRUE (or 1) no; otherwise the
// property list does (H5Pset_file_locking).
bool ignores_disabled_locks(hid_t file_access) {
  if (const char* setting = std::getenv("HDF5_USE_FILE_LOCKING")) {
    if (std::strcmp(setting, "BEST_EFFORT") == 0) return true;
    if (std::strcmp(setting, "TRUE") == 0 || std::strcmp(setting, "1") == 0) return false;
  }
#if H5_VERSION_GE(1, 10, 7)
  hbool_t use_locks = 0, ignore_when_disabled = 0;
  if (H5Pget_file_locking(file_access, &use_locks, &ignore_when_disabled) >= 0)
    return ignore_when_disabled != 0;
#else
  (void)file_access;
#endif
  return false;
}

// --- The callbacks. HDF5 calls them from C, so none may throw: a failure is an error pushed on
// HDF5's error stack and a failed return, which HDF5 passes up to the caller's HDF5 call.

H5FD_t* open_file(const char* name, unsigned flags, hid_t file_access, haddr_t largest) noexcept {
  int descriptor = -1;
  try {
    const unsigned writing = H5F_ACC_RDWR | H5F_ACC_TRUNC | H5F_ACC_EXCL | H5F_ACC_CREAT;
    if (name == nullptr) return nullptr;
    if ((flags & writing) != 0) {
      push_error(system_origin, H5E_CANTOPENFILE, "the checked file driver opens existing files read-only");
      return nullptr;
    }
    if (largest == 0 || largest == HADDR_UNDEF || largest > largest_address) {
      push_error(system_origin, H5E_BADRANGE, "largest address out of range");
      return nullptr;
    }
    descriptor = ::open(name, O_RDONLY | O_CLOEXEC);
    if (descriptor < 0) {
      const int error = errno;  // before the message's allocation can change it
      push_system_error(H5E_CANTOPENFILE, (std::string("unable to open file '") + name + "'").c_str(), error);
      return nullptr;
    }
    struct stat status {};
    if (fstat(descriptor, &status) != 0) {
      const int error = errno;
      ::close(descriptor);
      descriptor = -1;
      push_system_error(H5E_BADFILE, (std::string("unable to query file '") + name + "'").c_str(), error);
      return nullptr;
    }
    auto* file = new CheckedFile{};
    file->descriptor = descriptor;
    file->end_of_file = static_cast<haddr_t>(status.st_size);
    file->device = status.st_dev;
    file->inode = status.st_ino;
    file->ignore_disabled_locks = ignores_disabled_locks(file_access);
    file->length_bytes = superblock_length_bytes(descriptor, file->end_of_file);
    // HDF5 loads the root group's header inside H5Fopen, before phalanx can check it as it checks
    // every other header it opens (object_header_check.hpp): it is checked here.
    if (const std::string damage = root_header_problem(descriptor); !damage.empty()) {
      push_error(refusal_origin, H5E_CANTOPENFILE, damage);
      delete file;
      ::close(descriptor);
      return nullptr;
    }
    return &file->hdf5;
  } catch (...) {  // std::bad_alloc
    if (descriptor >= 0) ::close(descriptor);
    return nullptr;
  }
}

herr_t close_file(H5FD_t* hdf5_file) noexcept {
  CheckedFile* file = &checked(hdf5_file);
  const int status = ::close(file->descriptor);
  const int error = errno;
  delete file->passed_gzip_chunks;
  delete file;
  if (status == 0) return 0;
  push_system_error(H5E_CANTCLOSEFILE, "unable to close file", error);
  return -1;
}

int compare_files(const H5FD_t* first, const H5FD_t* second) noexcept {
  const CheckedFile& one = checked(first);
  const CheckedFile& other = checked(second);
  if (one.device != other.device) return one.device < other.device ? -1 : 1;
  if (one.inode != other.inode) return one.inode < other.inode ? -1 : 1;
  return 0;
}

herr_t query_features(const H5FD_t*, unsigned long* features) noexcept {
  // sec2's features, so HDF5 treats the file as under sec2: metadata reads gathered by its
  // accumulator, raw data through its sieve buffer, a handle that is a POSIX descriptor
  // (H5Fget_vfd_handle), the default file layout. The aggregation features place new data and
  // never come into play in a read-only file.
  if (features)
    *features = H5FD_FEAT_AGGREGATE_METADATA | H5FD_FEAT_ACCUMULATE_METADATA | H5FD_FEAT_DATA_SIEVE |
                H5FD_FEAT_AGGREGATE_SMALLDATA | H5FD_FEAT_POSIX_COMPAT_HANDLE | H5FD_FEAT_SUPPORTS_SWMR_IO |
                H5FD_FEAT_DEFAULT_VFD_COMPATIBLE;
  return 0;
}

haddr_t end_of_address(const H5FD_t* file, H5FD_mem_t) noexcept {
  return checked(file).end_of_address;
}

herr_t set_end_of_address(H5FD_t* file, H5FD_mem_t, haddr_t address) noexcept {
  checked(file).end_of_address = address;
  return 0;
}

haddr_t end_of_file(const H5FD_t* file, H5FD_mem_t) noexcept {
  return checked(file).end_of_file;
}

herr_t file_handle(H5FD_t* file, hid_t, void** handle) noexcept {
  if (handle == nullptr) return -1;
  *handle = &checked(file).descriptor;
  return 0;
}

herr_t read_file(H5FD_t* hdf5_file, H5FD_mem_t type, hid_t, haddr_t address, std::size_t size,
                 void* buffer) noexcept {
  CheckedFile& file = checked(hdf5_file);
  try {
    if (address == HADDR_UNDEF || address > largest_address || size > largest_address - address) {
      push_error(system_origin, H5E_OVERFLOW,
                 "a read of " + std::to_string(size) + " bytes at byte " + std::to_string(address) +
                     " is outside the file's address space");
      return -1;
    }
    auto* bytes = static_cast<std::uint8_t*>(buffer);
    if (const int error = read_whole(file.descriptor, address, size, bytes)) {
      push_system_error(
          H5E_READERROR,
          ("reading " + std::to_string(size) + " bytes at byte " + std::to_string(address) + " failed")
              .c_str(),
          error);
      return -1;
    }
    const bool collection =
        file.length_bytes != 0 && is_first_collection_read(file, type, address, size, bytes);
    // During a read_checked() of a gzip dataset every other raw read is one of its chunks.
    if (const ChunkExpectation& chunk = chunk_expectation();
        chunk.gzip && type == H5FD_MEM_DRAW && !collection) {
      const std::uint64_t key = xxhash64(bytes, size, address * 0x9E3779B97F4A7C15ull + chunk.bytes);
      if (!file.passed_gzip_chunks) file.passed_gzip_chunks = new std::unordered_set<std::uint64_t>();
      if (!file.passed_gzip_chunks->count(key)) {
        if (const std::string problem = gzip_chunk_problem(bytes, size, chunk.bytes); !problem.empty()) {
          push_error(refusal_origin, H5E_READERROR,
                     "the gzip chunk stored at byte " + std::to_string(address) + ": " + problem);
          return -1;
        }
        // Bounded: past a million chunks (some 24 MB of hashes) it starts afresh.
        if (file.passed_gzip_chunks->size() >= (1u << 20)) file.passed_gzip_chunks->clear();
        file.passed_gzip_chunks->insert(key);
      }
    }
    if (!collection) return 0;
    const CollectionVerdict verdict = check_collection(file, address, bytes, size);
    if (verdict.system_error != 0) {
      push_system_error(
          H5E_READERROR,
          ("reading the global heap collection at byte " + std::to_string(address) + " failed").c_str(),
          verdict.system_error);
      return -1;
    }
    if (!verdict.damage.empty()) {
      push_error(refusal_origin, H5E_READERROR, verdict.damage);
      return -1;
    }
    file.checked_begin = address;
    file.checked_end = address + verdict.bytes;
    return 0;
  } catch (...) {  // std::bad_alloc
    return -1;
  }
}

herr_t write_file(H5FD_t*, H5FD_mem_t, hid_t, haddr_t, std::size_t, const void*) noexcept {
  try {
    push_error(system_origin, H5E_WRITEERROR, "the checked file driver is read-only");
  } catch (...) {  // std::bad_alloc
  }
  return -1;
}

// flock() under HDF5's lock and unlock, as sec2 calls it: readers take shared locks (HDF5 asks for
// one at every open unless HDF5_USE_FILE_LOCKING=FALSE), so a writer opening the file meanwhile is
// refused; where the file system has no locks (ENOSYS) that is fine if the open allowed it.
herr_t change_lock(H5FD_t* hdf5_file, int operation, hid_t minor, const char* what) noexcept {
  CheckedFile& file = checked(hdf5_file);
  if (flock(file.descriptor, operation) == 0) return 0;
  const int error = errno;
  if (error == ENOSYS && file.ignore_disabled_locks) {
    errno = 0;
    return 0;
  }
  push_system_error(minor, what, error);
  return -1;
}

herr_t lock_file(H5FD_t* hdf5_file, hbool_t read_write) noexcept {
  return change_lock(hdf5_file, (read_write ? LOCK_EX : LOCK_SH) | LOCK_NB, H5E_CANTLOCKFILE,
                     "unable to lock file");
}

herr_t unlock_file(H5FD_t* hdf5_file) noexcept {
  return change_lock(hdf5_file, LOCK_UN, H5E_CANTUNLOCKFILE, "unable to unlock file");
}

#ifdef H5FD_CLASS_VERSION
// A driver's number: HDF5 keeps 0-255 for its own and leaves 256-511 to drivers that are not
// registered with The HDF Group; this one never leaves the process (no file records it).
constexpr H5FD_class_value_t checked_driver_value = 0x1d0;
#endif

const H5FD_class_t checked_driver_class = {
#ifdef H5FD_CLASS_VERSION
    .version = H5FD_CLASS_VERSION,
    .value = checked_driver_value,
#endif
    .name = "phalanx_checked",
    .maxaddr = largest_address,
    .fc_degree = H5F_CLOSE_WEAK,
    .terminate = nullptr,
    .sb_size = nullptr,  // no driver information in the superblock, as sec2
    .sb_encode = nullptr,
    .sb_decode = nullptr,
    .fapl_size = 0,  // no settings of its own
    .fapl_get = nullptr,
    .fapl_copy = nullptr,
    .fapl_free = nullptr,
    .dxpl_size = 0,
    .dxpl_copy = nullptr,
    .dxpl_free = nullptr,
    .open = open_file,
    .close = close_file,
    .cmp = compare_files,
    .query = query_features,
    .get_type_map = nullptr,
    .alloc = nullptr,
    .free = nullptr,
    .get_eoa = end_of_address,
    .set_eoa = set_end_of_address,
    .get_eof = end_of_file,
    .get_handle = file_handle,
    .read = read_file,
    .write = write_file,
#ifdef H5FD_CLASS_VERSION
    // Without these HDF5 turns vector and selection reads into calls of `read`, which checks them.
    .read_vector = nullptr,
    .write_vector = nullptr,
    .read_selection = nullptr,
    .write_selection = nullptr,
#endif
    .flush = nullptr,
    .truncate = nullptr,
    .lock = lock_file,
    .unlock = unlock_file,
#ifdef H5FD_CLASS_VERSION
    .del = nullptr,  // H5Fdelete: a read-only driver deletes no file
    // No control operations: HDF5 answers them as sec2 does, failing those that must be known.
    .ctl = nullptr,
#endif
    .fl_map = H5FD_FLMAP_DICHOTOMY,
};

// The driver's registration with HDF5: made once per process, on first use, and undone when the
// process exits. Registering is an HDF5 call, so HDF5 has set up its own exit handler (which
// closes the library) before this object exists, and C++ runs this destructor before that handler.
class Registration {
 public:
  Registration() {
    // The lock outlives this object only if it exists before it: take it here first.
    const auto hdf5_lock = lock_hdf5();
    id_ = H5FDregister(&checked_driver_class);
  }
  ~Registration() {
    if (id_ < 0) return;
    const auto hdf5_lock = lock_hdf5();
    silence_hdf5_error_printing();
    // Files still open keep their own reference to the driver; HDF5 drops it when they close.
    H5FDunregister(id_);
  }
  Registration(const Registration&) = delete;
  Registration& operator=(const Registration&) = delete;

  hid_t id() const { return id_; }

 private:
  hid_t id_ = H5I_INVALID_HID;
};

hid_t driver_id() {
  static const Registration registration;
  return registration.id();
}

}  // namespace

Hdf5Handle checked_file_access() {
  const auto hdf5_lock = lock_hdf5();
  Hdf5Handle access = property_list_handle(H5Pcreate(H5P_FILE_ACCESS));
  PHALANX_CHECK(access.valid() && driver_id() >= 0 && H5Pset_driver(access.get(), driver_id(), nullptr) >= 0,
                "cannot set up phalanx's checked HDF5 file driver");
  return access;
}

int checked_file_descriptor(hid_t file) {
  const Hdf5Handle access = property_list_handle(H5Fget_access_plist(file));
  if (!access.valid() || H5Pget_driver(access.get()) != driver_id()) return -1;
  void* handle = nullptr;
  if (H5Fget_vfd_handle(file, access.get(), &handle) < 0 || handle == nullptr) return -1;
  return *static_cast<int*>(handle);
}

std::string checked_file_refusal() {
  std::string refusal;
  H5Ewalk2(
      H5E_DEFAULT, H5E_WALK_UPWARD,
      [](unsigned, const H5E_error2_t* entry, void* found) -> herr_t {
        if (entry->func_name == nullptr || std::strcmp(entry->func_name, refusal_origin) != 0 || !entry->desc)
          return 0;
        *static_cast<std::string*>(found) = entry->desc;
        return 1;
      },
      &refusal);
  return refusal;
}

std::string unreadable_message(const std::string& place, const std::string& refusal) {
  return place + ": cannot be read" + (refusal.empty() ? "" : ": " + refusal) + " (file corrupt?)";
}

}  // namespace phalanx::data::detail
