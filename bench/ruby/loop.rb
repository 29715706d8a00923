# loop.rb: a CPU-bound loop that prints its iterations per second every second (the target-slowdown bench).
# With "stackprof" as the first argument it runs under stackprof at 1 kHz in-process (the peer).
$stdout.sync = true
if ARGV[0] == "stackprof"
  require "stackprof"
  StackProf.start(mode: :cpu, interval: 1000, raw: false)
end
def work(n)
  s = 0
  n.times { |i| s += i * i % 7 }
  s
end
puts "ready"
t0 = Process.clock_gettime(Process::CLOCK_MONOTONIC)
iters = 0
loop do
  work(1000)
  iters += 1
  now = Process.clock_gettime(Process::CLOCK_MONOTONIC)
  next if now - t0 < 1.0
  puts format("%.1f", iters / (now - t0))
  t0 = now
  iters = 0
end
