// pgpipe::result: the outcome of one query, the same type in both drivers.
//
// A result owns its PGresult (move-only, freed with PQclear); row and field
// are cheap views into it and must not outlive it. Values are converted on
// demand with get<T>() through pgpipe::field_traits (pgpipe/type_traits.hpp
// lists the mappings: integers, floats, strings, bytea, uuid, dates and
// times, numeric, json, arrays, std::optional for NULL), in whichever format
// the column arrived: text, unless query_options::results asked for binary
// or a typed read (async_query_as, blocking_pool::query_as) chose binary
// because every field of its row type reads it (pgpipe/query_options.hpp).
// The column's type OID is checked first: a C++ type that cannot hold it is
// errc::type_mismatch, whose message names the column, the PostgreSQL type
// and the C++ type. Then errc::conversion_error (bytes that are not a valid
// value), errc::out_of_range (a valid value T cannot hold) or
// errc::null_value (NULL into a non-optional type). get<T>() throws
// pgpipe::error; the overloads taking std::error_code& report instead.
//
// Whole rows read straight into C++ types (a described struct, a tuple, an
// aggregate), checked against the columns once: as<T>(), rows_as<T>(),
// to_vector<T>() (pgpipe/typed_rows.hpp, pgpipe/row_shape.hpp).
//
// A failed query's result remembers its error (code() and diag()): reading
// what the query produced from it (size(), empty(), rows, iteration,
// value<T>(), affected_rows(), command_tag()...) throws that pgpipe::error,
// with the server's SQLSTATE and message, rather than reading as zero rows.
// Only code(), failed(), has_value(), diag(), native_handle() and release()
// answer without throwing.
//
// Thread-safety: a result is a value; distinct results may be used from
// distinct threads, a single one is safe to read concurrently (const only).
#pragma once

#include <pgpipe/type_traits.hpp>
#include <pgpipe/error.hpp>
#include <pgpipe/row_shape.hpp>

#include <pgpipe/detail/libpq_result.hpp>
#include <pgpipe/detail/value_note.hpp>

#include <cstddef>
#include <charconv>
#include <cstdint>
#include <iterator>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace pgpipe {

class result;
class row;
template <row_type T>
class typed_rows;

/// One value of one row. A view: valid while its result lives.
class field {
 public:
  /// Column `col` of row `row` of `res` (not owned; normally from row::operator[]).
  field(const PGresult* res, int row, int col) noexcept : res_(res), row_(row), col_(col) {}

  /// True for SQL NULL.
  bool is_null() const noexcept { return PQgetisnull(res_, row_, col_) != 0; }
  /// The value's text as the server sent it ("" for NULL; check is_null()).
  /// A value that arrived in binary (query_options::results) is text only
  /// for the text types and user types such as enums: for any other column
  /// this throws pgpipe::error(errc::type_mismatch) naming the column, never
  /// handing binary bytes over as text; read it with get<T>() or bytes().
  std::string_view text() const {
    const std::string_view b = bytes();
    if (format() == wire_format::binary && !is_null()) {
      std::string_view t;
      if (field_traits<std::string_view>::decode(field_value{b, static_cast<type_oid>(type()), wire_format::binary}, t))
        throw error(errc::type_mismatch, describe_binary_text());
    }
    return b;
  }
  /// The value's bytes in whichever format they arrived (format()): the
  /// text form, or the binary form when binary results were asked for.
  std::string_view bytes() const noexcept {
    return {PQgetvalue(res_, row_, col_), static_cast<std::size_t>(PQgetlength(res_, row_, col_))};
  }
  /// The column's name and type OID.
  ///@{
  std::string_view name() const noexcept { return PQfname(res_, col_); }
  Oid type() const noexcept { return PQftype(res_, col_); }
  ///@}

  /// The format the value arrived in.
  wire_format format() const noexcept { return PQfformat(res_, col_) == 1 ? wire_format::binary : wire_format::text; }
  /// The raw value with its type and format; std::nullopt for NULL.
  std::optional<field_value> value() const noexcept {
    if (is_null()) return std::nullopt;
    return field_value{bytes(), static_cast<type_oid>(type()), format()};
  }

  /// Converts the value; throws pgpipe::error (type_mismatch,
  /// conversion_error, out_of_range, null_value).
  template <class T>
  [[nodiscard]] T get() const {
    std::error_code ec;
    T v = get<T>(ec);
    if (ec) throw error(ec, describe(ec, detail::cpp_type_name<T>()));
    return v;
  }
  /// Converts the value; on failure sets ec and returns T{}.
  template <class T>
  [[nodiscard]] T get(std::error_code& ec) const {
    T v{};
    ec = detail::decode_field(value(), v);
    if (ec) return T{};
    return v;
  }

