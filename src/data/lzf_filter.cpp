// The LZF filter: the plugin's (h5py's filter, id 32000, as Debian's hdf5-plugin-lzf builds it),
// registered by phalanx behind a wrapper that checks what each chunk decodes to
// (checked_chunk_decoding.hpp): the plugin returns however many bytes it decompressed, and HDF5
// would copy a whole chunk's bytes out of them. HDF5 1.10 would load the plugin by itself only when
// it first reads or writes such chunks, unchecked, and not when a dataset is created with the filter,
// so phalanx finds it in HDF5's own plugin search path (HDF5_PLUGIN_PATH, or the default folder of
// the installed flavour) before either, as h5py does for its built-in LZF.
#include <dlfcn.h>
#include <hdf5.h>
#include <unistd.h>

#include <mutex>
#include <string>

#include "phalanx/data/checked_chunk_decoding.hpp"
#include "phalanx/data/dataset.hpp"

namespace phalanx::data::detail {
namespace {

H5Z_func_t plugin_filter = nullptr;

std::size_t checked_lzf_filter(unsigned flags, std::size_t value_count, const unsigned values[],
                               std::size_t bytes, std::size_t* buffer_bytes, void** buffer) {
  const std::size_t result = plugin_filter(flags, value_count, values, bytes, buffer_bytes, buffer);
  if (result == 0 || !(flags & H5Z_FLAG_REVERSE)) return result;
  return decoded_chunk_fits("LZF", result) ? result : 0;
}

H5Z_class2_t checked_lzf_class = {H5Z_CLASS_T_VERS,
                                  static_cast<H5Z_filter_t>(lzf_filter_id),
                                  1,
                                  1,
                                  "lzf (phalanx: chunk sizes checked)",
                                  nullptr,
                                  nullptr,
                                  checked_lzf_filter};

}  // namespace

std::string register_lzf_filter() {
  static std::once_flag once;
  static bool registered = false;
  static std::string problem = "no liblzf_filter.so in HDF5's plugin folders";
  std::call_once(once, [] {
    unsigned folders = 0;
    if (H5PLsize(&folders) < 0) return;
    for (unsigned index = 0; index < folders && !registered; ++index) {
      char folder[4096] = {};
      if (H5PLget(index, folder, sizeof folder) <= 0) continue;
      const std::string library = std::string(folder) + "/liblzf_filter.so";
      // Never closed: HDF5 calls into the filter for as long as the process runs.
      // RTLD_NOW: a plugin with unresolved symbols (Debian 12's hdf5-plugin-lzf lacks liblzf) is
      // refused here with the loader's reason instead of crashing in the first write.
      void* handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (!handle) {
        if (access(library.c_str(), F_OK) == 0) problem = dlerror();
        continue;
      }
      using PluginInfo = const void* (*)();
      const auto plugin_info = reinterpret_cast<PluginInfo>(dlsym(handle, "H5PLget_plugin_info"));
      const auto* plugin = plugin_info ? static_cast<const H5Z_class2_t*>(plugin_info()) : nullptr;
      // A version 1 class starts with the filter's id where a version 2 class has its version.
      if (plugin == nullptr || plugin->version != H5Z_CLASS_T_VERS || plugin->id != lzf_filter_id ||
          plugin->filter == nullptr) {
        problem = library + " does not describe the LZF filter as HDF5 1.8 and later do";
        continue;
      }
      plugin_filter = plugin->filter;
      checked_lzf_class.can_apply = plugin->can_apply;
      checked_lzf_class.set_local = plugin->set_local;
      if (H5Zregister(&checked_lzf_class) >= 0)
        registered = H5Zfilter_avail(static_cast<H5Z_filter_t>(lzf_filter_id)) > 0;
    }
  });
  return registered ? std::string() : problem;
}

}  // namespace phalanx::data::detail
