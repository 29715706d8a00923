# ractors.rb: three Ractors busy in methods of their own (work_a, work_b, work_c; one named "calc"), while the main
# Ractor's main thread waits for them in Ractor#take.
$stdout.sync = true
Warning[:experimental] = false if Warning.respond_to?(:[]=)

def work_a(n)
  x = 0
  n.times { x += 1 }
  x
end

def work_b(n)
  x = 0
  n.times { x -= 1 }
  x
end

def work_c(n)
  x = 0
  n.times { x ^= 1 }
  x
end

ractors = [
  Ractor.new(name: "calc") { loop { work_a(100_000) } },
  Ractor.new { loop { work_b(100_000) } },
  Ractor.new { loop { work_c(100_000) } }
]
puts "ready"
ractors.first.take
