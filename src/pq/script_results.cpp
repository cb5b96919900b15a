#include "pq/script_results.hpp"

namespace pgpipe::detail {

script_results::step script_results::take(pgresult_ptr r) {
  switch (PQresultStatus(r.get())) {
    case PGRES_COPY_IN:
      return step::end_copy_in;
    case PGRES_COPY_OUT:
      return step::drain_copy_out;
    case PGRES_COPY_BOTH:
      return step::give_up;
    case PGRES_FATAL_ERROR:
    case PGRES_BAD_RESPONSE:
    case PGRES_NONFATAL_ERROR:
      // The server skips the rest of the implicit transaction: the first
      // error is the one that ran and failed.
      if (!first_error_) first_error_ = std::move(r);
      return step::next;
    default:
      last_ = std::move(r);
      return step::next;
  }
}

}  // namespace pgpipe::detail
