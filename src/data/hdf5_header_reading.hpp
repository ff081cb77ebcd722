// Reading HDF5's file format directly, the parts phalanx checks before HDF5 decodes them (file
// format specification: object headers and their messages, read through a file's descriptor).
// Internal to the data module: the object-header check and the storage check. Everything here
// reads sizes as stated and refuses (throws Damage) what would step outside what it read.
#pragma once

#include <fcntl.h>
#include <hdf5.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace phalanx::data::detail::hdf5_format {

// A part of a message that does not fit: thrown inside the check, turned into the input error
// (with the file, the object and the message) where the check began.
struct Damage {
  std::string what;
};

[[noreturn]] inline void refuse(std::string what) {
  throw Damage{std::move(what)};
}

constexpr std::size_t maximum_header_chunks = 4096;  // continuation chunks of one header
constexpr std::uint64_t maximum_chunk_bytes = 64ull << 20;

// Header message types and flags the reader itself acts on.
constexpr unsigned continuation_message = 0x0010;
constexpr unsigned shared_message_flag = 0x02;

inline std::uint64_t align8(std::uint64_t size) {
  return (size + 7) & ~std::uint64_t{7};
}

// Little-endian fields read from a span of bytes that refuses to step past its end.
class Bytes {
 public:
  Bytes(const std::uint8_t* begin, std::size_t size) : begin_(begin), size_(size) {}

  std::size_t left() const { return size_ - position_; }
  std::size_t position() const { return position_; }
  const std::uint8_t* here() const { return begin_ + position_; }

  std::uint64_t number(unsigned width, const char* field) {
    need(width, field);
    std::uint64_t value = 0;
    for (unsigned index = 0; index < width; ++index)
      value |= static_cast<std::uint64_t>(begin_[position_ + index]) << (8 * index);
    position_ += width;
    return value;
  }
  unsigned byte(const char* field) { return static_cast<unsigned>(number(1, field)); }

  void skip(std::uint64_t count, const char* field) {
    need(count, field);
    position_ += static_cast<std::size_t>(count);
  }
  void need(std::uint64_t count, const char* field) const {
    if (count > left())
      refuse(std::string("its ") + field + " (" + std::to_string(count) + " bytes) runs past the message (" +
             std::to_string(left()) + " bytes left)");
  }
  // The next `count` bytes as a span of their own, skipped here.
  Bytes part(std::uint64_t count, const char* field) {
    need(count, field);
    Bytes inner(here(), static_cast<std::size_t>(count));
    position_ += static_cast<std::size_t>(count);
    return inner;
  }
  // A NUL-terminated string starting here: its length with the NUL, refused if no NUL is left.
  std::size_t terminated_length(const char* field) const {
    const void* end = std::memchr(here(), 0, left());
    if (end == nullptr) refuse(std::string("its ") + field + " has no terminating NUL before its end");
    return static_cast<std::size_t>(static_cast<const std::uint8_t*>(end) - here()) + 1;
  }

 private:
  const std::uint8_t* begin_;
  std::size_t size_;
  std::size_t position_ = 0;
};

// A name from a damaged file, fit for a one-line message: bytes outside printable ASCII as \xNN.
inline std::string printable(const std::uint8_t* bytes, std::size_t size) {
  static const char digits[] = "0123456789abcdef";
  std::string text;
  for (std::size_t index = 0; index < std::min<std::size_t>(size, 64); ++index) {
    const std::uint8_t byte = bytes[index];
    if (byte >= 0x20 && byte < 0x7f && byte != '"' && byte != '\\') {
      text += static_cast<char>(byte);
    } else {
      text += "\\x";
      text += digits[byte >> 4];
      text += digits[byte & 0x0f];
    }
  }
  if (size > 64) text += "...";
  return text;
}

inline std::uint64_t multiply_or_refuse(std::uint64_t left, std::uint64_t right, const char* what) {
  std::uint64_t product = 0;
  if (__builtin_mul_overflow(left, right, &product)) refuse(std::string(what) + " overflows 64 bits");
  return product;
}

struct Message {
  unsigned type = 0;
  unsigned flags = 0;
  std::vector<std::uint8_t> data;

  // Whether HDF5 decodes this message as a reference to a shared one. The flag counts only for
  // the classes HDF5 can share (dataspace, datatype, both fill values, filter pipeline,
  // attribute): a message of any other class, a layout or a continuation say, is decoded as
  // itself whatever its flags say.
  bool refers_to_shared() const {
    constexpr unsigned shareable[] = {0x0001, 0x0003, 0x0004, 0x0005, 0x000B, 0x000C};
    if (!(flags & shared_message_flag)) return false;
    for (const unsigned shareable_type : shareable)
      if (type == shareable_type) return true;
    return false;
  }
};

