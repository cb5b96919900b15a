// Reading the server's major version from `postgres --version`: it decides
// initdb's flags and which pg_basebackup may clone the server. No server.
#include "devcluster/server_version.hpp"

#include <gtest/gtest.h>

namespace {

using pgpipe::devcluster::parse_version_major;

TEST(server_version, majors_of_the_packages_we_run) {
  EXPECT_EQ(parse_version_major("postgres (PostgreSQL) 13.23\n"), 13);
  EXPECT_EQ(parse_version_major("postgres (PostgreSQL) 15.14 (Debian 15.14-0+deb12u1)\n"), 15);
  EXPECT_EQ(parse_version_major("postgres (PostgreSQL) 18.4\n"), 18);
  EXPECT_EQ(parse_version_major("pg_basebackup (PostgreSQL) 15.14 (Debian 15.14-0+deb12u1)"), 15);
}

TEST(server_version, pre_releases_and_the_old_numbering) {
  EXPECT_EQ(parse_version_major("postgres (PostgreSQL) 18beta1"), 18);
  EXPECT_EQ(parse_version_major("postgres (PostgreSQL) 9.6.24"), 9);
}

TEST(server_version, anything_else_is_not_a_version) {
  EXPECT_EQ(parse_version_major(""), std::nullopt);
  EXPECT_EQ(parse_version_major("postgres: command not found"), std::nullopt);
  EXPECT_EQ(parse_version_major("postgres (PostgreSQL) "), std::nullopt);
  EXPECT_EQ(parse_version_major("postgres (PostgreSQL) x.1"), std::nullopt);
  EXPECT_EQ(parse_version_major("postgres (PostgreSQL) 0.1"), std::nullopt);
}

}  // namespace
