# jit-lines.rb: two loops in one method a JIT compiles, each whole on a line of its own, that keep their own account:
# the line of the running frame, from the JIT's own tables, must split the method's samples between the two lines as
# the loops' own time does. The time (CLOCK_MONOTONIC) around each loop is added up; SIGUSR1 has it print
# "times A B" (ns, since the start) at the next turn. "ready" after a warm-up in which the JIT compiles the method.
$stdout.sync = true

def two(n, own)
  t0 = Process.clock_gettime(Process::CLOCK_MONOTONIC)
  i = 0; i += 1 while i < n # (loop A)
  t1 = Process.clock_gettime(Process::CLOCK_MONOTONIC)
  j = 0; j += 1 while j < 3 * n # (loop B)
  t2 = Process.clock_gettime(Process::CLOCK_MONOTONIC)
  own[0] += t1 - t0
  own[1] += t2 - t1
end

own = [0.0, 0.0]
report = false
trap("USR1") { report = true }
warm_until = Process.clock_gettime(Process::CLOCK_MONOTONIC) + 1.5
ready = false
loop do
  two(20_000, own)
  if report
    report = false
    puts "times #{own.map { |t| (t * 1e9).round }.join(" ")}"
  end
  next if ready || Process.clock_gettime(Process::CLOCK_MONOTONIC) < warm_until

  ready = true
  puts "ready"
end
