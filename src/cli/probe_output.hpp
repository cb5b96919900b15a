// How pgpipe-scram prints a probe report: aligned lines for people, one JSON
// object for machines. Every string goes through redact_secret() with the
// password first, as a last line of defence (no field should contain it).
#pragma once

#include <string>
#include <string_view>

#include "pgpipe/scram/probe.hpp"

namespace pgpipe::cli {

std::string render_human(const scram::probe_report& r, std::string_view password);
std::string render_json(const scram::probe_report& r, std::string_view password);

}  // namespace pgpipe::cli
