# formats.rb: the program the output-format tests record. Two named threads with known shares:
# "render" spends its time in Report#render (string building), "crunch" in Stats#crunch (arithmetic).
$stdout.sync = true

class Stats
  def crunch(n)
    (1..n).reduce(0) { |acc, i| acc + (i * i) % 7 }
  end
end

class Report
  def render(rows)
    rows.times.map { |i| "row #{i}: #{'x' * (i % 40)}" }.join("\n").size
  end
end

render = Thread.new do
  Thread.current.name = "render"
  loop { Report.new.render(2_000) }
end
crunch = Thread.new do
  Thread.current.name = "crunch"
  loop { Stats.new.crunch(10_000) }
end
sleep 0.2
puts "ready"
[render, crunch].each(&:join)
