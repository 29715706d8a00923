# gvl.rb: threads in every state the Spy tells apart. Two threads compete for the GVL ("cpu-a", "cpu-b"), one
# sleeps for good ("sleeper"), one waits on a queue ("queue"), one is blocked reading a pipe ("reader"); the
# main thread joins them. Prints "ready" once every thread is in place. Runs on Ruby 2.6 and later.
$stdout.sync = true

def burn(n)
  x = 0
  n.times { |i| x += i * i }
  x
end

r, _w = IO.pipe
q = Queue.new
threads = []
threads << Thread.new { Thread.current.name = "cpu-a"; loop { burn(10_000) } }
threads << Thread.new { Thread.current.name = "cpu-b"; loop { burn(10_000) } }
threads << Thread.new { Thread.current.name = "sleeper"; sleep }
threads << Thread.new { Thread.current.name = "queue"; q.pop }
threads << Thread.new { Thread.current.name = "reader"; r.read }
sleep 0.1 until threads.all? { |t| t.name } && threads[2..-1].all? { |t| t.status == "sleep" }
puts "ready"
threads.each(&:join)
