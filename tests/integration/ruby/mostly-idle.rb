# mostly-idle.rb: a server's shape: six threads waiting for work, two working (in work_a and work_b), for
# tests/integration/formats.d/html.sh.
$stdout.sync = true
def work_a(n) = (1..n).reduce(0) { |s, i| s + i % 7 }
def work_b(n) = (1..n).map(&:to_s).size
6.times { |i| Thread.new { Thread.current.name = "idle-#{i}"; sleep } }
Thread.new { Thread.current.name = "a"; loop { work_a(10_000) } }
Thread.new { Thread.current.name = "b"; loop { work_b(10_000) } }
puts "ready"
sleep
