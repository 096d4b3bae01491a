#include "loader/export/clickhouse_sink.h"

#include <fmt/format.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>

#include "loader/export/http_post.h"
#include "looptrace/util/log.h"

namespace looptrace::loader {
namespace {

std::string UrlDecode(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size()) {
      int value = 0;
      auto [ptr, ec] = std::from_chars(text.data() + i + 1, text.data() + i + 3, value, 16);
      if (ec == std::errc() && ptr == text.data() + i + 3) {
        out += static_cast<char>(value);
        i += 2;
        continue;
      }
    }
    out += text[i] == '+' ? ' ' : text[i];
  }
  return out;
}

bool ValidIdentifier(std::string_view name) {
  return !name.empty() && name.size() <= 64 && std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

// The first line of ClickHouse's answer, short: what the log and `status` show.
std::string Shorten(std::string_view body) {
  std::string line(body.substr(0, body.find('\n')));
  if (line.size() > 300) line = line.substr(0, 300) + "[...]";
  return line;
}

}  // namespace

Result<ClickHouseOptions> ParseClickHouseUrl(std::string_view url) {
  auto bad = [&](std::string why) {
    return MakeError(fmt::format("--clickhouse: '{}': {}", url, why), ExitCode::kUsage,
                     "example: --clickhouse http://clickhouse.example:8123/?database=looptrace");
  };
  ClickHouseOptions o;
  if (!url.starts_with("http://"))
    return bad(url.starts_with("https://") ? "https is not supported (use http)" : "not an http:// URL");
  std::string_view rest = url.substr(7);
  std::string_view authority = rest.substr(0, rest.find_first_of("/?"));
  std::string_view tail = rest.substr(authority.size());
  if (size_t at = authority.rfind('@'); at != std::string_view::npos) {
    std::string_view credentials = authority.substr(0, at);
    authority = authority.substr(at + 1);
    size_t colon = credentials.find(':');
    o.user = UrlDecode(credentials.substr(0, colon));
    if (colon != std::string_view::npos) {
      o.password = UrlDecode(credentials.substr(colon + 1));
      o.password_in_url = true;
    }
  }
  std::string_view host = authority, port;
  if (authority.starts_with('[')) {
    size_t close = authority.find(']');
    if (close == std::string_view::npos) return bad("bad IPv6 address");
    host = authority.substr(1, close - 1);
    if (close + 1 < authority.size()) {
      if (authority[close + 1] != ':') return bad("bad port");
      port = authority.substr(close + 2);
    }
  } else if (size_t colon = authority.find(':'); colon != std::string_view::npos) {
    host = authority.substr(0, colon);
    port = authority.substr(colon + 1);
  }
  if (host.empty()) return bad("no host");
  o.host = std::string(host);
  if (!port.empty()) {
    auto [ptr, ec] = std::from_chars(port.data(), port.data() + port.size(), o.port);
    if (ec != std::errc() || ptr != port.data() + port.size() || o.port < 1 || o.port > 65535) return bad("bad port");
  }
  if (tail.starts_with('/')) tail.remove_prefix(1);
  if (!tail.empty() && tail.front() != '?') return bad("no path is allowed (only ?database=...)");
  if (!tail.empty()) tail.remove_prefix(1);
  while (!tail.empty()) {
    std::string_view pair = tail.substr(0, tail.find('&'));
    tail.remove_prefix(std::min(tail.size(), pair.size() + 1));
    size_t eq = pair.find('=');
    std::string key(pair.substr(0, eq));
    std::string value = eq == std::string_view::npos ? "" : UrlDecode(pair.substr(eq + 1));
    if (key == "database")
      o.database = value;
    else if (key == "user")
      o.user = value;
    else if (key == "password") {
      o.password = value;
      o.password_in_url = true;
    } else
      return bad(fmt::format("unknown parameter '{}' (database, user, password)", key));
  }
  if (!ValidIdentifier(o.database)) return bad("the database name must be letters, digits and _");
  return o;
}

bool PermanentClickHouseError(int http_status, std::string_view body) {
  if (http_status >= 400 && http_status < 500 && http_status != 408 && http_status != 429) return true;
  // ClickHouse's error codes: UNKNOWN_TABLE 60, UNKNOWN_DATABASE 81, NO_SUCH_COLUMN_IN_TABLE 16,
  // CANNOT_PARSE_* 6/26/27/38/41/72, INCORRECT_DATA 117, UNKNOWN_USER 192, WRONG_PASSWORD 193,
  // READONLY 164, NOT_ENOUGH_PRIVILEGES 497, TYPE_MISMATCH 53.
  static const int kPermanent[] = {6, 16, 26, 27, 38, 41, 53, 60, 72, 81, 117, 164, 192, 193, 497};
  const size_t at = body.find("Code: ");
  if (at == std::string_view::npos) return false;
  int code = 0;
  std::from_chars(body.data() + at + 6, body.data() + body.size(), code);
  return std::find(std::begin(kPermanent), std::end(kPermanent), code) != std::end(kPermanent);
}

Result<std::unique_ptr<ClickHouseSink>> ClickHouseSink::Start(const ClickHouseOptions& options) {
  std::unique_ptr<ClickHouseSink> sink(new ClickHouseSink());
  sink->options_ = options;
  sink->counters_.clickhouse = true;
  sink->cancel_ = UniqueFd(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!sink->cancel_) return SystemError("eventfd", errno);
  sink->thread_ = std::thread([s = sink.get()] { s->Run(); });
  return sink;
}

ClickHouseSink::~ClickHouseSink() { Stop(std::chrono::milliseconds(0)); }

