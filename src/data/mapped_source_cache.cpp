// The process-wide cache of validated mapped sources (see mapped_source_cache.hpp).
#include "mapped_source_cache.hpp"

#include <deque>
#include <mutex>
#include <string>
#include <utility>

namespace phalanx::data {
namespace {

// Every file the mapping names, with its size and modification time: the part of the key that
// notices a file replaced between two opens (a sweep worker lives for hours).
std::string files_identity(const config::SourceConfig& source) {
  std::string identity;
  for (const auto* split : {&source.train, &source.test, &source.val})
    for (const auto* location : {&split->images, &split->labels})
      if (!location->empty()) identity += file_identity(location->file) + ";";
  if (!source.classes_dataset.empty()) identity += file_identity(source.classes_dataset.file) + ";";
  return identity;
}

struct CachedSource {
  config::SourceConfig mapping;
  std::string files;
  std::shared_ptr<const MappedSource> source;
};

// A run maps one source, a sweep worker a few; the oldest entries go first.
constexpr std::size_t capacity = 4;

std::mutex cache_mutex;
std::deque<CachedSource> cache;
int validations = 0;

}  // namespace

std::shared_ptr<const MappedSource> open_mapped_source(const config::SourceConfig& source) {
  const std::string files = files_identity(source);
  {
    const std::lock_guard<std::mutex> lock(cache_mutex);
    for (const auto& entry : cache)
      if (entry.mapping == source && entry.files == files) return entry.source;
  }
  // Validated outside the lock: it reads files, and a failure must not leave an entry.
  auto opened = std::make_shared<const MappedSource>(source);
  const std::lock_guard<std::mutex> lock(cache_mutex);
  ++validations;
  for (auto entry = cache.begin(); entry != cache.end(); ++entry)
    if (entry->mapping == source) {
      cache.erase(entry);
      break;
    }
  cache.push_front({source, files, opened});
  if (cache.size() > capacity) cache.pop_back();
  return opened;
}

int mapped_source_validations() {
  const std::lock_guard<std::mutex> lock(cache_mutex);
  return validations;
}

}  // namespace phalanx::data
