# keyloop.rb: the tracing benchmark: a hot `h.key?(keys.sample)` loop printing its iterations per 0.25 s.
# usage: ruby [-rrbscope | -rrbtrace] keyloop.rb [KEYS]   (prints "ready PID", then "ips N" four times a second)
# KEYS (default 100) sizes the hash: 100 keys stay in cache (about 60 ns an iteration here); 1,000,000 miss it
# (about 400 ns, near the 2.75M i/s the issue quotes for this benchmark).
$stdout.sync = true
nkeys = Integer(ARGV[0] || 100)
h = (1..nkeys).to_h { |i| [i, i] }
keys = h.keys + [1000]
def idle_method = nil # traced in the "attached, untraced" phase: never called in the loop
puts "ready #{Process.pid}"
clock = Process::CLOCK_MONOTONIC
t0 = Process.clock_gettime(clock)
n = 0
loop do
  1000.times { h.key?(keys.sample) }
  idle_method if n < 0
  n += 1000
  t = Process.clock_gettime(clock)
  next if t - t0 < 0.25
  puts "ips #{(n / (t - t0)).round} #{Process.clock_gettime(Process::CLOCK_REALTIME)}"
  t0 = t
  n = 0
end
