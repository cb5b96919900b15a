#include "scram/probe_target.hpp"

#include <cstring>
#include <libpq-fe.h>
#include <map>
#include <memory>

#include "pq/libpq_failure.hpp"
#include "scram/crypto.hpp"

namespace pgpipe::scram::detail {
namespace {

std::string first_of_list(const std::string& s) { return s.substr(0, s.find(',')); }

}  // namespace

std::string resolve_probe_target(const std::string& conninfo, probe_target& t) {
  char* err = nullptr;
  std::unique_ptr<PQconninfoOption, decltype(&PQconninfoFree)> opts(PQconninfoParse(conninfo.c_str(), &err),
                                                                    &PQconninfoFree);
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
  // Unset keys: libpq's defaults and PG* environment variables.
  std::unique_ptr<PQconninfoOption, decltype(&PQconninfoFree)> defaults(PQconndefaults(), &PQconninfoFree);
  for (auto* o = defaults.get(); o && o->keyword != nullptr; ++o) {
    if (o->val != nullptr && *o->val != '\0' && std::string(o->keyword) != "password") {
      values.emplace(o->keyword, o->val);
    }
  }
  auto get = [&](const char* k, const char* def = "") {
    auto it = values.find(k);
    return it == values.end() ? std::string(def) : it->second;
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
  if (t.user.empty()) return "no user name: set user= in the connection string or PGUSER";
  static const char* modes[] = {"disable", "allow", "prefer", "require", "verify-ca", "verify-full"};
  bool mode_ok = false;
  for (const char* m : modes) mode_ok = mode_ok || t.sslmode == m;
  if (!mode_ok) return "invalid sslmode \"" + t.sslmode + "\"";
  if (t.channel_binding != "disable" && t.channel_binding != "prefer" && t.channel_binding != "require") {
    return "invalid channel_binding \"" + t.channel_binding + "\"";
  }
  return {};
}

}  // namespace pgpipe::scram::detail
