# probecost.rb: what a USDT probe costs the program: disabled (against an empty method call), and per fire while a tracer listens.
# usage: ruby -rrbscope probecost.rb off        -> "result NAME NS_PER_ITERATION" lines and "alloc N"
#        ruby -rrbscope probecost.rb listened   -> prints "ready PID", waits until the probe is enabled, then "result fire NS"
$stdout.sync = true
prov = Rbscope::Provider.new("bench")
probe = prov.probe(:req, Integer, String)
prov.enable

def empty_method; end

def ns
  Process.clock_gettime(Process::CLOCK_MONOTONIC, :nanosecond)
end

# The fastest of seven runs of n iterations, in ns per iteration.
def best(n)
  Array.new(7) do
    t0 = ns
    yield n
    (ns - t0).fdiv(n)
  end.min
end

if ARGV[0] == "listened"
  puts "ready #{Process.pid}"
  sleep 0.01 until probe.enabled?
  sleep 0.5
  r = best(200_000) do |n|
    i = 0
    while i < n
      probe.fire(i, "GET /") if probe.enabled?
      i += 1
    end
  end
  puts "result fire #{r.round(1)}"
  exit
end

n = 5_000_000
bare = best(n) { |k| i = 0; i += 1 while i < k }
empty = best(n) do |k|
  i = 0
  while i < k
    empty_method
    i += 1
  end
end
guarded = best(n) do |k|
  i = 0
  while i < k
    probe.fire(i, "GET /") if probe.enabled?
    i += 1
  end
end
block = best(n) do |k|
  i = 0
  while i < k
    probe.fire { [i, "GET /"] }
    i += 1
  end
end
# Objects allocated by 100,000 disabled fires of the block form (the call site warmed up first).
fires = ->(k) { k.times { probe.fire { [1, "GET /"] } } }
fires.call(1000)
GC.disable
a = GC.stat(:total_allocated_objects)
b = GC.stat(:total_allocated_objects) # GC.stat itself allocates: subtracted below
fires.call(100_000)
alloc = GC.stat(:total_allocated_objects) - b - (b - a)
puts "result bare #{bare.round(2)}"
puts "result empty #{empty.round(2)}"
puts "result guarded #{guarded.round(2)}"
puts "result block #{block.round(2)}"
puts "alloc #{alloc}"
