# unstarted.rb: a thread created just before main goes into one long C call that holds the GVL and checks no
# interrupt (a big Integer's digits, by GMP or Ruby's own bignum code), so it cannot run for its first time until
# the call returns: seen from outside it has no VM stack yet (tests/integration/spy.sh: "not started yet").
x = 7**8_000_000
x *= x
$stdout.puts "ready"
$stdout.flush
Thread.new { Thread.current.name = "late"; sleep }
t0 = Process.clock_gettime(Process::CLOCK_MONOTONIC)
n = x.to_s.size
$stdout.puts "digits #{n} in #{(Process.clock_gettime(Process::CLOCK_MONOTONIC) - t0).round(2)} s"
$stdout.flush
sleep