 private:
  std::string describe(const std::error_code& ec, const std::string& cpp_type) const {
    // std::system_error appends ec.message() to this.
    std::string m = "column " + std::to_string(col_) + " (\"" + std::string(name()) + "\") of row " +
                    std::to_string(row_) + ", type " + type_name_of(static_cast<type_oid>(type())) +
                    ", read as " + cpp_type;
    // A short sample of the offending text helps; values are data, not secrets.
    if (!is_null() && ec == errc::conversion_error && format() == wire_format::text) {
      auto t = bytes().substr(0, 40);
      m += " (text \"" + std::string(t) + (bytes().size() > 40 ? "...\")" : "\")");
    }
    // Which part of a value made of values failed (a composite's field).
    if (std::string note = detail::take_value_note(bytes()); !note.empty()) m += ", " + note;
    return m;
  }

  std::string describe_binary_text() const {
    return "column " + std::to_string(col_) + " (\"" + std::string(name()) + "\") of row " + std::to_string(row_) +
           ", type " + type_name_of(static_cast<type_oid>(type())) +
           ", arrived in binary and has no text form: read it with get<T>(), or ask for text results";
  }

  const PGresult* res_;
  int row_;
  int col_;
};

/// One row of a result. A view: valid while its result lives.
class row {
 public:
  /// Row `idx` of `res` (not owned; normally from result::operator[]).
  row(const PGresult* res, int idx) noexcept : res_(res), idx_(idx) {}

  /// The number of columns.
  std::size_t size() const noexcept { return static_cast<std::size_t>(PQnfields(res_)); }
  /// Column by position; unchecked (like std::vector::operator[]).
  field operator[](std::size_t col) const noexcept { return field(res_, idx_, static_cast<int>(col)); }
  /// Column by position or by name; throws pgpipe::error(errc::out_of_range).
  ///@{
  field at(std::size_t col) const {
    if (col >= size()) throw error(errc::out_of_range, "column " + std::to_string(col) + " out of range");
    return (*this)[col];
  }
  field at(std::string_view name) const {
    std::string n(name);
    int c = PQfnumber(res_, n.c_str());
    if (c < 0) throw error(errc::out_of_range, "no column named \"" + n + "\"");
    return field(res_, idx_, c);
  }
  ///@}
  /// Shorthand for at(col).get<T>(): converts one column (see field::get).
  ///@{
  template <class T>
  [[nodiscard]] T get(std::size_t col) const {
    return at(col).template get<T>();
  }
  template <class T>
  [[nodiscard]] T get(std::string_view name) const {
    return at(name).template get<T>();
  }
  ///@}
  /// This row's position in its result.
  std::size_t index() const noexcept { return static_cast<std::size_t>(idx_); }

  /// This row read as T (a struct, tuple or single value; pgpipe/typed_rows.hpp
  /// gives the kinds and the errors). The result's columns are checked
  /// against T at each call: to read many rows, use result::rows_as<T>().
  template <row_type T>
  [[nodiscard]] T as() const;

 private:
  const PGresult* res_;
  int idx_;
};

namespace detail {
struct pgresult_deleter {
  void operator()(PGresult* r) const noexcept { PQclear(r); }
};
}  // namespace detail

namespace detail {
/// What diag() shows for a result without diagnostics.
inline const diagnostics no_diagnostics{};
/// Nothing to keep: no field of `d` is set.
inline bool is_blank(const diagnostics& d) noexcept {
  return d.sqlstate.empty() && d.message.empty() && d.client_message.empty() && d.severity.empty() &&
         d.detail.empty() && d.hint.empty() && d.context.empty() && d.schema.empty() && d.table.empty() &&
         d.column.empty() && d.datatype.empty() && d.constraint.empty() && d.position == 0;
}
}  // namespace detail

/// The outcome of one query: rows for a SELECT, a command tag and affected
/// row count for a command, or (failed()) the error code and diagnostics.
class [[nodiscard]] result {
 public:
  result() = default;
  /// Takes ownership of `res` (and of its diagnostics, when given); with
  /// diagnostics only, a result without rows (most errors).
  ///@{
  explicit result(PGresult* res) noexcept : res_(res) {}
  result(PGresult* res, diagnostics diag) noexcept : res_(res), diag_(keep(std::move(diag))) {}
  explicit result(diagnostics diag) noexcept : diag_(keep(std::move(diag))) {}
  ///@}
  /// A failed query's result: `ec` (non-zero) with its diagnostics, and the
  /// server's error PGresult when there is one (taken over).
  result(std::error_code ec, diagnostics diag, PGresult* res = nullptr) noexcept
      : res_(res), diag_(keep(std::move(diag))), ec_(ec) {}
  /// Move-only: a result owns its PGresult.
  ///@{
  result(result&&) noexcept = default;
  result& operator=(result&&) noexcept = default;
  ///@}
  result(const result&) = delete;
  result& operator=(const result&) = delete;

