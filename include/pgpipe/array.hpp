// pgpipe::array<T>: a PostgreSQL array of any number of dimensions (up to
// the server's 6), with each dimension's lower bound ('[0:1][1:3]={...}'),
// both ways in both drivers. T is an element type pgpipe reads or sends, or
// std::optional of one for NULL elements.
//
// std::vector<T> (one dimension) and std::vector<std::vector<T>> (two,
// rectangular) need no header of their own (pgpipe/type_traits.hpp); they
// drop lower bounds. pgpipe::array keeps everything the server has.
//
// Thread-safety: a value type.
#pragma once

#include <pgpipe/error.hpp>
#include <pgpipe/type_traits.hpp>
#include <pgpipe/types.hpp>

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

namespace pgpipe {

/// An n-dimensional array: its dimensions, their lower bounds and its
/// elements in row-major order (the last subscript varies fastest).
template <class T>
class array {
 public:
  /// The empty array ('{}': no dimensions).
  array() = default;
  /// A one-dimensional array, lower bound 1 ('{}' when `elements` is empty).
  explicit array(std::vector<T> elements) : elements_(std::move(elements)) {
    if (!elements_.empty()) {
      dims_ = {checked_length(elements_.size())};
      lower_bounds_ = {1};
    }
  }
  /// From its shape: one length and one lower bound per dimension (at most
  /// 6), and exactly the product of the lengths as elements. Throws
  /// pgpipe::error(errc::invalid_argument) naming what does not fit. A
  /// zero length makes the empty array, as on the server.
  array(std::vector<std::int32_t> dims, std::vector<std::int32_t> lower_bounds, std::vector<T> elements)
      : dims_(std::move(dims)), lower_bounds_(std::move(lower_bounds)), elements_(std::move(elements)) {
    if (dims_.size() != lower_bounds_.size())
      throw error(errc::invalid_argument, "an array needs one lower bound per dimension: " +
                                              std::to_string(dims_.size()) + " dimension(s), " +
                                              std::to_string(lower_bounds_.size()) + " lower bound(s)");
    if (dims_.size() > detail::codec::max_array_dims)
      throw error(errc::invalid_argument,
                  "an array has at most 6 dimensions, not " + std::to_string(dims_.size()));
    std::size_t total = dims_.empty() ? 0 : 1;
    for (std::size_t d = 0; d < dims_.size(); ++d) {
      if (dims_[d] < 0) throw error(errc::invalid_argument, "an array dimension's length cannot be negative");
      if (static_cast<std::int64_t>(lower_bounds_[d]) + dims_[d] - 1 > std::numeric_limits<std::int32_t>::max())
        throw error(errc::invalid_argument, "an array dimension's upper bound is past 2^31-1");
      total = dims_[d] == 0 || total == 0 ? 0 : checked_product(total, static_cast<std::size_t>(dims_[d]));
    }
    if (elements_.size() != total)
      throw error(errc::invalid_argument, "the array's dimensions hold " + std::to_string(total) +
                                              " element(s), " + std::to_string(elements_.size()) + " given");
    if (total == 0) {
      dims_.clear();
      lower_bounds_.clear();
    }
  }

  /// The number of dimensions (0 for the empty array).
  std::size_t ndim() const noexcept { return dims_.size(); }
  /// Each dimension's length.
  const std::vector<std::int32_t>& dims() const noexcept { return dims_; }
  /// Each dimension's first subscript (1 unless the server was told otherwise).
  const std::vector<std::int32_t>& lower_bounds() const noexcept { return lower_bounds_; }
  /// Every element, row-major.
  const std::vector<T>& elements() const noexcept { return elements_; }

