# inject-target.rb MODE: a process for `--inject` to load the agent into (tests/integration/agent.sh). MODE busy: the
# main thread counts in a CPU loop; alloc: it allocates strings and arrays (the GC runs all the time); idle: it sleeps. Either way threads park in every wait Ruby has (sleep, IO#read on
# a pipe, Queue#pop, Mutex#lock, ConditionVariable#wait with a timeout, IO.select); SIGUSR1, SIGURG (which
# rbtrace uses) and SIGPROF (stackprof's) are trapped and counted.
# "feed" on stdin wakes them all; the process then prints what each got, how long the timed waits took, the loop's
# checksum against its closed form, the signal counts and any Errno::EINTR, and exits.
$stdout.sync = true
mode = ARGV[0] || "busy"
results = Queue.new
errors = Queue.new
usr1 = 0
urg = 0
prof = 0
trap("USR1") { usr1 += 1 }
trap("URG") { urg += 1 }
trap("PROF") { prof += 1 }
r, w = IO.pipe
sr, sw = IO.pipe
q = Queue.new
held = Mutex.new
cv_lock = Mutex.new
cv = ConditionVariable.new
fed = false
guard = ->(name, &blk) { Thread.new { Thread.current.name = name; blk.call rescue errors << "#{name}: #{$!.class}" } }
held.lock
threads = [
  guard.call("sleeper") { t0 = Time.now; sleep 4; results << "sleep #{(Time.now - t0).round(1)}" },
  guard.call("reader") { results << "read #{r.read(5)}" },
  guard.call("queue") { results << "pop #{q.pop}" },
  guard.call("locker") { held.lock; results << "lock ok"; held.unlock },
  guard.call("cv") { cv_lock.synchronize { t0 = Time.now; cv.wait(cv_lock, 3); results << "cv #{(Time.now - t0).round(1)}" } },
  guard.call("select") { rs, = IO.select([sr]); results << "select #{rs.first.read(2)}" },
]
control = Thread.new do
  Thread.current.name = "control"
  $stdin.gets
  w.write("hello")
  sw.write("ok")
  q << "item"
  fed = true
end
sleep 0.3
puts "ready #{Process.pid}"
count = 0
sum = 0
if mode == "busy"
  until fed
    sum = (sum + count * count) & 0xffffffff
    count += 1
  end
elsif mode == "alloc"
  kept = []
  until fed
    kept << Array.new(50) { |k| "item #{k} #{count}" }
    kept.shift if kept.size > 2000
    count += 1
  end
  count = 0 # no checksum for this one
else
  sleep 0.05 until fed
end
held.unlock
threads.each(&:join)
control.join
expect = ((count - 1) * count * (2 * count - 1) / 6) & 0xffffffff
puts "results #{Array.new(results.size) { results.pop }.sort.join(', ')}"
puts "checksum #{count > 0 && sum == expect ? 'ok' : (mode == 'busy' ? 'bad' : 'none')} (#{count} iterations)"
puts "usr1 #{usr1}"
puts "urg #{urg}"
puts "prof #{prof}"
puts "errors #{errors.empty? ? 'none' : Array.new(errors.size) { errors.pop }.join(', ')}"
