# sleepers.rb: a master and two forked workers, each with four threads parked in sleep, IO#read, Queue#pop and a
# Mutex, and a main thread waking every millisecond: many threads to sample, little CPU (the --raw memory figure).
$stdout.sync = true
def park
  r, _w = IO.pipe
  q = Queue.new
  m = Mutex.new
  m.lock
  [Thread.new { sleep }, Thread.new { r.read }, Thread.new { q.pop }, Thread.new { m.synchronize {} }]
end
pids = Array.new(2) { fork { $0 = "sleepers.rb worker"; park; loop { sleep 0.001 } } }
at_exit { pids.each { |pid| Process.kill(:TERM, pid) rescue nil } }
park
puts "ready"
loop { sleep 0.001 }
