# parked.rb: a thread that parks in turn in two places at the same depth, 100 ms in each, and one that
# never moves. A sampler that takes an unmoved stack from the sample before must still see each move.
$stdout.sync = true
def wait_a(q)
  q.pop
end

def wait_b(q)
  q.pop
end

q = Queue.new
mover = Thread.new { loop { wait_a(q); wait_b(q) } }
mover.name = "mover"
still = Thread.new { Queue.new.pop }
still.name = "still"
puts "ready"
loop do
  sleep 0.1
  q << 1
end
