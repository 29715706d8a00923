# allocloop.rb: an allocation-heavy loop (a String, an Array and a Hash a call) that prints "rate T N" twice a
# second: T the wall clock (seconds since the epoch), N calls a second of the thread's own CPU time (what the VM
# steals from it, or another process takes from its core, does not count). With PEER, stackprof (object mode, one
# allocation in 4096) or memory_profiler runs in-process 2 s out of every 4 (from 2 s after ready: "on T", "off T").
# usage: ruby allocloop.rb [none|stackprof|memory_profiler]
$stdout.sync = true
peer = ARGV[0] || "none"
require "stackprof" if peer == "stackprof"
require "memory_profiler" if peer == "memory_profiler"
Thread.new { sleep } # (a parked thread, for --inject)

def work(i)
  s = String.new
  a = [i]
  { i => s }
  a
end

wall = -> { Process.clock_gettime(Process::CLOCK_REALTIME) }
cpu = -> { Process.clock_gettime(Process::CLOCK_THREAD_CPUTIME_ID) }
t0 = wall.()
puts "ready #{Process.pid}"
i = n = 0
last = t0
last_cpu = cpu.()
on = false
switch_at = t0 + 2
loop do
  work(i)
  i += 1
  n += 1
  next unless (n & 0xfff).zero?
  now = wall.()
  if peer != "none" && now >= switch_at
    on = !on
    if peer == "stackprof"
      on ? StackProf.start(mode: :object, interval: 4096, raw: true) : StackProf.stop
    else
      on ? MemoryProfiler.start : MemoryProfiler.stop
    end
    puts format("%s %.3f", on ? "on" : "off", wall.())
    switch_at += 2
    n = 0
    last = wall.()
    last_cpu = cpu.()
    next
  end
  next if now - last < 0.5
  c = cpu.()
  puts format("rate %.3f %.0f", now, n / (c - last_cpu))
  n = 0
  last = now
  last_cpu = c
end
