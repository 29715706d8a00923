# allocsites.rb: ten allocation sites of different weights (site_0 the most), each call's allocations counted by
# the VM's own counter around it; on SIGUSR1 "sites N0 N1 ... N9 total" of the counts since the last SIGUSR1 (and
# the process's total from the VM), the reference for `record --mode alloc`'s estimates over the same time.
$stdout.sync = true
Thread.new { sleep } # (a parked thread, for --inject)
WEIGHTS = [30, 20, 12, 10, 8, 6, 5, 4, 3, 2].freeze
10.times do |k|
  n = WEIGHTS[k]
  # site_k allocates n strings a call
  eval "def site_#{k}; j = 0; while j < #{n}; String.new; j += 1; end; end", binding, __FILE__, __LINE__
end
SITES = Array.new(10) { |k| :"site_#{k}" }.freeze # (made once: an interpolated name in the loop allocates)
counts = Array.new(10, 0)
report = false
Signal.trap("USR1") { report = true }
t0 = GC.stat(:total_allocated_objects)
puts "ready #{Process.pid}"
loop do
  10.times do |k|
    a = GC.stat(:total_allocated_objects)
    send(SITES[k])
    counts[k] += GC.stat(:total_allocated_objects) - a
  end
  next unless report
  report = false
  t = GC.stat(:total_allocated_objects)
  puts "sites #{counts.join(' ')} #{t - t0}"
  counts.fill(0)
  t0 = t
end