std::string ClickHouseSink::url() const {
  return fmt::format("http://{}:{}/?database={}", options_.host, options_.port, options_.database);
}

void ClickHouseSink::Enqueue(std::vector<TableRows> tables) {
  std::lock_guard lock(mutex_);
  for (auto& t : tables) {
    Batch batch;
    batch.table = t.table;
    for (auto& row : t.rows) {
      if (queued_bytes_ + batch.body.size() + row.size() + 1 > options_.max_queued_bytes || stopping_) {
        if (!failing_ || counters_.rows_dropped == 0)
          log::Warning("clickhouse: rows dropped: {} MiB are already waiting to be sent (ClickHouse is slow or down)",
                       options_.max_queued_bytes >> 20);
        ++counters_.rows_dropped;
        continue;
      }
      batch.body += row;
      batch.body += '\n';
      ++batch.rows;
    }
    if (!batch.rows) continue;
    queued_bytes_ += batch.body.size();
    counters_.rows_queued += batch.rows;
    queue_.push_back(std::move(batch));
  }
  wake_.notify_all();
}

ExporterCounters ClickHouseSink::counters() const {
  std::lock_guard lock(mutex_);
  return counters_;
}

std::string ClickHouseSink::last_error() const {
  std::lock_guard lock(mutex_);
  return last_error_;
}

std::string ClickHouseSink::Send(const Batch& batch, bool* permanent) {
  *permanent = false;
  HttpRequest request;
  request.host = options_.host;
  request.port = options_.port;
  request.target =
      "/?query=" + UrlEncode(fmt::format("INSERT INTO {}.{} FORMAT JSONEachRow", options_.database, batch.table));
  request.content_type = "application/x-ndjson";
  request.body = batch.body;
  if (!options_.user.empty())
    request.headers.emplace_back("Authorization", "Basic " + Base64(options_.user + ":" + options_.password));
  auto answer =
      HttpPost(request, std::chrono::steady_clock::now() + options_.timeout, options_.max_answer_bytes, cancel_.get());
  if (!answer) return answer.error().message;
  if (answer->status == 200) return "";
  *permanent = PermanentClickHouseError(answer->status, answer->body);
  return fmt::format("{}.{} refused the insert (HTTP {}): {}", options_.database, batch.table, answer->status,
                     Shorten(answer->body));
}

void ClickHouseSink::Failed(const std::string& reason) {
  // Each distinct reason once in the log (they repeat for every batch while it lasts): up to
  // the first ':' past the server's "host:port".
  const size_t server_end = reason.find(fmt::format("{}:{}", options_.host, options_.port));
  const size_t from = server_end == std::string::npos ? 0 : server_end + options_.host.size() + 1;
  std::string kind = reason.substr(0, reason.find(':', from));
  if (std::find(reasons_logged_.begin(), reasons_logged_.end(), kind) == reasons_logged_.end()) {
    reasons_logged_.push_back(kind);
    log::Warning("clickhouse: {} (the session goes on; rows are retried, then dropped and counted)", reason);
  }
}

void ClickHouseSink::Run() {
  std::unique_lock lock(mutex_);
  // However it returns, Stop() learns it at once.
  struct Finished {
    ClickHouseSink* sink;
    ~Finished() {
      sink->finished_ = true;
      sink->finished_cv_.notify_all();
    }
  } finished{this};
  for (;;) {
    wake_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping and nothing left
    if (stopping_ && std::chrono::steady_clock::now() >= deadline_) {
      uint64_t left = 0;
      for (const auto& b : queue_) left += b.rows;
      counters_.rows_dropped += left;
      counters_.rows_queued -= left;
      log::Warning("clickhouse: {} rows could not be sent before exit (dropped)", left);
      queue_.clear();
      queued_bytes_ = 0;
      return;
    }
    Batch batch = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    bool permanent = false;
    std::string error = Send(batch, &permanent);
    lock.lock();
    ++batch.attempts;
    if (error.empty()) {
      counters_.rows_sent += batch.rows;
      counters_.rows_queued -= batch.rows;
      queued_bytes_ -= batch.body.size();
      if (failing_) log::Info("clickhouse: inserts work again");
      failing_ = false;
      continue;
    }
    ++counters_.insert_failures;
    last_error_ = error;
    failing_ = true;
    Failed(error);
    if (permanent || batch.attempts >= options_.max_attempts) {
      counters_.rows_dropped += batch.rows;
      counters_.rows_queued -= batch.rows;
      queued_bytes_ -= batch.body.size();
      continue;
    }
    // Back off before trying again (the batch keeps its place), unless told to stop.
    auto backoff = options_.first_backoff * (1 << (batch.attempts - 1));
    queue_.push_front(std::move(batch));
    auto until = std::chrono::steady_clock::now() + backoff;
    if (stopping_) until = std::min(until, deadline_);
    wake_.wait_until(lock, until, [&] { return stopping_ && std::chrono::steady_clock::now() >= deadline_; });
  }
}

void ClickHouseSink::Stop(std::chrono::milliseconds timeout) {
  {
    std::unique_lock lock(mutex_);
    if (!thread_.joinable()) return;
    if (!stopping_) {
      stopping_ = true;
      deadline_ = std::chrono::steady_clock::now() + timeout;
    }
    wake_.notify_all();
    // What is queued may go out until the deadline; a request still running then (a server
    // that answers a byte at a time) is cut, so the daemon's end never waits on ClickHouse.
    finished_cv_.wait_until(lock, deadline_, [&] { return finished_; });
  }
  uint64_t one = 1;
  (void)!write(cancel_.get(), &one, sizeof(one));
  thread_.join();
}

}  // namespace looptrace::loader
