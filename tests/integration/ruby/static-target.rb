# static-target.rb: what the static binary is checked on (tests/integration/static.sh), in every Ruby's own world:
# main spins in static_spin, a thread named "parked" waits on a queue (a thread --inject can borrow), another ticks
# (Ruby code runs at every tick, so the agent loads on 3.3+ while main is busy).
def static_spin(n)
  s = 0
  n.times { |i| s += i * i }
  s
end
q = Queue.new
Thread.new { q.pop }.name = "parked" # (named from main: a thread not yet run has its name too)
Thread.new { loop { sleep 0.05 } }.name = "ticker"
$stdout.puts "ready"
$stdout.flush
loop { static_spin(20_000) }