// One file's layout as HDF5 describes it, and a descriptor of its own to read headers with.
class HeaderFile {
 public:
  // Reads through `descriptor` (HDF5's own, under the checked driver: pread leaves its offset
  // alone) or, when it is -1 (a file under HDF5's MPI-IO driver), through a descriptor of its own.
  HeaderFile(int descriptor, const std::string& path, std::uint64_t base, unsigned address_bytes,
             unsigned length_bytes)
      : descriptor_(descriptor), base_(base), address_bytes_(address_bytes), length_bytes_(length_bytes) {
    if (descriptor_ < 0) {
      descriptor_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
      owned_ = descriptor_ >= 0;
    }
    struct stat status {};
    if (descriptor_ >= 0 && ::fstat(descriptor_, &status) == 0)
      size_ = static_cast<std::uint64_t>(status.st_size);
  }
  ~HeaderFile() {
    if (owned_) ::close(descriptor_);
  }
  HeaderFile(const HeaderFile&) = delete;
  HeaderFile& operator=(const HeaderFile&) = delete;

  bool readable() const { return descriptor_ >= 0; }
  // Whether `size` bytes at HDF5 address `address` lie inside the file.
  bool holds(std::uint64_t address, std::uint64_t size) const {
    std::uint64_t start = 0, end = 0;
    return !__builtin_add_overflow(base_, address, &start) && !__builtin_add_overflow(start, size, &end) &&
           end <= size_;
  }
  unsigned address_bytes() const { return address_bytes_; }
  unsigned length_bytes() const { return length_bytes_; }
  std::uint64_t absolute(std::uint64_t address) const { return base_ + address; }

  // `size` bytes at HDF5 address `address`, or false when they lie past the file's end: a
  // truncated file is HDF5's to report (it says so in its own words, which the callers know).
  // Small reads are served from a window of `window_bytes` read ahead: a header's prefix, its
  // chunk and a group's local heap are a few hundred bytes apart, and each read of its own made
  // the check of a thousand objects a few thousand system calls.
  bool read(std::uint64_t address, std::uint64_t size, std::vector<std::uint8_t>& bytes) const {
    std::uint64_t start = 0, end = 0;
    if (__builtin_add_overflow(base_, address, &start) || __builtin_add_overflow(start, size, &end) ||
        end > size_ || size > maximum_chunk_bytes)
      return false;
    if (start < window_start_ || end > window_start_ + window_.size()) {
      if (size > window_bytes) {
        bytes.resize(static_cast<std::size_t>(size));
        return read_exactly(start, bytes);
      }
      window_.resize(static_cast<std::size_t>(std::min<std::uint64_t>(window_bytes, size_ - start)));
      window_start_ = start;
      if (!read_exactly(start, window_)) {
        window_.clear();
        return false;
      }
    }
    const auto first = window_.begin() + static_cast<std::ptrdiff_t>(start - window_start_);
    bytes.assign(first, first + static_cast<std::ptrdiff_t>(size));
    return true;
  }

 private:
  static constexpr std::uint64_t window_bytes = 4096;

  bool read_exactly(std::uint64_t start, std::vector<std::uint8_t>& bytes) const {
    std::size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t got =
          ::pread(descriptor_, bytes.data() + done, bytes.size() - done, static_cast<off_t>(start + done));
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) return false;
      done += static_cast<std::size_t>(got);
    }
    return true;
  }

  int descriptor_ = -1;
  bool owned_ = false;
  mutable std::vector<std::uint8_t> window_;
  mutable std::uint64_t window_start_ = 0;
  std::uint64_t size_ = 0;
  std::uint64_t base_;
  unsigned address_bytes_;
  unsigned length_bytes_;
};

// The messages of the object header at `address`, from its first chunk and every continuation
// chunk; empty when the header is not there to read (past the file's end, or of a version HDF5
// will refuse itself).
class HeaderMessages {
 public:
  HeaderMessages(const HeaderFile& file, std::uint64_t address) : file_(file) {
    std::vector<std::uint8_t> prefix;
    if (!file.read(address, 4, prefix)) return;
    if (std::memcmp(prefix.data(), "OHDR", 4) == 0)
      read_version_two(address);
    else if (prefix[0] == 1)
      read_version_one(address);
  }
  const std::vector<Message>& messages() const { return messages_; }
  // The first chunk (address, size) that lies past the file's end, if any: HDF5 reports reading
  // it, but only after allocating its stated size.
  const std::optional<std::pair<std::uint64_t, std::uint64_t>>& chunk_past_end() const { return past_end_; }

