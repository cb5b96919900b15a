// Mapping your own types: a strong id type and an enum, through the public
// customisation points in <pgpipe/type_traits.hpp>. The same traits serve
// both drivers (async field::get<T>() and blocking pgpipe::get<T>()).
//
//   example_custom_types "host=... user=... password=... dbname=..."
//   PGPIPE_CONNINFO=... example_custom_types
#include <pgpipe/pgpipe.hpp>
#include <pgpipe/type_traits.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>

#include <cstdint>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <optional>
#include <string>
#include <string_view>

namespace shop {

/// A strong id: an int8 column, but not interchangeable with other integers.
struct user_id {
  std::int64_t value = 0;
  friend bool operator==(user_id, user_id) = default;
};

/// Stored as a PostgreSQL enum: create type order_status as enum ('pending', 'shipped', 'cancelled').
enum class order_status { pending, shipped, cancelled };

inline std::string_view to_string(order_status s) {
  switch (s) {
    case order_status::pending: return "pending";
    case order_status::shipped: return "shipped";
    case order_status::cancelled: return "cancelled";
  }
  return "?";
}

}  // namespace shop

// A strong id delegates to the int8 mapping: same type OID, same binary
// form, same column check, so reading it from a text column is a
// type_mismatch like reading an int64 would be.
template <>
struct pgpipe::param_traits<shop::user_id> {
  using base = param_traits<std::int64_t>;
  static constexpr type_oid oid = base::oid;
  static std::optional<std::string> encode(shop::user_id v) { return base::encode(v.value); }
  static std::error_code encode_binary(shop::user_id v, std::string& out) { return base::encode_binary(v.value, out); }
};
template <>
struct pgpipe::field_traits<shop::user_id> {
  static bool accepts(type_oid t) { return field_traits<std::int64_t>::accepts(t); }
  static std::string cpp_name() { return "shop::user_id"; }
  static std::error_code decode(const field_value& v, shop::user_id& out) {
    return field_traits<std::int64_t>::decode(v, out.value);
  }
};

// An enum goes as its label, in text with no type OID: the server gives it
// the enum type the statement expects. Reading accepts any column (an enum's
// OID is assigned when the type is created) and checks the label instead.
template <>
struct pgpipe::param_traits<shop::order_status> {
  static std::optional<std::string> encode(shop::order_status s) { return std::string(to_string(s)); }
};
template <>
struct pgpipe::field_traits<shop::order_status> {
  static std::string cpp_name() { return "shop::order_status"; }
  static std::error_code decode(const field_value& v, shop::order_status& out) {
    for (auto s : {shop::order_status::pending, shop::order_status::shipped, shop::order_status::cancelled}) {
      if (v.data == to_string(s)) {
        out = s;
        return {};
      }
    }
    return make_error_code(errc::conversion_error);
  }
};

namespace {

boost::asio::awaitable<int> run(pgpipe::async_client& client) {
  // With a real table this would be
  //   select id, status from orders where id = $1 and status = $2
  // with status of type order_status; the casts stand in for the columns.
  auto [ec, r] = co_await client.async_query("select $1::int8 + 1 as next_id, $2::text as status",
                                             shop::user_id{41}, shop::order_status::shipped,
                                             boost::asio::as_tuple(boost::asio::use_awaitable));
  if (ec) {
    std::cerr << "query failed: " << ec.message() << " " << r.diag().to_string() << "\n";
    co_return 1;
  }
  const auto id = r.at(0).get<shop::user_id>("next_id");
  const auto status = r.at(0).get<shop::order_status>("status");
  std::cout << "next id " << id.value << ", status " << to_string(status) << "\n";

  // A mismatch names the column and both types.
  bool refused = false;
  try {
    (void)r.at(0).get<shop::user_id>("status");
  } catch (const pgpipe::error& e) {
    refused = e.code() == pgpipe::errc::type_mismatch;
    std::cout << "as expected: " << e.what() << "\n";
  }
  co_return id == shop::user_id{42} && status == shop::order_status::shipped && refused ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const char* conninfo = argc > 1 ? argv[1] : std::getenv("PGPIPE_CONNINFO");
  if (!conninfo) {
    std::cerr << "usage: " << argv[0] << " CONNINFO (or set PGPIPE_CONNINFO)\n";
    return 2;
  }
  pgpipe::pool_params params;
  params.conninfo = conninfo;
  params.max_size = 1;
  pgpipe::async_client client(params);
  try {
    // The coroutine runs on one of the client's loops; main waits for it.
    return boost::asio::co_spawn(client.get_executor(), run(client), boost::asio::use_future).get();
  } catch (const std::exception& e) {
    std::cerr << "failed: " << e.what() << "\n";
    return 1;
  }
}
