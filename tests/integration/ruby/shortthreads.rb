# shortthreads.rb MS: the same work (MS ms of the thread's own CPU time, spun) done by turns in a thread started
# for it and in the main thread (tests/integration/accuracy.sh). On SIGUSR1 it prints its own account: "times T M",
# the seconds (CLOCK_MONOTONIC) spent in in_thread and in in_main so far. Ruby's thread cache (2.7, 3.1) runs each
# new thread on the native thread of the one before; 3.3 and 3.4 start a native thread for each.
$stdout.sync = true
def now
  Process.clock_gettime(Process::CLOCK_MONOTONIC)
end

def spin(ms)
  t = Process.clock_gettime(Process::CLOCK_THREAD_CPUTIME_ID) + ms / 1000.0
  x = 0
  x += 1 while Process.clock_gettime(Process::CLOCK_THREAD_CPUTIME_ID) < t
  x
end

def in_thread(ms)
  spin(ms)
end

def in_main(ms)
  spin(ms)
end

ms = Integer(ARGV.fetch(0))
times = [0.0, 0.0]
trap("USR1") { puts format("times %.6f %.6f", *times) }
puts "ready"
loop do
  Thread.new do
    t0 = now
    in_thread(ms)
    times[0] += now - t0
  end.join
  t0 = now
  in_main(ms)
  times[1] += now - t0
end
