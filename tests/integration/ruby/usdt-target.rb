# usdt-target.rb: a process with USDT probes declared through the rbscope gem, for tests/integration/usdt.sh.
# usage: ruby -rrbscope usdt-target.rb [fork|leak]
# Prints "check NAME ok|FAIL ..." lines, then "ready PID OBJECT-PATH", then a "stats" line every 0.2 s.
$stdout.sync = true
mode = ARGV[0]

def check(name)
  res = yield
  puts "check #{name} #{res ? 'ok' : 'FAIL'}"
rescue StandardError => e
  puts "check #{name} FAIL #{e.class}: #{e.message}"
end

def raises(klass)
  yield
  false
rescue klass
  true
end

prov = Rbscope::Provider.new("rbtest")
req = prov.probe(:req, Integer, String)
flags = prov.probe(:flags, :bool, Symbol, Float)
tick = prov.probe(:tick)

check("bad provider names raise") { %w[my-app 1x].push("", "a" * 200).all? { |n| raises(ArgumentError) { Rbscope::Provider.new(n) } } }
check("bad probe names raise") { ["a b", "x.y", "9"].all? { |n| raises(ArgumentError) { prov.probe(n) } } }
check("unsupported type raises") { raises(ArgumentError) { prov.probe(:bad, Array) } }
check("seven arguments raise") { raises(ArgumentError) { prov.probe(:many, *[Integer] * 7) } }
check("a probe declared twice raises") { raises(ArgumentError) { prov.probe(:req, Integer) } }
check("disabled before enable") { !req.enabled? && req.fire(1, "x") == false }
check("a wrong count raises even while disabled") { raises(ArgumentError) { req.fire(1) } && req.fire { [1, "x"] } == false }
prov.enable
check("second enable is idempotent") do
  path = prov.path
  prov.enable == true && prov.path == path && prov.enabled?
end
check("enabled? false with nobody attached") { !req.enabled? && !tick.enabled? }
blocks = 0
check("the block form allocates nothing and is not called while disabled") do
  GC.disable
  before = GC.stat(:total_allocated_objects)
  100_000.times { flags.fire { blocks += 1; [true, :s, 1.0] } }
  after = GC.stat(:total_allocated_objects)
  GC.enable
  puts "alloc_disabled #{after - before}"
  after - before < 10 && blocks == 0
end

class Worker
  def work(n)
    sleep(n.even? ? 0.001 : 0.004)
    n
  end
end
lat = Rbscope.trace_latency(Worker, :work, provider: "rbtest_lat")
Rbscope.trace_stack(Worker, :work, provider: "rbtest_stack", depth: 4)
check("trace_latency keeps the method's result") { Worker.new.work(3) == 3 }

if mode == "fork"
  child = fork do
    n = 0
    loop do
      n += 1
      req.fire(n, "child") if req.enabled?
      sleep 0.01
    end
  end
  puts "child #{child}"
end

puts "ready #{Process.pid} #{prov.path}"
Signal.trap("USR2") { prov.disable }
checked = false
fired = 0
n = 0
w = Worker.new
t0 = Process.clock_gettime(Process::CLOCK_MONOTONIC)
loop do
  n += 1
  if req.enabled?
    req.fire(n, "GET /#{n % 3}")
    fired += 1
    unless checked
      checked = true
      check("fire with a wrong type raises") { raises(ArgumentError) { req.fire("x", "y") } }
      check("fire with a wrong count raises") { raises(ArgumentError) { req.fire(1) } }
      check("a block returning a wrong type raises") { raises(ArgumentError) { req.fire { [1, 2] } } }
    end
  end
  flags.fire { [n.even?, :sym, 2.5] }
  tick.fire
  if mode == "leak" && req.enabled?
    # Many fires while enabled, with the process's RSS before and after: no memory per fire.
    rss = -> { File.read("/proc/self/status")[/VmRSS:\s+(\d+)/, 1].to_i }
    200_000.times { |i| req.fire(i, "warm") }
    GC.start
    a = rss.call
    2_000_000.times { |i| req.fire(i, "leak") }
    GC.start
    puts "leak_kb #{rss.call - a}"
    mode = nil
  end
  w.work(n) if n % 2 == 0 || lat.first.enabled?
  sleep 0.005
  t = Process.clock_gettime(Process::CLOCK_MONOTONIC)
  if t - t0 > 0.2
    puts "stats #{format('%.2f', t)} enabled #{req.enabled?} fired #{fired} blocks #{blocks} provider #{prov.enabled?}"
    t0 = t
  end
end
