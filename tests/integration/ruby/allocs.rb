# allocs.rb: a planted allocation site and two others, each call's allocations counted by the VM's own counter
# around it; every second "shares planted=P middle=M small=S objects=N" (cumulative, of all the process's allocations
# since the first line). usage: ruby allocs.rb (with or without the agent loaded)
$stdout.sync = true
Thread.new { sleep } # (a parked thread: what --inject borrows)

def planted(i)
  s = nil
  j = 0
  while j < 7
    s = String.new
    j += 1
  end
  s
end

def middle(i)
  x = [i]
  [x]
end

def small(i)
  { i => i }
end

sites = { planted: 0, middle: 0, small: 0 }
t0 = GC.stat(:total_allocated_objects)
last = Process.clock_gettime(Process::CLOCK_MONOTONIC)
puts "ready #{Process.pid}"
i = 0
loop do
  n = 0
  while n < 2000
    a = GC.stat(:total_allocated_objects)
    planted(i)
    b = GC.stat(:total_allocated_objects)
    middle(i)
    c = GC.stat(:total_allocated_objects)
    small(i)
    d = GC.stat(:total_allocated_objects)
    sites[:planted] += b - a
    sites[:middle] += c - b
    sites[:small] += d - c
    n += 1
    i += 1
  end
  now = Process.clock_gettime(Process::CLOCK_MONOTONIC)
  next if now - last < 1
  last = now
  all = GC.stat(:total_allocated_objects) - t0
  puts format("shares planted=%.4f middle=%.4f small=%.4f objects=%d", sites[:planted].fdiv(all),
              sites[:middle].fdiv(all), sites[:small].fdiv(all), all)
end
