# periodic.rb: a 10 ms cycle of three methods busy for 6, 3 and 1 ms: 60/30/10% of the time, in phase with
# any sampling rate that divides 100 Hz. A sampler without jitter sees one phase only. On a busy machine a phase
# that is preempted runs over its time, so the cycle keeps its own account: on SIGUSR1 it prints the wall time
# spent in each method so far ("times SIX THREE ONE", seconds), the reference for the shares.
$stdout.sync = true
def now = Process.clock_gettime(Process::CLOCK_MONOTONIC)

def spin(secs)
  t = now
  nil while now - t < secs
end

def six
  spin(0.006)
end

def three
  spin(0.003)
end

def one
  spin(0.001)
end

times = { six: 0.0, three: 0.0, one: 0.0 }
trap("USR1") { puts format("times %.6f %.6f %.6f", times[:six], times[:three], times[:one]) }
puts "ready"
loop do
  t0 = now
  six
  t1 = now
  three
  t2 = now
  one
  t3 = now
  times[:six] += t1 - t0
  times[:three] += t2 - t1
  times[:one] += t3 - t2
end
