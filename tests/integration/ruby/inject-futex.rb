# inject-futex.rb: for --inject, a process whose only parked threads sleep on locks (futex), none on I/O: the main
# thread counts for 20 s. On Ruby 3.3 and later (a native timer thread, no Ruby thread polling for signals) the
# borrowed thread is a sleeping one, and a helper thread flags the job for the running thread.
$stdout.sync = true
q = Queue.new
m = Mutex.new
m.lock
threads = [Thread.new { sleep 30 }, Thread.new { q.pop }, Thread.new { m.lock }]
sleep 0.2
puts "ready"
t0 = Time.now
i = 0
i += 1 while Time.now - t0 < 20
q << 1
m.unlock
threads[1..].each(&:join)
puts "done #{i}"
