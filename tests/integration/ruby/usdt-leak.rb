# usdt-leak.rb: fires USDT probes N times once a tracer listens, then exits; run under valgrind by tests/integration/usdt.sh.
$stdout.sync = true
prov = Rbscope::Provider.new("leak")
req = prov.probe(:req, Integer, String)
mix = prov.probe(:mix, Symbol, Float, :bool)
prov.enable
puts "ready #{Process.pid}"
t0 = Time.now
sleep 0.05 until req.enabled? || Time.now - t0 > 60
n = Integer(ARGV[0])
n.times do |i|
  req.fire(i, "GET /")
  mix.fire { [:sym, 1.5, i.odd?] }
end
puts "fired #{n} enabled #{req.enabled?}"
