# mn.rb: four Ruby threads of distinct work, run as M:N threads under RUBY_MN_THREADS=1 (3.3+): two busy in
# methods of their own (spin_a, spin_b), one sleeping (nap), one in Queue#pop (wait). The main thread joins them.
$stdout.sync = true

def spin_a
  loop do
    x = 0
    x += 1 while x < 100_000
  end
end

def spin_b
  loop do
    y = 0
    y -= 1 while y > -100_000
  end
end

def nap
  loop { sleep 0.5 }
end

def wait(q)
  q.pop
end

q = Queue.new
threads = [
  Thread.new { Thread.current.name = "a"; spin_a },
  Thread.new { Thread.current.name = "b"; spin_b },
  Thread.new { Thread.current.name = "nap"; nap },
  Thread.new { Thread.current.name = "wait"; wait(q) }
]
sleep 0.05 until threads[2].status == "sleep" && threads[3].status == "sleep"
puts "ready"
threads.each(&:join)