  /// The element at PostgreSQL subscripts (lower bounds count: on
  /// '[0:1]={a,b}', at({0}) is a). Throws pgpipe::error(errc::out_of_range)
  /// for a wrong number of subscripts or one outside its dimension.
  const T& at(std::initializer_list<std::int32_t> subscripts) const {
    if (subscripts.size() != dims_.size())
      throw error(errc::out_of_range, std::to_string(subscripts.size()) + " subscript(s) for an array of " +
                                          std::to_string(dims_.size()) + " dimension(s)");
    std::size_t k = 0, d = 0;
    for (std::int32_t s : subscripts) {
      const std::int64_t i = static_cast<std::int64_t>(s) - lower_bounds_[d];
      if (i < 0 || i >= dims_[d])
        throw error(errc::out_of_range, "subscript " + std::to_string(s) + " is outside dimension " +
                                            std::to_string(d + 1) + " [" + std::to_string(lower_bounds_[d]) + ":" +
                                            std::to_string(static_cast<std::int64_t>(lower_bounds_[d]) + dims_[d] - 1) +
                                            "]");
      k = k * static_cast<std::size_t>(dims_[d]) + static_cast<std::size_t>(i);
      ++d;
    }
    return elements_[k];
  }

  /// Shape and elements alike.
  friend bool operator==(const array&, const array&) = default;

 private:
  static std::int32_t checked_length(std::size_t n) {
    if (n > static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max()))
      throw error(errc::invalid_argument, "an array dimension holds at most 2^31-1 elements");
    return static_cast<std::int32_t>(n);
  }
  static std::size_t checked_product(std::size_t a, std::size_t b) {
    if (b > std::numeric_limits<std::size_t>::max() / a)
      throw error(errc::invalid_argument, "the array's dimensions overflow");
    return a * b;
  }

  std::vector<std::int32_t> dims_;
  std::vector<std::int32_t> lower_bounds_;
  std::vector<T> elements_;
};

/// An array parameter: binary with its array type when the element has a
/// binary form, else a text literal with its decoration ('[0:1]=...').
template <class E>
  requires detail::traits_detect::encodable<typename detail::traits_detect::element_of<E>::type>
struct param_traits<array<E>> {
  /// The element loop shared with std::vector parameters.
  using encoder = detail::traits_detect::array_encoder<E>;
  /// The array type over the element's type, or 0 (untyped).
  static constexpr type_oid oid = encoder::oid;
  /// The text literal, with its dimension decoration when a lower bound is not 1.
  static std::optional<std::string> encode(const array<E>& v) {
    return encoder::text(v.dims(), v.lower_bounds(), [&](std::size_t k) -> const E& { return v.elements()[k]; });
  }
  /// The binary form (array_send's layout: dimensions, lower bounds, elements) appended to `out`.
  static std::error_code encode_binary(const array<E>& v, std::string& out)
    requires encoder::binary
  {
    return encoder::binary_form(v.dims(), v.lower_bounds(),
                                [&](std::size_t k) -> const E& { return v.elements()[k]; }, out);
  }
};

/// An array of any dimension read with its shape.
template <class E>
  requires detail::traits_detect::decodable<typename detail::traits_detect::element_of<E>::type>
struct field_traits<array<E>> {
  /// Binary results when the element type reads them.
  static constexpr bool binary_results =
      detail::traits_detect::reads_binary<typename detail::traits_detect::element_of<E>::type>();
  /// An array type whose element type E accepts.
  static bool accepts(type_oid t) { return field_traits<std::vector<E>>::accepts(t) && array_element_oid(t) != 0; }
  /// What a type-mismatch message calls the C++ type.
  static std::string cpp_name() {
    const std::string n = detail::traits_detect::cpp_name<typename detail::traits_detect::element_of<E>::type>();
    return detail::traits_detect::element_of<E>::nullable ? "pgpipe::array<std::optional<" + n + ">>"
                                                           : "pgpipe::array<" + n + ">";
  }
  /// Text or binary, any dimension count; an element's error is E's.
  static std::error_code decode(const field_value& v, array<E>& out) {
    detail::codec::array_items items;
    if (auto ec = detail::traits_detect::split_collection(v, items)) return ec;
    if (!detail::traits_detect::accepts<typename detail::traits_detect::element_of<E>::type>(items.element_type))
      return make_error_code(errc::type_mismatch);
    std::vector<E> elements;
    if (auto ec = detail::traits_detect::decode_items(items, v.format, 0, items.items.size(), elements)) return ec;
    out = array<E>(std::move(items.dims), std::move(items.lower_bounds), std::move(elements));
    return {};
  }
};

}  // namespace pgpipe
