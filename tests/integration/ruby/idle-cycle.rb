# idle-cycle.rb: one thread, in turn 300 ms of work (Object#work), then 300 ms asleep in Object#rest_a and
# 300 ms in Object#rest_b: a third of the time each. `rbscope serve` reads a process whose threads stay parked
# every other tick; the shares it gives must still be these.
$stdout.sync = true
def now = Process.clock_gettime(Process::CLOCK_MONOTONIC)

def work(seconds)
  x = 0
  t = now + seconds
  x += 1 while now < t
  x
end

def rest_a(seconds)
  sleep seconds
end

def rest_b(seconds)
  sleep seconds
end

puts "ready"
loop do
  work(0.3)
  rest_a(0.3)
  rest_b(0.3)
end
