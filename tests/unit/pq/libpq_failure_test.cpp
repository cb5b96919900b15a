// libpq's failure language (src/pq/libpq_failure.*): one table of every
// connect-failure message we know libpq 15 and the server to produce, fed
// through the async driver's path (the message first cleaned to one line,
// as pipelined_connection does) and the blocking driver's path (the raw
// multi-line message, as pooled_connection does). Both must give the code the
// table names, above all for messages whose two forms differ (e.g. "role does
// not exist", "Host is unreachable", fe_sendauth).
#include "blocking/connection/pooled_connection.hpp"
#include "pq/libpq_failure.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include <string>
#include <vector>

namespace pgpipe::detail {
namespace {

struct known_message {
  const char* text;
  std::error_code expected;
  const char* server_sqlstate;  ///< what diagnostics carry ("" for a client-side failure)
};

std::error_code c(errc e) { return make_error_code(e); }

const std::vector<known_message>& table() {
  static const std::vector<known_message> t = {
      // Network and host: no server answered.
      {"connection to server at \"127.0.0.1\", port 5999 failed: Connection refused\n\tIs the server running on "
       "that host and accepting TCP/IP connections?\n",
       c(errc::server_unreachable), ""},
      {"connection to server on socket \"/tmp/.s.PGSQL.5999\" failed: No such file or directory\n\tIs the server "
       "running locally and accepting connections on that socket?\n",
       c(errc::server_unreachable), ""},
      {"could not translate host name \"db.invalid\" to address: Name or service not known\n",
       c(errc::server_unreachable), ""},
      {"could not translate host name \"db\" to address: Temporary failure in name resolution\n",
       c(errc::server_unreachable), ""},
      {"connection to server at \"10.0.0.1\", port 5432 failed: timeout expired\n", c(errc::server_unreachable), ""},
      {"connection to server at \"10.0.0.1\", port 5432 failed: No route to host\n", c(errc::server_unreachable), ""},
      {"connection to server at \"10.0.0.1\", port 5432 failed: Host is unreachable\n", c(errc::server_unreachable),
       ""},
      {"connection to server at \"10.0.0.1\", port 5432 failed: Network is unreachable\n",
       c(errc::server_unreachable), ""},
      {"connection to server at \"10.0.0.1\", port 5432 failed: Connection timed out\n",
       c(errc::server_unreachable), ""},
      {"connection to server at \"10.0.0.1\", port 5432 failed: Connection reset by peer\n",
       c(errc::server_unreachable), ""},
      {"server closed the connection unexpectedly\n\tThis probably means the server terminated abnormally\n\tbefore "
       "or while processing the request.\n",
       c(errc::server_unreachable), ""},
      // Credentials.
      {"connection to server at \"127.0.0.1\", port 5432 failed: FATAL:  password authentication failed for user "
       "\"app\"\n",
       make_sqlstate("28P01"), "28P01"},
      {"connection to server at \"127.0.0.1\", port 5432 failed: fe_sendauth: no password supplied\n",
       c(errc::auth_failed), ""},
      {"connection to server at \"127.0.0.1\", port 5432 failed: FATAL:  no pg_hba.conf entry for host "
       "\"127.0.0.1\", user \"app\", database \"app\", no encryption\n",
       make_sqlstate("28000"), "28000"},
      {"connection to server at \"127.0.0.1\", port 5432 failed: channel binding required, but server authenticated "
       "client without channel binding\n",
       c(errc::auth_failed), ""},
      {"connection to server at \"127.0.0.1\", port 5432 failed: server requested a cleartext password\n",
       c(errc::auth_failed), ""},
      {"connection to server at \"127.0.0.1\", port 5432 failed: FATAL:  SCRAM authentication failed\n",
       make_sqlstate("28000"), "28000"},
      // The server named a condition the pool treats specially.
      {"connection to server at \"127.0.0.1\", port 5432 failed: FATAL:  sorry, too many clients already\n",
       make_sqlstate("53300"), "53300"},
      {"connection to server at \"127.0.0.1\", port 5432 failed: FATAL:  too many connections for role \"app\"\n",
       make_sqlstate("53300"), "53300"},
      {"connection to server at \"127.0.0.1\", port 5432 failed: FATAL:  remaining connection slots are reserved for "
       "non-replication superuser connections\n",
       make_sqlstate("53300"), "53300"},
      {"connection to server at \"127.0.0.1\", port 5432 failed: FATAL:  database \"nope\" does not exist\n",
       make_sqlstate("3D000"), "3D000"},
      {"connection to server at \"127.0.0.1\", port 5432 failed: FATAL:  role \"nobody\" does not exist\n",
       make_sqlstate("28000"), "28000"},
      {"connection to server at \"127.0.0.1\", port 5432 failed: FATAL:  the database system is starting up\n",
       make_sqlstate("57P03"), "57P03"},
      {"connection to server at \"127.0.0.1\", port 5432 failed: FATAL:  the database system is shutting down\n",
       make_sqlstate("57P03"), "57P03"},
      {"connection to server at \"127.0.0.1\", port 5432 failed: FATAL:  the database system is in recovery mode\n",
       make_sqlstate("57P03"), "57P03"},
      {"connection to server at \"127.0.0.1\", port 5432 failed: FATAL:  the database system is not yet accepting "
       "connections\nDETAIL:  Consistent recovery state has not been yet reached.\n",
       make_sqlstate("57P03"), "57P03"},
      // The connection string (libpq's own words).
      {"invalid connection option \"bogus\"\n", c(errc::bad_conninfo), ""},
      {"missing \"=\" after \"nonsense\" in connection info string\n", c(errc::bad_conninfo), ""},
      {"invalid URI query parameter: \"bogus\"\n", c(errc::bad_conninfo), ""},
      {"unterminated quoted string in connection info string\n", c(errc::bad_conninfo), ""},
      {"invalid integer value \"abc\" for connection option \"port\"\n", c(errc::bad_conninfo), ""},
      {"invalid port number: \"99999\"\n", c(errc::bad_conninfo), ""},
      {"invalid sslmode value: \"sometimes\"\n", c(errc::bad_conninfo), ""},
      {"invalid target_session_attrs value: \"maybe\"\n", c(errc::bad_conninfo), ""},
      {"invalid percent-encoded token: \"%zz\"\n", c(errc::bad_conninfo), ""},
      {"invalid channel_binding value: \"often\"\n", c(errc::bad_conninfo), ""},
      // Anything else the server or libpq said.
      {"connection to server at \"127.0.0.1\", port 5432 failed: FATAL:  terminating connection due to "
       "administrator command\n",
       c(errc::connect_failed), ""},
      {"out of memory\n", c(errc::connect_failed), ""},
  };
  return t;
}

TEST(libpq_failure, every_known_connect_message_gets_the_same_code_from_both_drivers) {
  const std::vector<std::string> secrets = passwords_of("host=h password=hunter2");
  for (const auto& m : table()) {
    SCOPED_TRACE(m.text);
    // async: pipelined_connection cleans libpq's message, then classifies it.
    const std::error_code async_code = classify_connect_error(clean_message(m.text, secrets));
    // blocking: pooled_connection classifies the raw message with its secrets.
    const connect_failure blocking = classify_connect_failure(m.text, false, secrets);
    EXPECT_EQ(async_code, m.expected);
    EXPECT_EQ(blocking.ec, m.expected);
    EXPECT_EQ(blocking.diag.sqlstate, m.server_sqlstate);
    EXPECT_EQ(blocking.diag.has_server_error(), *m.server_sqlstate != '\0');
    EXPECT_EQ(blocking.message.find('\n'), std::string::npos);
    EXPECT_EQ(blocking.diag.client_message, "could not connect: " + blocking.message);
  }
}

TEST(libpq_failure, server_part_is_kept_apart_from_libpqs_words) {
  const auto f = classify_connect_failure(
      "connection to server at \"127.0.0.1\", port 5432 failed: FATAL:  database \"nope\" does not exist\n", false,
      {});
  EXPECT_EQ(f.diag.severity, "FATAL");
  EXPECT_EQ(f.diag.message, "database \"nope\" does not exist");
}

TEST(libpq_failure, a_password_inside_libpqs_words_does_not_change_the_kind) {
  // Seen in CI: a one-letter secret scrubbed "Connection refused" into
  // "********onnection refused", and the kind became connect_failed.
  const auto f = classify_connect_failure(
      "connection to server at \"127.0.0.1\", port 1 failed: Connection refused\n"
      "\tIs the server running on that host and accepting TCP/IP connections?\n",
      false, {"C"});
  EXPECT_EQ(f.ec, errc::server_unreachable) << f.message;
  EXPECT_EQ(f.message.find('C'), std::string::npos) << f.message;  // still scrubbed
}

// The resolver's final answer (EAI_NONAME, EAI_NODATA) is permanent; its
// "try again" (EAI_AGAIN) is not, and neither is a list of hosts of which
// one answered or may answer later. Both drivers' forms: libpq's own
// multi-host text (blocking) and the async host walk's joined one.
TEST(libpq_failure, an_unknown_host_is_permanent_only_when_every_host_tried_is_unknown) {
  const auto permanent = connect_failure_kind::permanent;
  const auto transient = connect_failure_kind::transient;
  const struct {
    const char* text;
    connect_failure_kind kind;
  } cases[] = {
      {"could not translate host name \"db.invalid\" to address: Name or service not known\n", permanent},
      {"could not translate host name \"db.invalid\" to address: No address associated with hostname\n", permanent},
      {"could not translate host name \"db\" to address: Temporary failure in name resolution\n", transient},
      {"could not translate host name \"a.invalid\" to address: Name or service not known\n"
       "could not translate host name \"b.invalid\" to address: Name or service not known\n",
       permanent},
      {"could not translate host name \"a.invalid\" to address: Name or service not known\n"
       "connection to server at \"127.0.0.1\", port 1 failed: Connection refused\n",
       transient},
      {"every host failed: a.invalid:5432: could not translate host name \"a.invalid\" to address: Name or service "
       "not known; b.invalid:5432: could not translate host name \"b.invalid\" to address: Name or service not known",
       permanent},
      {"every host failed: a.invalid:5432: could not translate host name \"a.invalid\" to address: Name or service "
       "not known; 10.0.0.1:5432: timeout expired after 2000 ms (connect_timeout)",
       transient},
      {"connection to server at \"127.0.0.1\", port 1 failed: Connection refused\n", transient},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.text);
    const connect_failure f = classify_connect_failure(c.text, false, {});
    EXPECT_EQ(f.ec, errc::server_unreachable);
    EXPECT_EQ(f.kind, c.kind);
    EXPECT_EQ(kind_of_connect_failure(f.ec, clean_message(c.text, {})), c.kind) << "the async driver's path";
  }
  // Whatever the words, the code decides for the server's answers.
  EXPECT_EQ(classify_connect_failure("connection to server at \"127.0.0.1\", port 5432 failed: FATAL:  database "
                                     "\"nope\" does not exist\n",
                                     false, {})
                .kind,
            permanent);
  EXPECT_EQ(classify_connect_failure("connection to server at \"127.0.0.1\", port 5432 failed: FATAL:  sorry, too "
                                     "many clients already\n",
                                     false, {})
                .kind,
            transient);
}

TEST(libpq_failure, needs_password_means_auth_failed_whatever_the_text) {
  EXPECT_EQ(classify_connect_failure("connection to server failed: something new\n", true, {}).ec,
            errc::auth_failed);
}

TEST(libpq_failure, password_never_survives_classification) {
  const auto secrets = passwords_of("postgresql://app:s%40cret@db/app");
  const auto f = classify_connect_failure(
      "connection to server failed: FATAL:  password authentication failed for user \"s@cret\" (s%40cret)\n", false,
      secrets);
  EXPECT_EQ(f.ec, make_sqlstate("28P01"));
  EXPECT_EQ(f.ec, pgpipe::errc_condition::auth_error);
  for (const std::string* text : {&f.message, &f.diag.message, &f.diag.client_message}) {
    EXPECT_EQ(text->find("s@cret"), std::string::npos) << *text;
    EXPECT_EQ(text->find("s%40cret"), std::string::npos) << *text;
  }
}

TEST(libpq_failure, passwords_of_finds_every_spelling) {
  auto has = [](const std::vector<std::string>& v, const std::string& s) {
    return std::find(v.begin(), v.end(), s) != v.end();
  };
  EXPECT_TRUE(has(passwords_of("host=h password=plain"), "plain"));
  EXPECT_TRUE(has(passwords_of("host=h password = 'with space'"), "with space"));
  EXPECT_TRUE(has(passwords_of("host=h password='unterminated and more"), "unterminated and more"));
  EXPECT_TRUE(has(passwords_of("postgresql://u:p%40ss@h/db"), "p%40ss"));
  EXPECT_TRUE(has(passwords_of("postgresql://u:p%40ss@h/db"), "p@ss"));
  EXPECT_TRUE(has(passwords_of("postgresql://u@h/db?password=q1&sslmode=disable"), "q1"));
  EXPECT_TRUE(has(passwords_of("postgresql://u:broken@[::1/db"), "broken"));
  EXPECT_TRUE(passwords_of("host=h user=u").empty());
  // '&' belongs to a keyword/value password: no prefix of it becomes a secret
  // (a one-letter "secret" would scrub that letter from every message).
  EXPECT_EQ(passwords_of("host=h password=C&x%y"), (std::vector<std::string>{"C&x%y"}));
  const auto longest_first = passwords_of("password=ab postgresql://u:abc@h");
  ASSERT_GE(longest_first.size(), 2u);
  EXPECT_GE(longest_first[0].size(), longest_first[1].size());
}

TEST(libpq_failure, conninfo_parse_error_names_the_reason_without_the_password) {
  EXPECT_EQ(conninfo_parse_error("host=h password=fine", passwords_of("host=h password=fine")), "");
  for (std::string bad : {std::string("host=h password='s3cret-unterminated"),
                          std::string("postgresql://u:s3cret-uri@h/db?bogus=1"),
                          std::string("host=h password=s3cret-bare nonsense")}) {
    SCOPED_TRACE(redact_conninfo(bad));
    const std::string why = conninfo_parse_error(bad, passwords_of(bad));
    EXPECT_FALSE(why.empty());
    EXPECT_EQ(why.find("s3cret"), std::string::npos) << why;
    EXPECT_EQ(why.find('\n'), std::string::npos);
  }
}

TEST(libpq_failure, blocking_connect_settings_use_the_same_parse_error) {
  const std::string bad = "host=h password='s3cret";
  try {
    make_connect_settings(bad, std::chrono::milliseconds(1000));
    FAIL() << "a bad conninfo was accepted";
  } catch (const error& e) {
    EXPECT_EQ(e.code(), errc::bad_conninfo);
    EXPECT_EQ(e.diag().client_message, "invalid connection string: " + conninfo_parse_error(bad, passwords_of(bad)));
    EXPECT_EQ(std::string(e.what()).find("s3cret"), std::string::npos);
  }
}

TEST(libpq_failure, nul_byte_check) {
  std::vector<std::optional<std::string>> values{std::string("ok"), std::nullopt, std::string("a\0b", 3)};
  EXPECT_EQ(first_value_with_nul(values), std::optional<std::size_t>(2));
  values.pop_back();
  EXPECT_EQ(first_value_with_nul(values), std::nullopt);
  EXPECT_NE(nul_byte_message(3).find("$3"), std::string::npos);
}

}  // namespace
}  // namespace pgpipe::detail
