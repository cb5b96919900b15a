#include "scram/probe_target.hpp"

#include <cstring>
#include <libpq-fe.h>
#include <map>
#include <memory>
#include <openssl/ssl.h>

#include "pq/libpq_failure.hpp"
#include "scram/crypto.hpp"

namespace pgpipe::scram::detail {
namespace {

std::string first_of_list(const std::string& s) { return s.substr(0, s.find(',')); }

using options_ptr = std::unique_ptr<PQconninfoOption, decltype(&PQconninfoFree)>;

// The options that change authentication or TLS negotiation which the
// probe does not speak: set away from libpq's default, each is refused by
// name. GSSAPI encryption other than "require" stays allowed: libpq tries
// it only with Kerberos credentials at hand, and otherwise goes on as the
// probe does.
struct refused_option {
  const char* key;
  const char* refused_value;  // nullptr: any value away from the default
};
constexpr refused_option refused_options[] = {
    {"sslcert", nullptr},          {"sslkey", nullptr},          {"sslpassword", nullptr},
    {"sslcrl", nullptr},           {"sslcrldir", nullptr},       {"requirepeer", nullptr},
    {"gssencmode", "require"},     {"krbsrvname", nullptr},      {"gsslib", nullptr},
    {"gssdelegation", nullptr},    {"scram_client_key", nullptr}, {"scram_server_key", nullptr},
    {"oauth_issuer", nullptr},     {"oauth_client_id", nullptr}, {"oauth_client_secret", nullptr},
    {"oauth_scope", nullptr},      {"service", nullptr},
};

// The ones it honours, reported when set.
constexpr const char* honoured_options[] = {
    "sslmode",          "sslnegotiation",   "sslrootcert",          "sslcertmode",
    "sslsni",           "channel_binding",  "require_auth",         "ssl_min_protocol_version",
    "ssl_max_protocol_version", "min_protocol_version", "max_protocol_version", "gssencmode",
};

std::string invalid_value(const std::string& key, const std::string& value) {
  return "invalid " + key + " value: \"" + value + "\"";
}

// "TLSv1.2" -> TLS1_2_VERSION; "" -> 0 (no bound); -1: not a version.
int tls_version(const std::string& v) {
  if (v.empty()) return 0;
  if (v == "TLSv1") return TLS1_VERSION;
  if (v == "TLSv1.1") return TLS1_1_VERSION;
  if (v == "TLSv1.2") return TLS1_2_VERSION;
  if (v == "TLSv1.3") return TLS1_3_VERSION;
  return -1;
}

// "3.0" -> 0, "3.2" and "latest" -> 2; -1: not one libpq 18 accepts.
int protocol_minor(const std::string& v) {
  if (v == "3.0") return 0;
  if (v == "3.2" || v == "latest") return 2;
  return -1;
}

}  // namespace

std::string resolve_probe_target(const std::string& conninfo, bool password_chosen, probe_target& t) {
  char* err = nullptr;
  options_ptr opts(PQconninfoParse(conninfo.c_str(), &err), &PQconninfoFree);
  if (!opts) {
    // libpq quotes parts of a malformed string back (a broken URI whole,
    // with its password): the drivers' scrubber finds every spelling of the
    // password even in a string that does not parse.
    if (err) PQfreemem(err);
    return "invalid connection string: " + pgpipe::detail::conninfo_parse_error(conninfo, pgpipe::detail::passwords_of(conninfo));
  }
  std::map<std::string, std::string> values;
  for (auto* o = opts.get(); o->keyword != nullptr; ++o) {
    if (o->val != nullptr && *o->val != '\0') values[o->keyword] = o->val;
  }
  // Unset keys: libpq's defaults and PG* environment variables. `compiled`
  // tells a value someone set from libpq's own default.
  std::map<std::string, std::string> compiled;
  options_ptr defaults(PQconndefaults(), &PQconninfoFree);
  for (auto* o = defaults.get(); o && o->keyword != nullptr; ++o) {
    if (o->compiled != nullptr) compiled[o->keyword] = o->compiled;
    if (o->val != nullptr && *o->val != '\0' && std::string(o->keyword) != "password") {
      values.emplace(o->keyword, o->val);
    }
  }
  auto get = [&](const char* k, const char* def = "") {
    auto it = values.find(k);
    return it == values.end() ? std::string(def) : it->second;
  };
  // Set: a value that is not libpq's compiled default.
  auto is_set = [&](const std::string& k) {
    auto v = values.find(k);
    if (v == values.end()) return false;
    auto c = compiled.find(k);
    return c == compiled.end() || c->second != v->second;
  };
  t.host = first_of_list(get("host"));
  t.hostaddr = first_of_list(get("hostaddr"));
  t.port = first_of_list(get("port", "5432"));
  if (t.port.empty()) t.port = "5432";
  if (t.host.empty() && t.hostaddr.empty()) t.host = "/var/run/postgresql";  // Debian's DEFAULT_PGSOCKET_DIR
  t.user = get("user");
  t.dbname = get("dbname");
  if (t.dbname.empty()) t.dbname = t.user;
  t.sslmode = get("sslmode", "prefer");
  t.sslrootcert = get("sslrootcert");
  t.channel_binding = get("channel_binding", "prefer");
  t.connect_timeout = get("connect_timeout");
  auto pw = opts.get();
  for (; pw->keyword != nullptr; ++pw) {
    if (std::string(pw->keyword) == "password" && pw->val != nullptr) t.password = pw->val;
  }
  // Wipe libpq's copy of the password before it is freed.
  for (auto* o = opts.get(); o->keyword != nullptr; ++o) {
    if (std::string(o->keyword) == "password" && o->val != nullptr) cleanse(o->val, std::strlen(o->val));
  }

  for (const auto& r : refused_options) {
    if (!is_set(r.key)) continue;
    if (r.refused_value != nullptr && get(r.key) != r.refused_value) continue;
    // A key's value may be a secret (sslpassword, scram keys): name only the key.
    return std::string(r.key) + " is set, and the probe does not implement it (it would answer for a client "
           "that ignores " + r.key + "); unset it (or its PG* environment variable) to probe";
  }
  // libpq reads a password file only when it has no password.
  if (is_set("passfile") && !password_chosen && t.password.empty()) {
    return "passfile is set and no password is given, and the probe does not read password files; "
           "give the password on stdin or with --password-file";
  }
  for (const char* k : honoured_options) {
    if (is_set(k)) t.in_force.push_back(std::string(k) + "=" + get(k));
  }

  // The checks below follow libpq's connectOptions2, in its order and words.
  static const char* modes[] = {"disable", "allow", "prefer", "require", "verify-ca", "verify-full"};
  bool mode_ok = false;
  for (const char* m : modes) mode_ok = mode_ok || t.sslmode == m;
  if (!mode_ok) return invalid_value("sslmode", t.sslmode);
  if (t.channel_binding != "disable" && t.channel_binding != "prefer" && t.channel_binding != "require") {
    return invalid_value("channel_binding", t.channel_binding);
  }
  if (auto e = require_auth_policy::parse(get("require_auth"), PQlibVersion(), t.require_auth); !e.empty()) return e;
  if (values.count("sslnegotiation")) {
    t.sslnegotiation = get("sslnegotiation");
    if (t.sslnegotiation != "postgres" && t.sslnegotiation != "direct") {
      return invalid_value("sslnegotiation", t.sslnegotiation);
    }
    // A weak mode could fall back to plaintext after a direct attempt.
    if (t.sslnegotiation == "direct" && t.sslmode[0] != 'r' && t.sslmode[0] != 'v') {
      return "weak sslmode \"" + t.sslmode +
             "\" may not be used with sslnegotiation=direct (use \"require\", \"verify-ca\", or \"verify-full\")";
    }
  }
  if (t.sslrootcert == "system" && PQlibVersion() >= 160000) {
    return "sslrootcert=system is set, and the probe does not implement it (the system's CA store); "
           "give the CA file's path instead";
  }
  if (values.count("sslcertmode")) {
    t.sslcertmode = get("sslcertmode");
    if (t.sslcertmode != "disable" && t.sslcertmode != "allow" && t.sslcertmode != "require") {
      return invalid_value("sslcertmode", t.sslcertmode);
    }
  }
  t.sslsni = get("sslsni", "1") != "0";
  const std::string ssl_min = get("ssl_min_protocol_version", "TLSv1.2");
  const std::string ssl_max = get("ssl_max_protocol_version");
  // libpq 17 and later quote these two names; 15 and 16 do not.
  const auto invalid_tls_version = [](const std::string& key, const std::string& value) {
    return PQlibVersion() >= 170000 ? "invalid \"" + key + "\" value: \"" + value + "\"" : invalid_value(key, value);
  };
  t.ssl_min_protocol = tls_version(ssl_min);
  if (t.ssl_min_protocol < 0) return invalid_tls_version("ssl_min_protocol_version", ssl_min);
  t.ssl_max_protocol = tls_version(ssl_max);
  if (t.ssl_max_protocol < 0) return invalid_tls_version("ssl_max_protocol_version", ssl_max);
  if (t.ssl_min_protocol != 0 && t.ssl_max_protocol != 0 && t.ssl_min_protocol > t.ssl_max_protocol) {
    return "invalid SSL protocol version range";
  }
  if (values.count("min_protocol_version")) {
    t.min_protocol_minor = protocol_minor(get("min_protocol_version"));
    if (t.min_protocol_minor < 0) return invalid_value("min_protocol_version", get("min_protocol_version"));
  }
  if (values.count("max_protocol_version")) {
    t.max_protocol_minor = protocol_minor(get("max_protocol_version"));
    if (t.max_protocol_minor < 0) return invalid_value("max_protocol_version", get("max_protocol_version"));
  } else {
    // libpq 18 asks for 3.0 unless a higher minimum makes that pointless.
    t.max_protocol_minor = t.min_protocol_minor > 0 ? 2 : 0;
  }
  if (t.min_protocol_minor > t.max_protocol_minor) {
    return "\"min_protocol_version\" is greater than \"max_protocol_version\"";
  }
  if (t.user.empty()) return "no user name: set user= in the connection string or PGUSER";
  return {};
}

}  // namespace pgpipe::scram::detail
