# usdt-disable.rb: a provider disabled and enabled again while `rbscope latency` was attached, then fired (usdt.sh).
$stdout.sync = true
prov = Rbscope::Provider.new("dis")
req = prov.probe(:req, Integer)
prov.enable
puts "ready #{Process.pid}"
sleep 0.05 until req.enabled?
prov.disable
puts "disabled"
sleep 0.05 while File.exist?(ARGV[0]) # until the test says its latency client has ended
prov.enable
2000.times { |i| req.fire(i) } # the ended client's histogram must not be written to
puts "alive #{req.enabled?}"
