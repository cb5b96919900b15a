// Rows read straight into C++ types (the kinds of T: pgpipe/row_shape.hpp):
//
//   user u = r.as<user>();                       // exactly one row
//   std::optional<user> u = r.as_opt<user>();    // at most one row
//   for (const user& u : r.rows_as<user>()) ...  // every row, one at a time
//   std::vector<user> all = r.to_vector<user>(); // every row at once
//   user u = r[3].as<user>();                    // one row of many
//
// The result's columns are checked against T once, before any row is read
// (count, names, type OIDs); rows then decode without further checks.
// Errors, thrown as pgpipe::error with a message naming what went wrong:
//   the query's own error, when the result is a failed one;
//   errc::columns_mismatch: the columns do not fit T (row_shape.hpp);
//   errc::type_mismatch: a column's type cannot be read as its field's type,
//     naming the field, the column and both types;
//   errc::null_value, errc::conversion_error, errc::out_of_range: one value
//     (NULL into a non-optional field, bytes that are not a value, a value the
//     field cannot hold), naming the row, the column and the field;
//   errc::out_of_range from as()/as_opt(): a row count they do not allow.
// A value that fails stops the read: to_vector() returns nothing, a
// rows_as() loop throws from the iterator's increment (or begin()).
//
// typed_rows is a view, like row: valid while its result lives, except that
// rows_as() called on an rvalue result keeps that result inside the view, so
// `for (const user& u : pool.exec(...).rows_as<user>())` is safe.
//
// Thread-safety: as result (const reads from any thread); one typed_rows
// iterator per thread.
#pragma once

#include <pgpipe/result.hpp>
#include <pgpipe/row_shape.hpp>

#include <boost/container/small_vector.hpp>

#include <pgpipe/detail/libpq_result.hpp>
#include <pgpipe/detail/value_note.hpp>

#include <array>
#include <cstddef>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

