#include "scram/require_auth.hpp"

// The rules follow libpq 18 (16 and 17: the same without oauth):
// - a list is either all plain methods (start from nothing allowed, and the
//   server must run an exchange unless "none" is listed) or all negated
//   (start from everything allowed, no exchange required unless "!none");
// - SASL requests are allowed exactly when some SASL mechanism
//   (scram-sha-256, oauth) is; the mechanism itself is checked once the
//   client has chosen one from the server's list;
// - a method named twice is refused: in a security setting a duplicate is
//   most likely a typo.

namespace pgpipe::scram::detail {
namespace {

constexpr std::uint32_t bit(int code) { return std::uint32_t{1} << code; }
constexpr std::uint32_t sasl_bits = bit(auth_request::sasl) | bit(auth_request::sasl_continue) | bit(auth_request::sasl_final);

std::string quoted(std::string_view s) { return "\"" + std::string(s) + "\""; }

const char* description(int code) {
  switch (code) {
    case auth_request::cleartext: return "server requested a cleartext password";
    case auth_request::md5: return "server requested a hashed password";
    case auth_request::gss:
    case auth_request::gss_continue: return "server requested GSSAPI authentication";
    case auth_request::sspi: return "server requested SSPI authentication";
    case auth_request::sasl:
    case auth_request::sasl_continue:
    case auth_request::sasl_final: return "server requested SASL authentication";
    default: return "server requested an unknown authentication type";
  }
}

}  // namespace

std::string require_auth_policy::parse(std::string_view value, int libpq_version, require_auth_policy& out) {
  const bool has_oauth = libpq_version >= 180000;
  out = require_auth_policy{};
  if (value.empty()) return {};
  require_auth_policy p;
  p.text_ = std::string(value);
  p.auth_required_ = true;
  p.allowed_requests_ = 0;
  p.scram_allowed_ = false;
  p.oauth_allowed_ = false;
  bool negated = false;
  bool first = true;
  std::string_view rest = value;
  for (bool more = true; more; first = false) {
    // libpq's parse_comma_separated_list: split on ',', no unquoting, and
    // surrounding blanks are part of the name (so they fail as unknown).
    const auto comma = rest.find(',');
    more = comma != std::string_view::npos;
    const std::string_view part = rest.substr(0, comma);
    if (more) rest.remove_prefix(comma + 1);
    std::string_view method = part;
    if (!method.empty() && method.front() == '!') {
      if (first) {
        p.auth_required_ = false;
        p.allowed_requests_ = ~std::uint32_t{0};
        p.scram_allowed_ = true;
        p.oauth_allowed_ = has_oauth;
      } else if (!negated) {
        return "negative require_auth method " + quoted(method) + " cannot be mixed with non-negative methods";
      }
      negated = true;
      method.remove_prefix(1);
    } else if (negated) {
      return "require_auth method " + quoted(method) + " cannot be mixed with negative methods";
    }
    const auto duplicate = [&] { return "require_auth method " + quoted(part) + " is specified more than once"; };

    std::uint32_t bits = 0;
    bool* mechanism = nullptr;
    if (method == "password") {
      bits = bit(auth_request::cleartext);
    } else if (method == "md5") {
      bits = bit(auth_request::md5);
    } else if (method == "gss") {
      bits = bit(auth_request::gss) | bit(auth_request::gss_continue);
    } else if (method == "sspi") {
      bits = bit(auth_request::sspi) | bit(auth_request::gss_continue);
    } else if (method == "scram-sha-256") {
      mechanism = &p.scram_allowed_;
    } else if (method == "oauth" && has_oauth) {
      mechanism = &p.oauth_allowed_;
    } else if (method == "none") {
      // A method for negation's sake, with no request codes of its own.
      if (p.auth_required_ == negated) return duplicate();
      p.auth_required_ = negated;
      continue;
    } else {
      return "invalid require_auth value: " + quoted(method);
    }

    if (mechanism != nullptr) {
      if (*mechanism == !negated) return duplicate();
      *mechanism = !negated;
    } else if (negated) {
      if ((p.allowed_requests_ & bits) == 0) return duplicate();
      p.allowed_requests_ &= ~bits;
    } else {
      if ((p.allowed_requests_ & bits) == bits) return duplicate();
      p.allowed_requests_ |= bits;
    }
  }
  const bool any_mechanism = p.scram_allowed_ || p.oauth_allowed_;
  if (!negated && any_mechanism) p.allowed_requests_ |= sasl_bits;
  if (negated && !any_mechanism) p.allowed_requests_ &= ~sasl_bits;
  out = std::move(p);
  return {};
}

std::string require_auth_policy::failure(std::string_view reason) const {
  return "authentication method requirement " + quoted(text_) + " failed: " + std::string(reason);
}

std::string require_auth_policy::check_request(int code, bool client_finished_auth) const {
  if (!set()) return {};
  switch (code) {
    case auth_request::ok:
      if (!auth_required_ || client_finished_auth) return {};
      return failure("server did not complete authentication");
    case auth_request::cleartext:
    case auth_request::md5:
    case auth_request::gss:
    case auth_request::gss_continue:
    case auth_request::sspi:
    case auth_request::sasl:
    case auth_request::sasl_continue:
    case auth_request::sasl_final:
      if ((allowed_requests_ & bit(code)) != 0) return {};
      return failure(description(code));
    default:
      return failure(description(code));
  }
}

std::string require_auth_policy::check_mechanism(std::string_view mechanism) const {
  if (!set()) return {};
  const bool scram = mechanism == "SCRAM-SHA-256" || mechanism == "SCRAM-SHA-256-PLUS";
  if (scram ? scram_allowed_ : mechanism == "OAUTHBEARER" && oauth_allowed_) return {};
  return failure("server requested " + std::string(mechanism) + " authentication");
}

}  // namespace pgpipe::scram::detail
