// Registering the LZF filter plugin for writing. HDF5 1.10 loads filter plugins by itself only when
// it reads or writes chunks, not when a dataset is created with the filter, so the writer finds
// the plugin in HDF5's own plugin search path (HDF5_PLUGIN_PATH, or the default folder of the
// installed flavour) and registers it, as h5py does for its built-in LZF.
#include <dlfcn.h>
#include <hdf5.h>
#include <unistd.h>

#include <mutex>
#include <string>

#include "phalanx/data/dataset.hpp"

namespace phalanx::data::detail {

std::string register_lzf_filter() {
  static std::once_flag once;
  static bool registered = false;
  static std::string problem = "no liblzf_filter.so in HDF5's plugin folders";
  std::call_once(once, [] {
    if (H5Zfilter_avail(static_cast<H5Z_filter_t>(lzf_filter_id)) > 0) {
      registered = true;
      return;
    }
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
      if (plugin_info && H5Zregister(plugin_info()) >= 0)
        registered = H5Zfilter_avail(static_cast<H5Z_filter_t>(lzf_filter_id)) > 0;
    }
  });
  return registered ? std::string() : problem;
}

}  // namespace phalanx::data::detail
