# allocburst.rb: allocations in bursts after quiet spells, the case a sampler in windows can weigh wrongly: every
# 3 ms of sleep, a burst of Arrays (`first`: what a request allocates first, right after its wait), then Strings
# (`later`). Each call's allocations are counted by the VM's own counter around it; every second "shares first=F
# later=L objects=N" (cumulative, of all the process's allocations since the first line).
$stdout.sync = true
Thread.new { sleep } # (a parked thread: what --inject borrows)

def first(n)
  a = nil
  n.times { a = [a] }
  a
end

def later(n)
  s = nil
  n.times { s = String.new }
  s
end

counts = { first: 0, later: 0 }
t0 = GC.stat(:total_allocated_objects)
last = Process.clock_gettime(Process::CLOCK_MONOTONIC)
puts "ready #{Process.pid}"
loop do
  sleep 0.003
  a = GC.stat(:total_allocated_objects)
  first(300)
  b = GC.stat(:total_allocated_objects)
  later(1500)
  c = GC.stat(:total_allocated_objects)
  counts[:first] += b - a
  counts[:later] += c - b
  now = Process.clock_gettime(Process::CLOCK_MONOTONIC)
  next if now - last < 1
  last = now
  all = GC.stat(:total_allocated_objects) - t0
  puts format("shares first=%.4f later=%.4f objects=%d", counts[:first].fdiv(all), counts[:later].fdiv(all), all)
end
