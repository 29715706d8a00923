# bigparse.rb: allocations made inside one long C call (JSON.parse of a 300,000-element document, millions of
# objects with no chance for Ruby to run anything else meanwhile), again and again.
require "json"
$stdout.sync = true
Thread.new { sleep } # (a parked thread, for --inject)
doc = JSON.generate(Array.new(300_000) { |i| { "id" => i, "name" => "n#{i}", "tags" => %w[a b] } })
puts "ready #{Process.pid}"
loop do
  JSON.parse(doc)
  sleep 0.05
end
