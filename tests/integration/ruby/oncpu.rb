# oncpu.rb: threads that want more CPU than the machine has, in Ruby and in C code without the GVL: four threads
# compress in Zlib (which lets the GVL go: all four runnable, on a CPU or waiting for one) and one spins in Ruby.
# A thread waiting for a CPU is not on one: tests/integration/states.sh checks --mode cpu against the kernel's
# own account of each thread's CPU time.
require "zlib"
$stdout.sync = true
data = Random.new(1).bytes(1 << 20)
4.times.map do |i|
  Thread.new do
    Thread.current.name = "zlib-#{i}"
    loop { Zlib::Deflate.deflate(data) }
  end
end
Thread.new do
  Thread.current.name = "spin"
  x = 0
  loop { x += 1 }
end
sleep 0.3
puts "ready"
sleep