namespace pgpipe {
namespace detail {

/// Where each of T's fields comes from in one result: the shape check's answer.
template <class T>
struct row_plan {
  std::array<member_column, row_traits<T>::members.size()> columns{};
};

/// Checks `res` (may be null: no columns) against T; on failure sets
/// `message` and returns the code.
template <class T>
std::error_code plan_rows(const PGresult* res, row_plan<T>& plan, std::string& message) {
  const int n = res ? PQnfields(res) : 0;
  boost::container::small_vector<column_desc, 16> cols;
  cols.reserve(static_cast<std::size_t>(n));
  for (int c = 0; c < n; ++c)
    cols.push_back(column_desc{PQfname(res, c), static_cast<type_oid>(PQftype(res, c)),
                               PQfformat(res, c) == 1 ? wire_format::binary : wire_format::text});
  return check_row_shape(cols, row_traits<T>::members, row_traits<T>::by_name, plan.columns, message);
}

template <class M>
std::error_code decode_member(const PGresult* res, int row, const member_column& c, M& out) {
  using V = row_shape::field_value_of<M>;
  if (PQgetisnull(res, row, c.column)) {
    if constexpr (V::nullable) {
      out.reset();
      return {};
    } else {
      return make_error_code(errc::null_value);
    }
  }
  const field_value v{{PQgetvalue(res, row, c.column), static_cast<std::size_t>(PQgetlength(res, row, c.column))},
                      c.type,
                      c.format};
  if constexpr (V::nullable) {
    auto& x = out.emplace();
    auto ec = traits_detect::decode_value(v, x);
    if (ec) out.reset();
    return ec;
  } else {
    return traits_detect::decode_value(v, out);
  }
}

/// Decodes row `row` of a result `plan` was made for; on failure the code,
/// with `failed` set to the field's index.
template <class T>
std::error_code decode_row(const PGresult* res, int row, const row_plan<T>& plan, T& out, std::size_t& failed) {
  std::error_code ec;
  row_traits<T>::for_each(out, [&](auto i, auto& member) {
    if (ec) return;
    ec = decode_member(res, row, plan.columns[i], member);
    if (ec) failed = i;
  });
  return ec;
}

/// The message of a value that failed in decode_row with `ec`. A stream,
/// whose results hold a few rows each, names the row by its place in the
/// whole stream (`shown_row`); by default it is `row`.
template <class T>
std::string describe_failed_value(const PGresult* res, int row, const row_plan<T>& plan, std::size_t failed,
                                  std::error_code ec, long long shown_row = -1) {
  const member_column& mc = plan.columns[failed];
  const column_desc col{PQfname(res, mc.column), mc.type, mc.format};
  std::string m = describe_member_value(row_traits<T>::members[failed], failed, col, mc.column,
                                        shown_row >= 0 ? shown_row : row);
  // A short sample of text that is not a value (an enum label the C++ side
  // does not list, a malformed number) says what to fix; values are data.
  if (ec == errc::conversion_error && mc.format == wire_format::text) {
    const std::string_view t(PQgetvalue(res, row, mc.column), static_cast<std::size_t>(PQgetlength(res, row, mc.column)));
    m += " (text \"" + std::string(t.substr(0, 40)) + (t.size() > 40 ? "...\")" : "\")");
  }
  const std::string_view bytes(PQgetvalue(res, row, mc.column), static_cast<std::size_t>(PQgetlength(res, row, mc.column)));
  if (std::string note = take_value_note(bytes); !note.empty()) m += ", " + note;
  return m;
}

template <class T>
[[noreturn]] void throw_failed_value(const PGresult* res, int row, const row_plan<T>& plan, std::size_t failed,
                                     std::error_code ec) {
  throw error(ec, describe_failed_value(res, row, plan, failed, ec));
}

/// Non-throwing reads for the operations that hand T to a handler: the
/// query's own error is not checked here (the caller has it).
///@{
template <class T>
std::error_code rows_to_vector(const PGresult* res, std::vector<T>& out, std::string& message) {
  row_plan<T> plan;
  if (auto ec = plan_rows(res, plan, message)) return ec;
  const int n = res ? PQntuples(res) : 0;
  out.clear();
  out.reserve(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r) {
    std::size_t failed = 0;
    if (auto ec = decode_row(res, r, plan, out.emplace_back(), failed)) {
      message = describe_failed_value(res, r, plan, failed, ec);
      out.clear();
      return ec;
    }
  }
  return {};
}
/// At most one row (`required`: exactly one) into `out`.
template <class T>
std::error_code row_to_optional(const PGresult* res, bool required, std::optional<T>& out, std::string& message) {
  out.reset();
  // The shape first: a row type that does not fit is a mistake whatever
  // the row count, so it shows even when the query found nothing.
  row_plan<T> plan;
  if (auto ec = plan_rows(res, plan, message)) return ec;
  const int n = res ? PQntuples(res) : 0;
  if (n > 1 || (required && n == 0)) {
    message = std::string(required ? "expected exactly one row" : "expected at most one row") +
              ", the query returned " + std::to_string(n);
    return make_error_code(errc::out_of_range);
  }
  if (n == 0) return {};
  std::size_t failed = 0;
  if (auto ec = decode_row(res, 0, plan, out.emplace(), failed)) {
    message = describe_failed_value(res, 0, plan, failed, ec);
    out.reset();
    return ec;
  }
  return {};
}
///@}

}  // namespace detail

/// The rows of a result read as T, one at a time (see the file comment).
/// An input range: `for (const T& x : r.rows_as<T>())`. The shape was
/// checked when the view was made.
template <row_type T>
class typed_rows {
 public:
  /// An input iterator holding the current row's T; it reads the next row
  /// in operator++ (and the first in begin()), throwing pgpipe::error when
  /// a value cannot be read.
  class iterator {
   public:
    /// The standard input iterator types.
    ///@{
    using iterator_concept = std::input_iterator_tag;
    using iterator_category = std::input_iterator_tag;
    using value_type = T;
    using difference_type = std::ptrdiff_t;
    using reference = const T&;
    using pointer = const T*;
    ///@}
    iterator() = default;
    /// The current row's value.
    ///@{
    const T& operator*() const noexcept { return value_; }
    const T* operator->() const noexcept { return &value_; }
    ///@}
    /// Reads the next row.
    ///@{
    iterator& operator++() {
      ++row_;
      load();
      return *this;
    }
    void operator++(int) { ++*this; }
    ///@}
    /// True past the last row.
    friend bool operator==(const iterator& it, std::default_sentinel_t) noexcept {
      return it.row_ >= it.end_;
    }