  /// The error the query failed with (the same code its operation
  /// reported); empty for a result that holds rows or a command's outcome.
  [[nodiscard]] std::error_code code() const noexcept { return ec_; }
  /// True when the query failed: reading rows from this result throws.
  [[nodiscard]] bool failed() const noexcept { return static_cast<bool>(ec_); }
  /// Throws pgpipe::error(code(), diag()) when the query failed.
  void throw_if_failed() const {
    if (ec_) throw error(ec_, diag());
  }

  /// True when there is something to read: a PGresult and no error.
  ///@{
  [[nodiscard]] bool has_value() const noexcept { return res_ != nullptr && !ec_; }
  explicit operator bool() const noexcept { return has_value(); }
  ///@}

  /// Rows and columns (0 when there is no PGresult), and column names by
  /// position. Throw pgpipe::error when the query failed.
  ///@{
  [[nodiscard]] std::size_t size() const {
    throw_if_failed();
    return res_ ? static_cast<std::size_t>(PQntuples(res_.get())) : 0;
  }
  [[nodiscard]] bool empty() const { return size() == 0; }
  [[nodiscard]] std::size_t columns() const {
    throw_if_failed();
    return res_ ? static_cast<std::size_t>(PQnfields(res_.get())) : 0;
  }
  [[nodiscard]] std::string_view column_name(std::size_t col) const {
    throw_if_failed();
    const char* n = res_ ? PQfname(res_.get(), static_cast<int>(col)) : nullptr;
    return n ? std::string_view(n) : std::string_view();
  }
  ///@}

  /// Row by position; operator[] does not check the index, at() throws
  /// errc::out_of_range. Both throw the query's error when it failed.
  ///@{
  [[nodiscard]] pgpipe::row operator[](std::size_t r) const {
    throw_if_failed();
    return pgpipe::row(res_.get(), static_cast<int>(r));
  }
  [[nodiscard]] pgpipe::row at(std::size_t r) const {
    if (r >= size()) throw error(errc::out_of_range, "row " + std::to_string(r) + " out of range");
    return (*this)[r];
  }
  ///@}

  /// The only row of a query that must return exactly one (a lookup by
  /// key). Throws pgpipe::error(errc::out_of_range) naming the row count
  /// when there are none or several, or the query's error when it failed.
  /// The row is a view: it lives as long as this result.
  [[nodiscard]] pgpipe::row one() const {
    const std::size_t n = size();
    if (n != 1) throw error(errc::out_of_range, "expected exactly one row, the query returned " + std::to_string(n));
    return (*this)[0];
  }
  /// The row of a query that returns at most one: std::nullopt for none.
  /// Throws pgpipe::error(errc::out_of_range) naming the row count when
  /// there are several, or the query's error when it failed. A view, as one().
  [[nodiscard]] std::optional<pgpipe::row> opt() const {
    const std::size_t n = size();
    if (n > 1) throw error(errc::out_of_range, "expected at most one row, the query returned " + std::to_string(n));
    if (n == 0) return std::nullopt;
    return (*this)[0];
  }

  /// Rows read straight into T: a described struct (by column name), a
  /// std::tuple or a plain aggregate (by position), or one field type (a
  /// one-column result). The columns are checked against T once, before any
  /// row is read. pgpipe/typed_rows.hpp gives the rules and every error;
  /// all of these throw pgpipe::error, the query's own error first.
  ///@{
  /// The only row, as one() (errc::out_of_range for another row count).
  template <row_type T>
  [[nodiscard]] T as() const;
  /// The row of a query that returns at most one, as opt().
  template <row_type T>
  [[nodiscard]] std::optional<T> as_opt() const;
  /// Every row, read one at a time: `for (const T& x : r.rows_as<T>())`. A
  /// view of this result; called on an rvalue result, the view keeps it.
  template <row_type T>
  [[nodiscard]] typed_rows<T> rows_as() const&;
  template <row_type T>
  [[nodiscard]] typed_rows<T> rows_as() &&;
  /// Every row at once.
  template <row_type T>
  [[nodiscard]] std::vector<T> to_vector() const;
  ///@}

  /// Shorthand for at(r).at(col).get<T>(): `r.value<std::int64_t>()` reads a
  /// single-value result.
  template <class T>
  [[nodiscard]] T value(std::size_t r = 0, std::size_t col = 0) const {
    return at(r).at(col).template get<T>();
  }

