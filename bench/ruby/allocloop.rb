# allocloop.rb: an allocation-heavy loop: four objects a call (a String, a Hash, two Arrays), nothing else. After "ready PID" it
# waits for SIGUSR1, then makes CALLS calls (with PEER, stackprof's object mode at one allocation in 4096 or
# memory_profiler, on around them) and prints "batch CPU WALL ALLOCS": the seconds of CPU time the whole process
# spent on them (all its threads: an agent's own count), the wall seconds, and the VM's count of allocations.
# With "rate" for CALLS it runs until killed, printing "rate T N" four times a second: T the wall clock, N calls a
# second of its thread's own CPU time.
# usage: ruby allocloop.rb [none|stackprof|memory_profiler] [CALLS|rate]
$stdout.sync = true
peer = ARGV[0] || "none"
calls = ARGV[1] == "rate" ? nil : Integer(ARGV[1] || 20_000_000)
require "stackprof" if peer == "stackprof"
require "memory_profiler" if peer == "memory_profiler"
Thread.new { sleep } # (a parked thread, for --inject)

def work(i)
  s = String.new
  a = [i]
  h = { i => s }
  [a, h]
end

unless calls
  cpu = -> { Process.clock_gettime(Process::CLOCK_THREAD_CPUTIME_ID) }
  wall = -> { Process.clock_gettime(Process::CLOCK_REALTIME) }
  puts "ready #{Process.pid}"
  n = i = 0
  last_cpu = cpu.()
  last = wall.()
  loop do
    work(i)
    i += 1
    n += 1
    next unless (n & 0x3fff).zero?
    now = wall.()
    next if now - last < 0.25
    c = cpu.()
    puts format("rate %.3f %.0f", now, n / (c - last_cpu))
    n = 0
    last = now
    last_cpu = c
  end
end

go = false
Signal.trap("USR1") { go = true }
puts "ready #{Process.pid}"
sleep 0.01 until go
case peer
when "stackprof" then StackProf.start(mode: :object, interval: 4096, raw: true)
when "memory_profiler" then MemoryProfiler.start
end
cpu0 = Process.clock_gettime(Process::CLOCK_PROCESS_CPUTIME_ID)
wall0 = Process.clock_gettime(Process::CLOCK_MONOTONIC)
n0 = GC.stat(:total_allocated_objects)
i = 0
while i < calls
  work(i)
  i += 1
end
cpu = Process.clock_gettime(Process::CLOCK_PROCESS_CPUTIME_ID) - cpu0
wall = Process.clock_gettime(Process::CLOCK_MONOTONIC) - wall0
n = GC.stat(:total_allocated_objects) - n0
case peer
when "stackprof" then StackProf.stop
when "memory_profiler" then MemoryProfiler.stop
end
puts format("batch %.4f %.4f %d", cpu, wall, n)