   private:
    friend class typed_rows;
    explicit iterator(const typed_rows* view) : view_(view), end_(view->rows_) { load(); }
    void load() {
      if (row_ >= end_) return;
      std::size_t failed = 0;
      if (auto ec = detail::decode_row(view_->res_, row_, view_->plan_, value_, failed))
        detail::throw_failed_value(view_->res_, row_, view_->plan_, failed, ec);
    }

    const typed_rows* view_ = nullptr;
    int row_ = 0;
    int end_ = 0;
    T value_{};
  };

  /// Reads the first row (throwing as operator++ does).
  [[nodiscard]] iterator begin() const { return iterator(this); }
  /// The end of the rows.
  [[nodiscard]] std::default_sentinel_t end() const noexcept { return {}; }
  /// The number of rows.
  [[nodiscard]] std::size_t size() const noexcept { return static_cast<std::size_t>(rows_); }
  /// True when there are no rows.
  [[nodiscard]] bool empty() const noexcept { return rows_ == 0; }

 private:
  friend class result;
  // `owned` is empty for a view of another result.
  typed_rows(const PGresult* res, result owned) : owned_(std::move(owned)), res_(res) {
    std::string message;
    if (auto ec = detail::plan_rows(res_, plan_, message)) throw error(ec, message);
    rows_ = res_ ? PQntuples(res_) : 0;
  }

  result owned_;
  const PGresult* res_;
  int rows_ = 0;
  detail::row_plan<T> plan_;
};

template <row_type T>
T row::as() const {
  detail::row_plan<T> plan;
  std::string message;
  if (auto ec = detail::plan_rows(res_, plan, message)) throw error(ec, message);
  T out{};
  std::size_t failed = 0;
  if (auto ec = detail::decode_row(res_, idx_, plan, out, failed)) detail::throw_failed_value(res_, idx_, plan, failed, ec);
  return out;
}

template <row_type T>
T result::as() const {
  throw_if_failed();
  std::optional<T> out;
  std::string message;
  if (auto ec = detail::row_to_optional(res_.get(), true, out, message)) throw error(ec, message);
  return std::move(*out);
}

template <row_type T>
std::optional<T> result::as_opt() const {
  throw_if_failed();
  std::optional<T> out;
  std::string message;
  if (auto ec = detail::row_to_optional(res_.get(), false, out, message)) throw error(ec, message);
  return out;
}

/// The rows as T, read lazily; the result must outlive the range (see the
/// declaration in result.hpp).
template <row_type T>
typed_rows<T> result::rows_as() const& {
  throw_if_failed();
  return typed_rows<T>(res_.get(), result());
}

/// The rows as T from a temporary result, which the range then keeps.
template <row_type T>
typed_rows<T> result::rows_as() && {
  throw_if_failed();
  const PGresult* res = res_.get();
  return typed_rows<T>(res, std::move(*this));
}

template <row_type T>
std::vector<T> result::to_vector() const {
  throw_if_failed();
  std::vector<T> out;
  std::string message;
  if (auto ec = detail::rows_to_vector(res_.get(), out, message)) throw error(ec, message);
  return out;
}

}  // namespace pgpipe
