# livesites.rb: four sites that keep objects (site_0 the most) beside garbage, for 12 s from SIGUSR1, then only
# garbage: `heap live` started at the SIGUSR1 and a heap dump after the 12 s (allocation tracing on from the
# SIGUSR1) hold the same kept objects, by line.
require "objspace"
$stdout.sync = true
Thread.new { sleep } # (a parked thread, for --inject)
KEPT = []
def site_0(i) = KEPT << "kept zero #{i}"
def site_1(i) = KEPT << "kept one #{i}"
def site_2(i) = KEPT << "kept two #{i}"
def site_3(i) = KEPT << "kept three #{i}"
start = nil
Signal.trap("USR1") { start = true }
puts "ready #{Process.pid}"
i = 0
t0 = nil
loop do
  "garbage #{i}"
  if start == true
    ObjectSpace.trace_object_allocations_start
    t0 = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    start = :on
  end
  if start == :on
    site_0(i) if i % 10 == 0
    site_1(i) if i % 20 == 0
    site_2(i) if i % 40 == 0
    site_3(i) if i % 80 == 0
    if Process.clock_gettime(Process::CLOCK_MONOTONIC) - t0 > 12
      start = :done
      puts "kept #{KEPT.size}"
    end
  end
  i += 1
  sleep 0.001 if (i % 2000).zero?
end
