# inject-sleeper.rb: for --inject, a daemon whose threads only ever sleep with a timeout (a job loop polling every
# 0.2 s, a worker every 0.5 s): nothing parked on I/O, a lock or a queue. On SIGUSR1 (trapped) it prints how many
# sleeps it made and how many came back early (an injection must not cut one short).
$stdout.sync = true
counts = Hash.new(0)
poll = lambda do |name, secs|
  loop do
    t0 = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    sleep secs
    counts[:early] += 1 if Process.clock_gettime(Process::CLOCK_MONOTONIC) - t0 < secs * 0.95
    counts[name] += 1
  end
end
Thread.new { poll.(:worker, 0.5) }
trap("USR1") { puts "sleeps #{counts[:main] + counts[:worker]}, early #{counts[:early]}" }
puts "ready"
poll.(:main, 0.2)
