#include "pq/notice_route.hpp"

#include <memory>
#include <mutex>
#include <string_view>
#include <unordered_map>

namespace pgpipe::detail {
namespace {

struct route {
  std::uint64_t slot;
  int pid;
  notice_fn fn;
};

// Routes by id: the hook's void* carries the id, never an address.
struct registry {
  std::mutex mu;
  std::uint64_t next = 1;
  std::unordered_map<std::uint64_t, std::shared_ptr<const route>> routes;
};

registry& the_registry() {
  static registry* r = new registry();  // never destroyed: results may outlive static destruction
  return *r;
}

std::string field(const PGresult* res, int code) {
  const char* v = PQresultErrorField(res, code);
  return v ? std::string(v) : std::string();
}

std::string notice_line(const PGresult* res, std::uint64_t slot, int backend_pid) {
  std::string severity = field(res, PG_DIAG_SEVERITY_NONLOCALIZED);
  if (severity.empty()) severity = field(res, PG_DIAG_SEVERITY);
  std::string message = field(res, PG_DIAG_MESSAGE_PRIMARY);
  if (message.empty()) {
    // Notices libpq makes up itself carry only the whole text.
    message = PQresultErrorMessage(res);
    while (!message.empty() && (message.back() == '\n' || message.back() == ' ')) message.pop_back();
  }
  std::string line = "server " + (severity.empty() ? std::string("NOTICE") : severity) + " (slot " +
                     std::to_string(slot) + ", backend pid " + std::to_string(backend_pid) + "): " + message;
  if (auto d = field(res, PG_DIAG_MESSAGE_DETAIL); !d.empty()) line += " (detail: " + d + ")";
  if (auto h = field(res, PG_DIAG_MESSAGE_HINT); !h.empty()) line += " (hint: " + h + ")";
  for (auto& c : line)
    if (c == '\n') c = ' ';
  return line;
}

void receive(void* arg, const PGresult* res) {
  const auto id = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(arg));
  std::shared_ptr<const route> r;
  {
    auto& reg = the_registry();
    std::lock_guard lk(reg.mu);
    auto it = reg.routes.find(id);
    if (it == reg.routes.end()) return;  // the route ended: drop it, never print it
    r = it->second;
  }
  std::string severity = field(res, PG_DIAG_SEVERITY_NONLOCALIZED);
  const bool warning = severity == "WARNING" || severity == "ERROR" || severity == "FATAL" || severity == "PANIC";
  try {
    r->fn(warning, notice_line(res, r->slot, r->pid));
  } catch (...) {
    // A logger that throws must not unwind through libpq.
  }
}

}  // namespace

notice_route::notice_route(PGconn* conn, std::uint64_t slot, notice_fn fn) {
  auto r = std::make_shared<const route>(route{slot, conn ? PQbackendPID(conn) : 0, std::move(fn)});
  auto& reg = the_registry();
  {
    std::lock_guard lk(reg.mu);
    id_ = reg.next++;
    reg.routes.emplace(id_, std::move(r));
  }
  if (conn) PQsetNoticeReceiver(conn, &receive, reinterpret_cast<void*>(static_cast<std::uintptr_t>(id_)));
}

notice_route::~notice_route() {
  auto& reg = the_registry();
  std::shared_ptr<const route> gone;  // destroyed outside the lock
  std::lock_guard lk(reg.mu);
  auto it = reg.routes.find(id_);
  if (it != reg.routes.end()) {
    gone = std::move(it->second);
    reg.routes.erase(it);
  }
}

}  // namespace pgpipe::detail
