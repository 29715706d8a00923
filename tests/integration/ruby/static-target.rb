# static-target.rb: what the static binary is checked on (tests/integration/static.sh), in every Ruby's own world:
# main spins in static_spin, a thread named "parked" waits on a queue (a thread --inject can borrow), another ticks
# (Ruby code runs at every tick, so the agent loads on 3.3+ while main is busy).
def static_spin(n)
  s = 0
  n.times { |i| s += i * i }
  s
end
q = Queue.new
Thread.new { Thread.current.name = "parked"; q.pop }
Thread.new { Thread.current.name = "ticker"; loop { sleep 0.05 } }
$stdout.puts "ready"
$stdout.flush
loop { static_spin(20_000) }
