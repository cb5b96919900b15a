// The blocking driver's statements as libpq takes them: what is refused
// before anything is sent, and the encoded parameters as libpq's arrays.
// Shared by blocking_lease::exec and blocking_row_stream.
#pragma once

#include <pgpipe/error.hpp>
#include <pgpipe/type_traits.hpp>

#include "core/sql/sql_text.hpp"

#include <libpq-fe.h>

#include <cstddef>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace pgpipe::detail {

/// The Bind message counts parameters in 16 bits.
inline constexpr std::size_t max_params = 65535;

/// Throws pgpipe::error (errc::invalid_argument, or the encoding's own code)
/// for a statement libpq would cut (a NUL byte in `sql`), parameters that
/// failed to encode, or more than max_params of them.
inline void refuse_unsendable(std::string_view sql, encoded_params& params) {
  if (std::string why = nul_byte_refusal(sql); !why.empty()) throw error(errc::invalid_argument, why);
  if (params.ec) throw error(params.ec, std::move(params.error_message));
  if (params.values.size() > max_params) {
    throw error(errc::invalid_argument, "too many parameters (" + std::to_string(params.values.size()) +
                                            "; the protocol allows 65535)");
  }
}

/// libpq's view of the encoded parameters (pointers into `params`, which
/// refuse_unsendable accepted).
struct libpq_args {
  explicit libpq_args(const encoded_params& params) : typed(!params.all_text_untyped()) {
    static_assert(std::is_same_v<type_oid, Oid>, "parameter types are passed to libpq as they are");
    values.reserve(params.values.size());
    lengths.reserve(params.values.size());
    for (const auto& v : params.values) {
      values.push_back(v ? v->data() : nullptr);
      // encode_params refused a value over max_param_bytes: the int holds it.
      lengths.push_back(v ? static_cast<int>(v->size()) : 0);
    }
    count = static_cast<int>(values.size());  // at most max_params, checked by refuse_unsendable
    if (typed) {
      types = params.types.data();
      formats = params.formats.data();
    }
  }
  const char* const* value_ptrs() const noexcept { return values.empty() ? nullptr : values.data(); }
  const int* length_ptrs() const noexcept { return typed ? lengths.data() : nullptr; }

  bool typed;
  int count = 0;
  std::vector<const char*> values;
  std::vector<int> lengths;
  const Oid* types = nullptr;
  const int* formats = nullptr;
};

}  // namespace pgpipe::detail
