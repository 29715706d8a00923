# gc.rb: an allocation-heavy loop (strings, arrays, hashes kept briefly), for GC frames. With "stackprof" as
# ARGV[0] it profiles itself with stackprof (wall clock, 1 ms) for ARGV[1] seconds and prints stackprof's GC
# share on its last line: rbscope sampling it from outside at the same time must find about the same.
def churn
  a = []
  200.times { |i| a << ("x" * 100 + i.to_s) << [i, i.to_s] << { i => i } }
  a.size
end

def run(secs)
  t = Process.clock_gettime(Process::CLOCK_MONOTONIC)
  churn while Process.clock_gettime(Process::CLOCK_MONOTONIC) - t < secs
end

$stdout.sync = true
if ARGV[0] == "stackprof"
  require "stackprof"
  puts "ready"
  prof = StackProf.run(mode: :wall, interval: 1000) { run(Float(ARGV[1])) }
  puts format("stackprof %d samples, GC %.2f%%", prof[:samples], 100.0 * prof[:gc_samples] / prof[:samples])
  sleep
else
  puts "ready"
  loop { run(1) }
end