 private:
  void read_version_one(std::uint64_t address) {
    std::vector<std::uint8_t> prefix;
    if (!file_.read(address, 16, prefix)) return;
    Bytes fields(prefix.data(), prefix.size());
    fields.skip(8, "version, message count and reference count");
    const std::uint64_t chunk_size = fields.number(4, "header size");
    // Version 1 messages start on an 8-byte boundary: the 12-byte prefix is padded to 16.
    queue_chunk(address + 16, chunk_size);
    while (!chunks_.empty()) {
      const auto [chunk_address, size] = chunks_.back();
      chunks_.pop_back();
      std::vector<std::uint8_t> chunk;
      if (!read_chunk(chunk_address, size, chunk)) continue;
      Bytes bytes(chunk.data(), chunk.size());
      while (bytes.left() >= 8) {
        Message message;
        message.type = static_cast<unsigned>(bytes.number(2, "message type"));
        const std::uint64_t message_size = bytes.number(2, "message size");
        message.flags = bytes.byte("message flags");
        bytes.skip(3, "reserved bytes");
        take(message, bytes, message_size);
      }
    }
  }

  void read_version_two(std::uint64_t address) {
    std::vector<std::uint8_t> prefix;
    if (!file_.read(address, 6, prefix)) return;
    const unsigned flags = prefix[5];
    creation_order_ = (flags & 0x04) != 0;
    const std::uint64_t fixed = 6 + ((flags & 0x20) ? 16 : 0) + ((flags & 0x10) ? 4 : 0);
    const unsigned size_width = 1u << (flags & 0x03);
    if (!file_.read(address, fixed + size_width, prefix)) return;
    Bytes fields(prefix.data() + fixed, size_width);
    const std::uint64_t chunk_size = fields.number(size_width, "chunk size");
    first_chunk_ = true;
    queue_chunk(address + fixed + size_width, chunk_size);
    while (!chunks_.empty()) {
      const auto [chunk_address, size] = chunks_.back();
      chunks_.pop_back();
      std::vector<std::uint8_t> chunk;
      // The first chunk's size leaves out its checksum; a continuation chunk's length counts its
      // "OCHK" signature and its checksum.
      if (!read_chunk(chunk_address, size, chunk)) continue;
      std::size_t begin = 0, end = chunk.size();
      if (!first_chunk_) {
        if (chunk.size() < 8 || std::memcmp(chunk.data(), "OCHK", 4) != 0)
          refuse("a continuation chunk at byte " + std::to_string(file_.absolute(chunk_address)) +
                 " does not start with OCHK");
        begin = 4;
        end = chunk.size() - 4;
      }
      first_chunk_ = false;
      Bytes bytes(chunk.data() + begin, end - begin);
      const std::size_t header_bytes = creation_order_ ? 6 : 4;
      // Fewer bytes than a message header at the end are the chunk's gap.
      while (bytes.left() >= header_bytes) {
        Message message;
        message.type = bytes.byte("message type");
        const std::uint64_t message_size = bytes.number(2, "message size");
        message.flags = bytes.byte("message flags");
        if (creation_order_) bytes.skip(2, "creation order");
        take(message, bytes, message_size);
      }
    }
  }

  bool read_chunk(std::uint64_t address, std::uint64_t size, std::vector<std::uint8_t>& chunk) {
    if (file_.read(address, size, chunk)) return true;
    if (!past_end_ && !file_.holds(address, size)) past_end_.emplace(address, size);
    return false;
  }

  void take(Message& message, Bytes& chunk, std::uint64_t size) {
    if (size > chunk.left())
      refuse("message " + std::to_string(messages_.size()) + " (type " + std::to_string(message.type) +
             ") says it holds " + std::to_string(size) + " bytes, its chunk has " +
             std::to_string(chunk.left()) + " left");
    message.data.assign(chunk.here(), chunk.here() + size);
    chunk.skip(size, "message");
    if (message.type == continuation_message) {
      Bytes fields(message.data.data(), message.data.size());
      const std::uint64_t address = fields.number(file_.address_bytes(), "continuation address");
      const std::uint64_t length = fields.number(file_.length_bytes(), "continuation length");
      queue_chunk(address, length);
    }
    messages_.push_back(std::move(message));
  }

  void queue_chunk(std::uint64_t address, std::uint64_t size) {
    if (!seen_.insert(address).second)
      refuse("its continuation chunks loop back to byte " + std::to_string(file_.absolute(address)));
    if (seen_.size() > maximum_header_chunks)
      refuse("it has more than " + std::to_string(maximum_header_chunks) + " chunks");
    chunks_.emplace_back(address, size);
  }

  const HeaderFile& file_;
  std::vector<Message> messages_;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> chunks_;
  std::set<std::uint64_t> seen_;
  std::optional<std::pair<std::uint64_t, std::uint64_t>> past_end_;
  bool creation_order_ = false;
  bool first_chunk_ = true;
};

// What reading a file's structures directly needs to know of it, from HDF5's property lists.
struct FileFacts {
  int descriptor = -1;  // HDF5's, under the checked driver; -1 under another driver
  std::uint64_t base = 0;
  unsigned address_bytes = 0;
  unsigned length_bytes = 0;
};

// The facts of the file `location` (any object of it) is in; false when HDF5 cannot say.
bool describe_file(hid_t location, FileFacts& facts);

}  // namespace phalanx::data::detail::hdf5_format
