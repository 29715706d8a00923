# live.rb: a planted leak beside churn and a bounded cache: `heap live` must name the leak's line and no other.
# usage: ruby live.rb (with or without the agent)
$stdout.sync = true
Thread.new { sleep } # (a parked thread, for --inject)
LEAK = []
CACHE = {}

def churn(i)
  s = "tmp #{i}"   # garbage at once
  [s, s.size]
end

def cache(i)
  CACHE[i % 5000] = "cached #{i}" # bounded: replaces its own
end

def leak(i)
  LEAK << "leaked #{i}" # the planted leak: kept for ever
end

puts "ready #{Process.pid}"
i = 0
loop do
  churn(i)
  cache(i)
  leak(i) if (i % 20).zero?
  i += 1
  sleep 0.001 if (i % 2000).zero? # (an app's pace, not a hot loop)
end
