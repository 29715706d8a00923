# workload.rb: the program the integration tests attach to. Prints "ready" once every thread is in place.
# Covers: named threads, a thread blocked in IO, a Queue#pop, a Fiber, recursion 150 deep,
# blocks, define_method, method_missing, a singleton method and C methods (Hash#key?, Kernel#sleep).
$stdout.sync = true

class Deep
  def recurse(n)
    return Deep.spin if n == 0
    recurse(n - 1)
  end

  def self.spin
    h = { a: 1 }
    loop { [1, 2, 3].each { |x| h.key?(:a) } }
  end
end

class Dyn
  define_method(:dynamic) { sleep }
  def method_missing(name, *args)
    return sleep if name == :ghost
    super
  end
end

r, _w = IO.pipe
q = Queue.new
threads = []
threads << Thread.new { Thread.current.name = "sleeper"; sleep }
threads << Thread.new { Thread.current.name = "reader"; r.read }
threads << Thread.new { Thread.current.name = "queue"; q.pop }
threads << Thread.new { Thread.current.name = "dynamic"; Dyn.new.dynamic }
threads << Thread.new { Thread.current.name = "ghost"; Dyn.new.ghost }
threads << Thread.new do
  Thread.current.name = "fiber"
  Fiber.new { sleep }.resume
end
sleep 0.2
puts "ready"
Deep.new.recurse(150)
