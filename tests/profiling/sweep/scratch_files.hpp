// Scratch folders and file checks for tests that link libtorch (through the fa2 reference).
// POSIX on purpose: libtorch exports its own statically linked std::filesystem, and calls from
// code built with a newer libstdc++ can crash in it (pytorch/pytorch#133437): on the lent H200,
// std::filesystem::remove_all segfaulted in such a test.
#pragma once

#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

namespace flashscope::testing {

inline bool path_exists(const std::string& path) {
  struct stat info {};
  return ::stat(path.c_str(), &info) == 0;
}

inline std::int64_t file_bytes(const std::string& path) {
  struct stat info {};
  return ::stat(path.c_str(), &info) == 0 ? static_cast<std::int64_t>(info.st_size) : -1;
}

inline void remove_tree(const std::string& path) {
  if (!path_exists(path)) return;
  const auto remove_entry = [](const char* entry, const struct stat*, int, struct FTW*) {
    return ::remove(entry);
  };
  if (::nftw(path.c_str(), remove_entry, 16, FTW_DEPTH | FTW_PHYS) != 0)
    throw std::runtime_error("cannot remove " + path + ": " + std::strerror(errno));
}

// An empty folder /tmp/<suite>/<name> (TMPDIR respected), created afresh.
inline std::string scratch_folder(const std::string& suite, const std::string& name) {
  const char* tmp = std::getenv("TMPDIR");
  const std::string root = std::string(tmp && *tmp ? tmp : "/tmp") + "/" + suite;
  const std::string folder = root + "/" + name;
  remove_tree(folder);
  for (const std::string& level : {root, folder})
    if (::mkdir(level.c_str(), 0777) != 0 && errno != EEXIST)
      throw std::runtime_error("cannot create " + level + ": " + std::strerror(errno));
  return folder;
}

}  // namespace flashscope::testing
