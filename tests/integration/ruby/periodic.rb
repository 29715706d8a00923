# periodic.rb: a 10 ms cycle of three methods busy for 6, 3 and 1 ms: 60/30/10% of the time, in phase with
# any sampling rate that divides 100 Hz. A sampler without jitter sees one phase only.
def spin(secs)
  t = Process.clock_gettime(Process::CLOCK_MONOTONIC)
  nil while Process.clock_gettime(Process::CLOCK_MONOTONIC) - t < secs
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

puts "ready"
$stdout.flush
loop do
  six
  three
  one
end
