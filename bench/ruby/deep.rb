# deep.rb: a thread parked 50 frames deep (for per-sample cost), or busy there with "busy".
$stdout.sync = true
def down(n, busy)
  return (busy ? loop { 1 + 1 } : sleep) if n <= 0
  down(n - 1, busy)
end
puts "ready"
down(47, ARGV[0] == "busy")
