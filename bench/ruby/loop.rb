# loop.rb: a CPU-bound loop that prints its iterations per second every second (the target-slowdown bench).
# With "stackprof", stackprof (the in-process peer) samples it at 1 kHz during seconds 6-12, 18-24 and 30-36,
# the same windows in which the bench attaches rbscope to a plain run, so both are compared within one process.
$stdout.sync = true
peer = ARGV[0] == "stackprof"
require "stackprof" if peer
def work(n)
  s = 0
  n.times { |i| s += i * i % 7 }
  s
end
puts "ready"
start = t0 = Process.clock_gettime(Process::CLOCK_MONOTONIC)
iters = 0
loop do
  work(1000)
  iters += 1
  now = Process.clock_gettime(Process::CLOCK_MONOTONIC)
  next if now - t0 < 1.0
  puts format("%.1f", iters / (now - t0))
  t0 = now
  iters = 0
  next unless peer
  on = ((now - start) / 6).floor.odd?
  if on && !StackProf.running?
    StackProf.start(mode: :cpu, interval: 1000, raw: false)
  elsif !on && StackProf.running?
    StackProf.stop
  end
end
