# dropped.rb: three threads asleep and one busy in Ruby, for a sampler that cannot keep up (tests/integration/states.sh):
# in a wall profile every thread has a sample for every tick, taken or missed.
$stdout.sync = true
3.times { |i| Thread.new { Thread.current.name = "idle-#{i}"; sleep } }
Thread.new { Thread.current.name = "busy"; x = 0; loop { x += 1 } }
puts "ready"
sleep
