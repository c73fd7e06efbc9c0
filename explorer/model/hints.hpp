// The commands the explorer's windows suggest, in one place so that each is a command that works
// as written: tests/explorer/check_hint_commands.cmake runs every one of them (kHintCommands)
// against the built binary and fails on a usage error. A hint names a file the user makes with the
// hint before it (sweep.csv, peak.csv), never a placeholder.
#pragma once

#include <string_view>

namespace flashscope::explorer::hints {

// A headless sweep of the default selection into a file.
inline constexpr std::string_view kSweepToFile = "explorer --csv --output sweep.csv";
// A sweep that collects the DRAM byte counts the roofline needs.
inline constexpr std::string_view kSweepWithDram =
    "explorer --csv --metrics dram__bytes_read.sum,dram__bytes_write.sum --output sweep.csv";
// The device's ceilings (roofs and reference lines).
inline constexpr std::string_view kPeakToFile = "explorer peak --output peak.csv";
// Opening what the commands above wrote.
inline constexpr std::string_view kOpenSweep = "explorer --results sweep.csv";
inline constexpr std::string_view kOpenRoofline =
    "explorer --results sweep.csv peak.csv --view roofline";
inline constexpr std::string_view kCompareTwoFiles =
    "explorer --results a.csv b.csv --view compare";

inline constexpr std::string_view kHintCommands[] = {
    kSweepToFile, kSweepWithDram, kPeakToFile, kOpenSweep, kOpenRoofline, kCompareTwoFiles,
};

}  // namespace flashscope::explorer::hints
