// docs/scaling.md, "Read replicas" (both routers): each server's pool_params and a key.
void snippet(pgpipe::pool_params primary_params, pgpipe::pool_params replica_params, std::int64_t id) {
  // @snippet
}