  /// Rows a command affected (INSERT/UPDATE/DELETE/SELECT/MOVE/FETCH/COPY),
  /// from PQcmdTuples; 0 when the command reports none. Throws the query's
  /// error when it failed (a failed UPDATE did not affect "0 rows").
  [[nodiscard]] std::uint64_t affected_rows() const {
    throw_if_failed();
    if (!res_) return 0;
    std::string_view s = PQcmdTuples(res_.get());
    std::uint64_t n = 0;
    auto r = std::from_chars(s.data(), s.data() + s.size(), n);
    return r.ec == std::errc{} ? n : 0;
  }
  /// The command tag, e.g. "INSERT 0 1", "SELECT 3", "BEGIN". Throws the
  /// query's error when it failed.
  [[nodiscard]] std::string_view command_tag() const {
    throw_if_failed();
    return res_ ? PQcmdStatus(res_.get()) : "";
  }

  /// The server's error fields and pgpipe's message when the query failed.
  ///@{
  /// (The non-const form makes the diagnostics writable, allocating them
  /// when the result had none: it may throw std::bad_alloc.)
  ///@{
  [[nodiscard]] const diagnostics& diag() const noexcept { return diag_ ? *diag_ : detail::no_diagnostics; }
  [[nodiscard]] diagnostics& diag() {
    if (!diag_) diag_ = std::make_unique<diagnostics>();
    return *diag_;
  }
  ///@}

  /// The underlying libpq result (still owned by this object).
  [[nodiscard]] const PGresult* native_handle() const noexcept { return res_.get(); }
  /// Gives up ownership of the PGresult (the caller must PQclear it).
  [[nodiscard]] PGresult* release() noexcept { return res_.release(); }

  /// A random-access iterator over the rows (each dereference makes a row view).
  class iterator {
   public:
    /// The standard random-access iterator types and operations.
    ///@{
    using iterator_category = std::random_access_iterator_tag;
    using value_type = pgpipe::row;
    using difference_type = std::ptrdiff_t;
    using reference = pgpipe::row;
    using pointer = void;
    iterator() = default;
    iterator(const PGresult* r, int i) noexcept : res_(r), i_(i) {}
    pgpipe::row operator*() const noexcept { return pgpipe::row(res_, i_); }
    iterator& operator++() noexcept { ++i_; return *this; }
    iterator operator++(int) noexcept { auto t = *this; ++i_; return t; }
    iterator& operator--() noexcept { --i_; return *this; }
    iterator operator--(int) noexcept { auto t = *this; --i_; return t; }
    iterator& operator+=(difference_type n) noexcept { i_ += static_cast<int>(n); return *this; }
    iterator& operator-=(difference_type n) noexcept { i_ -= static_cast<int>(n); return *this; }
    friend iterator operator+(iterator a, difference_type n) noexcept { return a += n; }
    friend iterator operator+(difference_type n, iterator a) noexcept { return a += n; }
    friend iterator operator-(iterator a, difference_type n) noexcept { return a -= n; }
    friend difference_type operator-(const iterator& a, const iterator& b) noexcept { return a.i_ - b.i_; }
    pgpipe::row operator[](difference_type n) const noexcept { return pgpipe::row(res_, i_ + static_cast<int>(n)); }
    friend bool operator==(const iterator& a, const iterator& b) noexcept { return a.i_ == b.i_; }
    friend auto operator<=>(const iterator& a, const iterator& b) noexcept { return a.i_ <=> b.i_; }
    ///@}

   private:
    const PGresult* res_ = nullptr;
    int i_ = 0;
  };
  /// The rows, for range-for: `for (pgpipe::row r : res)`.
  ///@{
  /// begin() and end() throw the query's error when it failed.
  [[nodiscard]] iterator begin() const {
    throw_if_failed();
    return iterator(res_.get(), 0);
  }
  [[nodiscard]] iterator end() const { return iterator(res_.get(), static_cast<int>(size())); }
  ///@}

 private:
  std::unique_ptr<PGresult, detail::pgresult_deleter> res_;
  // Held apart and only when there is something to say: a result is moved
  // several times on its way to the caller, and twelve strings moved each
  // time cost more than the rest of the move (docs/benchmarks-log.md).
  static std::unique_ptr<diagnostics> keep(diagnostics&& d) noexcept {
    if (detail::is_blank(d)) return nullptr;
    // Out of memory: the result keeps its code and loses the text.
    return std::unique_ptr<diagnostics>(new (std::nothrow) diagnostics(std::move(d)));
  }
  std::unique_ptr<diagnostics> diag_;
  std::error_code ec_;
};

}  // namespace pgpipe

// The typed reads declared above (result::rows_as<T>...).
#include <pgpipe/typed_rows.hpp>
