# mostly-idle.rb: a server's shape: six threads waiting for work, two working (in work_a and work_b), for
# tests/integration/formats.d/html.sh. "ready" once the six and the main thread are asleep: on a busy machine a
# thread can take a while to get from Thread.new into its sleep (the two working threads hold the GVL in turn),
# and a thread on its way into Kernel#sleep is running, not waiting.
$stdout.sync = true
def work_a(n) = (1..n).reduce(0) { |s, i| s + i % 7 }
def work_b(n) = (1..n).map(&:to_s).size
idle = Array.new(6) { |i| Thread.new { Thread.current.name = "idle-#{i}"; sleep } }
main = Thread.current
Thread.new do
  sleep 0.01 until idle.all? { |t| t.status == "sleep" } && main.status == "sleep"
  Thread.new { Thread.current.name = "a"; loop { work_a(10_000) } }
  Thread.new { Thread.current.name = "b"; loop { work_b(10_000) } }
  sleep 0.2 # (the two at work)
  puts "ready"
end
sleep
