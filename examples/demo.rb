# demo.rb: a small program with a known shape for `make demo` to profile.
# About 60% of its time is in Report#render (string building) and 40% in Stats#crunch (arithmetic).
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

stats = Stats.new
report = Report.new
deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + (ARGV[0] || 5).to_f
while Process.clock_gettime(Process::CLOCK_MONOTONIC) < deadline
  report.render(3_000)
  stats.crunch(20_000)
end
