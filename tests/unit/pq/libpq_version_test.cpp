// The libpq version check every pool runs when it is created, and the
// version numbers stats() reports. No server.
#include "pq/libpq_version.hpp"

#include <pgpipe/error.hpp>

#include <gtest/gtest.h>
#include <libpq-fe.h>

#include <string>

namespace {

using pgpipe::detail::check_libpq_version;
using pgpipe::detail::version_text;

TEST(libpq_version, numbers_read_as_people_write_them) {
  EXPECT_EQ(version_text(140000), "14.0");
  EXPECT_EQ(version_text(150014), "15.14");
  EXPECT_EQ(version_text(180004), "18.4");
  EXPECT_EQ(version_text(130023), "13.23");
  EXPECT_EQ(version_text(90624), "9.6.24");
  EXPECT_EQ(version_text(0), "unknown");
}

TEST(libpq_version, fourteen_and_newer_are_accepted) {
  EXPECT_NO_THROW(check_libpq_version(140000));
  EXPECT_NO_THROW(check_libpq_version(150014));
  EXPECT_NO_THROW(check_libpq_version(180000));
}

TEST(libpq_version, older_than_fourteen_is_refused_naming_both_versions) {
  for (int old : {130023, 130000, 120018, 90624}) {
    try {
      check_libpq_version(old);
      ADD_FAILURE() << old << " was accepted";
    } catch (const pgpipe::error& e) {
      EXPECT_EQ(e.code(), pgpipe::make_error_code(pgpipe::errc::unsupported_libpq));
      const std::string what = e.what();
      EXPECT_NE(what.find("and libpq " + version_text(old) + " is loaded"), std::string::npos) << what;
      EXPECT_NE(what.find("needs libpq 14 or newer"), std::string::npos) << what;
    }
  }
}

TEST(libpq_version, the_libpq_this_test_runs_on_passes_the_check) {
  // Every suite runs on a supported libpq (CI: Debian's 15 and the 18 of
  // the server package); a failure here means the loader found another one.
  EXPECT_NO_THROW(pgpipe::detail::require_supported_libpq()) << "PQlibVersion() = " << PQlibVersion();
}

TEST(libpq_version, a_pool_that_opened_nothing_reports_its_libpq_and_no_server) {
  const pgpipe::detail::runtime_record record;
  const pgpipe::runtime_info info = record.snapshot();
  EXPECT_EQ(info.libpq_version, PQlibVersion());
  EXPECT_EQ(info.server_version, 0);
}

TEST(libpq_version, the_text_names_the_libpq_and_the_server_once_known) {
  EXPECT_EQ(pgpipe::detail::runtime_text({180000, 0}), "libpq 18.0 (loaded at run time)");
  EXPECT_EQ(pgpipe::detail::runtime_text({150014, 130023}), "libpq 15.14 (loaded at run time), server 13.23");
}

}  // namespace
