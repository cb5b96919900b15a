// How pgpipe-scram prints a probe report: aligned lines for people, one JSON
// object for machines.
//
// No report field holds the password: the probe builds its messages without
// it, and the server's messages name roles and databases, never passwords.
// The output is not masked for the password's text either: with a short
// password masking garbles unrelated words, and where the stars land tells
// the reader what the password is.
#pragma once

#include <string>
#include <string_view>

#include <pgpipe/scram/probe.hpp>

namespace pgpipe::cli {

std::string render_human(const scram::probe_report& r);
std::string render_json(const scram::probe_report& r);

}  // namespace pgpipe::cli
