// C++ part of the ELF seeds: mangled names, templates, a namespace and a class.
namespace seed {
template <typename T>
struct Box {
  T value;
  __attribute__((noinline)) T Twice() const { return value + value; }
};

class Counter {
 public:
  __attribute__((noinline)) int Add(int x) { return total_ += x; }

 private:
  int total_ = 0;
};
}  // namespace seed

extern "C" int seed_cxx(int x) {
  seed::Counter counter;
  seed::Box<long> box{x};
  return counter.Add(x) + static_cast<int>(box.Twice()) + seed::Box<int>{x}.Twice();
}
