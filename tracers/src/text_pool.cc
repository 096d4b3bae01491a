#include "looptrace/tracers/text_pool.h"

#include <mutex>
#include <unordered_set>

namespace looptrace {
namespace {

struct Pool {
  std::mutex mutex;
  std::unordered_set<std::string> texts;  // nodes never move: pointers stay valid
  size_t bytes = 0;
};

Pool& ThePool() {
  static Pool* pool = new Pool();  // never destroyed: events may outlive static destructors
  return *pool;
}

}  // namespace

const std::string* TextPool::Intern(std::string_view text, bool* dropped) {
  static const std::string kFull = "<text pool full>";
  Pool& pool = ThePool();
  std::lock_guard lock(pool.mutex);
  auto it = pool.texts.find(std::string(text));
  if (it != pool.texts.end()) return &*it;
  if (pool.bytes + text.size() > kMaxBytes) {
    if (dropped) *dropped = true;
    return &kFull;
  }
  pool.bytes += text.size() + sizeof(std::string);
  return &*pool.texts.emplace(text).first;
}

size_t TextPool::bytes() {
  Pool& pool = ThePool();
  std::lock_guard lock(pool.mutex);
  return pool.bytes;
}

}  // namespace looptrace
