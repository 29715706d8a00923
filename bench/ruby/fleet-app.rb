# fleet-app.rb: one process of a fleet as an always-on profiler meets it: a worker thread handling a small
# request every 50 ms (about 1 ms of Ruby work each), threads parked in sleep, IO#read and Queue#pop, the main
# thread joining them. `bench/run serve` starts twenty.
$stdout.sync = true
def handle(n)
  s = 0
  n.times { |i| s += i * i % 7 }
  s
end
r, _w = IO.pipe
q = Queue.new
threads = [Thread.new { sleep }, Thread.new { r.read }, Thread.new { q.pop }]
threads << Thread.new { loop { handle(20_000); sleep 0.05 } }
puts "ready"
threads.each(&:join)
